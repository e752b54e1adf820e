//go:build !amd64 || purego

package cpu

// vecWhereF32 sets d[i] = a[i] where c[i] != 0, else b[i].
func vecWhereF32(d, c, a, b []float32) { whereF32Go(d, c, a[:len(d)], b[:len(d)]) }

func whereAsm(d []uint32, c []byte, a, b []uint32, mode int) int { return 0 }
