package dist

import (
	"fmt"
	"unsafe"

	"github.com/gotpu/gotpu/dtype"
)

// ReduceOp is the reduction of AllReduce and ReduceScatter
// (torch.distributed.ReduceOp).
type ReduceOp int

// The reductions. Avg is for floating-point tensors only.
const (
	Sum ReduceOp = iota
	Avg
	Max
	Min
	Prod
)

func (o ReduceOp) String() string {
	switch o {
	case Sum:
		return "sum"
	case Avg:
		return "avg"
	case Max:
		return "max"
	case Min:
		return "min"
	case Prod:
		return "prod"
	}
	return fmt.Sprintf("ReduceOp(%d)", int(o))
}

// ParseReduceOp parses "sum", "avg", "max", "min" or "prod".
func ParseReduceOp(s string) (ReduceOp, error) {
	for o := Sum; o <= Prod; o++ {
		if o.String() == s {
			return o, nil
		}
	}
	return 0, fmt.Errorf("dist: unknown reduce op %q (sum, avg, max, min, prod)", s)
}

// checkReduce reports whether op can reduce dtype dt.
func checkReduce(op ReduceOp, dt dtype.DType) error {
	if op < Sum || op > Prod {
		return fmt.Errorf("dist: unknown reduce op %d", int(op))
	}
	if dt == dtype.Bool && op != Max && op != Min {
		return fmt.Errorf("dist: reduce op %s is not defined for bool tensors (max = any, min = all)", op)
	}
	if op == Avg && !dt.IsFloat() {
		return fmt.Errorf("dist: reduce op avg needs a floating-point tensor, not %s", dt)
	}
	if !dt.Valid() {
		return fmt.Errorf("dist: unsupported dtype %s", dt)
	}
	return nil
}

type number interface {
	~uint8 | ~int8 | ~int16 | ~int32 | ~int64 | ~float32 | ~float64
}

func asSlice[T any](b []byte) []T {
	var z T
	n := len(b) / int(unsafe.Sizeof(z))
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

// reduceBytes writes into dst the reduction, in the order of srcs, of the
// elements of srcs (dst may be one of them). Every rank reduces in rank
// order, so all ranks get the same bits. nranks divides for Avg.
func reduceBytes(dst []byte, srcs [][]byte, dt dtype.DType, op ReduceOp, nranks int) {
	switch dt {
	case dtype.F32:
		reduceT(asSlice[float32](dst), typed[float32](srcs), op, nranks)
	case dtype.F64:
		reduceT(asSlice[float64](dst), typed[float64](srcs), op, nranks)
	case dtype.I64:
		reduceT(asSlice[int64](dst), typed[int64](srcs), op, nranks)
	case dtype.I32:
		reduceT(asSlice[int32](dst), typed[int32](srcs), op, nranks)
	case dtype.I16:
		reduceT(asSlice[int16](dst), typed[int16](srcs), op, nranks)
	case dtype.I8:
		reduceT(asSlice[int8](dst), typed[int8](srcs), op, nranks)
	case dtype.U8, dtype.Bool:
		reduceT(asSlice[uint8](dst), typed[uint8](srcs), op, nranks)
	case dtype.BF16:
		reduceHalf(asSlice[uint16](dst), typed[uint16](srcs), op, nranks,
			func(h uint16) float32 { return dtype.BFloat16(h).F32() },
			func(f float32) uint16 { return uint16(dtype.BF16FromF32(f)) })
	case dtype.F16:
		reduceHalf(asSlice[uint16](dst), typed[uint16](srcs), op, nranks,
			func(h uint16) float32 { return dtype.Float16(h).F32() },
			func(f float32) uint16 { return uint16(dtype.F16FromF32(f)) })
	}
}

func typed[T any](srcs [][]byte) [][]T {
	out := make([][]T, len(srcs))
	for i, s := range srcs {
		out[i] = asSlice[T](s)
	}
	return out
}

func combine[T number](a, b T, op ReduceOp) T {
	switch op {
	case Max:
		if b > a || b != b {
			return b
		}
		return a
	case Min:
		if b < a || b != b {
			return b
		}
		return a
	case Prod:
		return a * b
	}
	return a + b
}

func reduceT[T number](dst []T, srcs [][]T, op ReduceOp, nranks int) {
	n := len(dst)
	if n == 0 {
		return
	}
	switch {
	case len(srcs) == 1:
		if &srcs[0][0] != &dst[0] {
			copy(dst, srcs[0][:n])
		}
		if op == Avg {
			d := T(nranks)
			for i := range dst {
				dst[i] /= d
			}
		}
		return
	case len(srcs) == 2 && op == Sum:
		a, b := srcs[0][:n], srcs[1][:n]
		for i := range dst {
			dst[i] = a[i] + b[i]
		}
		return
	case len(srcs) == 2 && op == Avg:
		a, b, d := srcs[0][:n], srcs[1][:n], T(nranks)
		for i := range dst {
			dst[i] = (a[i] + b[i]) / d
		}
		return
	}
	// In rank order, one source at a time: dst = s0 op s1, then op s2, ...
	// (dst may alias a source of a later rank only as that rank's own
	// slot, which is read at the same index before being written).
	if op == Sum || op == Avg {
		a, b := srcs[0][:n], srcs[1][:n]
		tmp := make([]T, n)
		for i := range tmp {
			tmp[i] = a[i] + b[i]
		}
		for _, s := range srcs[2:] {
			s = s[:n]
			for i := range tmp {
				tmp[i] += s[i]
			}
		}
		if op == Avg {
			d := T(nranks)
			for i := range tmp {
				tmp[i] /= d
			}
		}
		copy(dst, tmp)
		return
	}
	for i := range n {
		acc := srcs[0][i]
		for _, s := range srcs[1:] {
			acc = combine(acc, s[i], op)
		}
		dst[i] = acc
	}
}

// reduceHalf reduces 16-bit floats in float32 and rounds once.
func reduceHalf(dst []uint16, srcs [][]uint16, op ReduceOp, nranks int, to func(uint16) float32, from func(float32) uint16) {
	for i := range dst {
		acc := to(srcs[0][i])
		for _, s := range srcs[1:] {
			acc = combine(acc, to(s[i]), op)
		}
		if op == Avg {
			acc /= float32(nranks)
		}
		dst[i] = from(acc)
	}
}
