package cpu

// whereF32Go is the element loop of vecWhereF32.
func whereF32Go(d, c, a, b []float32) {
	c, a, b = c[:len(d)], a[:len(d)], b[:len(d)]
	for i := range d {
		if c[i] != 0 {
			d[i] = a[i]
		} else {
			d[i] = b[i]
		}
	}
}
