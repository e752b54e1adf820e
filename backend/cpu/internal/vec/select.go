package vec

// Comparisons into bools and selects, without a call or a branch per
// element: the generic elementwise loops call a float64 comparison through
// two closures for every element (~4 ns), and a ReLU backward's mask is a
// coin toss for the branch predictor, so both cost more than the matrix
// product next to them.

// Cmp is a comparison kind.
type Cmp uint8

// The comparison kinds, Go's float32 operators (NaN compares unequal to
// everything, itself included).
const (
	CmpEq Cmp = iota // ==
	CmpNe            // !=
	CmpLt            // <
	CmpLe            // <=
	CmpGt            // >
	CmpGe            // >=
)

// Of returns a c b.
func (c Cmp) Of(a, b float32) bool {
	switch c {
	case CmpEq:
		return a == b
	case CmpNe:
		return a != b
	case CmpLt:
		return a < b
	case CmpLe:
		return a <= b
	case CmpGt:
		return a > b
	}
	return a >= b
}

// Swapped returns the kind c' with b c' a == a c b.
func (c Cmp) Swapped() Cmp {
	switch c {
	case CmpLt:
		return CmpGt
	case CmpLe:
		return CmpGe
	case CmpGt:
		return CmpLt
	case CmpGe:
		return CmpLe
	}
	return c
}

// Compare sets d[i] = x[i] c y[i] (bools of 0 or 1).
func (k *Kernels) Compare(c Cmp, d []bool, x, y []float32) {
	x, y = x[:len(d)], y[:len(d)]
	i := k.cmpAsm(c, d, x, y, false)
	d, x, y = d[i:], x[i:], y[i:]
	switch c {
	case CmpEq:
		for i := range d {
			d[i] = x[i] == y[i]
		}
	case CmpNe:
		for i := range d {
			d[i] = x[i] != y[i]
		}
	case CmpLt:
		for i := range d {
			d[i] = x[i] < y[i]
		}
	case CmpLe:
		for i := range d {
			d[i] = x[i] <= y[i]
		}
	case CmpGt:
		for i := range d {
			d[i] = x[i] > y[i]
		}
	default:
		for i := range d {
			d[i] = x[i] >= y[i]
		}
	}
}

// CompareScalar sets d[i] = x[i] c s (Swapped for s c x[i]).
func (k *Kernels) CompareScalar(c Cmp, d []bool, x []float32, s float32) {
	x = x[:len(d)]
	sv := [1]float32{s}
	i := k.cmpAsm(c, d, x, sv[:], true)
	d, x = d[i:], x[i:]
	switch c {
	case CmpEq:
		for i := range d {
			d[i] = x[i] == s
		}
	case CmpNe:
		for i := range d {
			d[i] = x[i] != s
		}
	case CmpLt:
		for i := range d {
			d[i] = x[i] < s
		}
	case CmpLe:
		for i := range d {
			d[i] = x[i] <= s
		}
	case CmpGt:
		for i := range d {
			d[i] = x[i] > s
		}
	default:
		for i := range d {
			d[i] = x[i] >= s
		}
	}
}

// Select32 sets d[i] = cond[i] ? x[i] : y[i] for 4-byte values (cond
// holds bools: true where its byte is not zero); mode 1: y[0] for every
// i, mode 2: x[0]. The values are moved as bits (NaN payloads kept).
func (k *Kernels) Select32(d []uint32, cond []byte, x, y []uint32, mode int) {
	i := k.selectAsm(d, cond, x, y, mode)
	for ; i < len(d); i++ {
		xv, yv := x[0], y[0]
		if mode != 2 {
			xv = x[i]
		}
		if mode != 1 {
			yv = y[i]
		}
		d[i] = SelectBits(cond[i], xv, yv)
	}
}

// SelectBits returns x where the bool byte c is not zero, else y, without
// a branch.
func SelectBits(c byte, x, y uint32) uint32 {
	m := uint32(c)
	m = -((m | -m) >> 31)
	return y ^ ((x ^ y) & m)
}

// Where sets d[i] = a[i] where c[i] != 0, else b[i], for a float32
// condition (NaN selects a, -0 selects b, as Go's comparison does),
// without a branch per element at the assembly levels.
func (k *Kernels) Where(d, c, a, b []float32) {
	n := len(d)
	c, a, b = c[:n], a[:n], b[:n]
	i := k.whereAsm(d, c, a, b)
	for ; i < n; i++ {
		if c[i] != 0 {
			d[i] = a[i]
		} else {
			d[i] = b[i]
		}
	}
}
