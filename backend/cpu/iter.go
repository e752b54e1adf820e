package cpu

import (
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/gotpu/gotpu/backend/cpu/internal/pool"
)

// as reinterprets host bytes as a slice of T.
func as[T any](b []byte) []T {
	var z T
	sz := int(unsafe.Sizeof(z))
	if len(b) < sz {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/sz)
}

// ParallelThreshold is the element count above which kernels split work
// across goroutines.
var ParallelThreshold = 1 << 15

// parallelFor runs fn over [0, n) split into contiguous chunks, in parallel
// when cost (roughly elements touched) is large enough. The chunks are
// ceil(n/GOMAXPROCS) long whoever runs them (a kernel's results never
// depend on which thread ran a chunk), and the threads are the caller and
// the GEMM pool's helpers, which take chunks from a shared counter: no
// goroutine is started per call, and a helper the OS has not run yet is
// not waited for (pool.RunShare). When the pool is busy (a nested or a
// concurrent call) the caller runs every chunk itself.
func parallelFor(n, cost int, fn func(lo, hi int)) {
	workers := runtime.GOMAXPROCS(0)
	if cost < ParallelThreshold || workers <= 1 || n < 2 {
		fn(0, n)
		return
	}
	workers = min(workers, n)
	chunk := (n + workers - 1) / workers
	chunks := (n + chunk - 1) / chunk
	var next atomic.Int64
	pool.RunShare(workers, func(_, _ int) {
		for {
			c := int(next.Add(1)) - 1
			if c >= chunks {
				return
			}
			lo := c * chunk
			fn(lo, min(lo+chunk, n))
		}
	})
}

// nd describes a strided iteration over shape for several operands.
type nd struct {
	shape   []int
	strides [][]int // per operand
	offs    []int   // per operand base offsets
}

// coalesce merges adjacent dimensions that are contiguous for every operand
// and drops size-1 dimensions.
func coalesce(shape []int, strides [][]int) ([]int, [][]int) {
	ns := make([]int, 0, len(shape))
	nst := make([][]int, len(strides))
	for i := range shape {
		if shape[i] == 1 {
			continue
		}
		if len(ns) > 0 {
			last := len(ns) - 1
			ok := true
			for k := range strides {
				if nst[k][last] != strides[k][i]*shape[i] {
					ok = false
					break
				}
			}
			if ok {
				ns[last] *= shape[i]
				for k := range strides {
					nst[k][last] = strides[k][i]
				}
				continue
			}
		}
		ns = append(ns, shape[i])
		for k := range strides {
			nst[k] = append(nst[k], strides[k][i])
		}
	}
	if len(ns) == 0 {
		ns = []int{1}
		for k := range strides {
			nst[k] = []int{0}
		}
	}
	return ns, nst
}

// forEachRun calls fn for every run along the innermost dimension of the
// iteration, passing each operand's offset of the run's first element, the
// run length and the operands' inner strides. Runs are distributed over
// goroutines for large iterations, and a single run is split into pieces
// (each passed as a run); fn must be safe to call concurrently on disjoint
// outputs and may not assume a run spans the whole innermost dimension.
func forEachRun(shape []int, strides [][]int, offs []int, fn func(offs []int, n int, inner []int)) {
	total := 1
	for _, d := range shape {
		total *= d
	}
	if total == 0 {
		return
	}
	shape, strides = coalesce(shape, strides)
	r := len(shape)
	inner := make([]int, len(strides))
	for k := range strides {
		inner[k] = strides[k][r-1]
	}
	n := shape[r-1]
	outer := total / n
	if outer == 1 {
		// One run (a tensor that coalesced whole): its pieces go to the
		// threads instead, each as a run of its own from its offsets.
		parallelFor(n, n, func(lo, hi int) {
			cur := make([]int, len(offs))
			for k := range offs {
				cur[k] = offs[k] + lo*inner[k]
			}
			fn(cur, hi-lo, inner)
		})
		return
	}
	parallelFor(outer, total, func(lo, hi int) {
		idx := make([]int, r-1)
		cur := make([]int, len(offs))
		// Unravel lo.
		rem := lo
		for d := r - 2; d >= 0; d-- {
			idx[d] = rem % shape[d]
			rem /= shape[d]
		}
		for k := range offs {
			cur[k] = offs[k]
			for d := 0; d < r-1; d++ {
				cur[k] += idx[d] * strides[k][d]
			}
		}
		for it := lo; it < hi; it++ {
			fn(cur, n, inner)
			// Increment the multi-index.
			for d := r - 2; d >= 0; d-- {
				idx[d]++
				for k := range cur {
					cur[k] += strides[k][d]
				}
				if idx[d] < shape[d] {
					break
				}
				for k := range cur {
					cur[k] -= strides[k][d] * shape[d]
				}
				idx[d] = 0
			}
		}
	})
}
