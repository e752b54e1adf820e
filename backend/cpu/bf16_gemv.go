package cpu

import (
	"math"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/gotpu/gotpu/backend/cpu/internal/pool"
	"github.com/gotpu/gotpu/backend/cpu/internal/vec"
	"github.com/gotpu/gotpu/dtype"
)

// The bf16 matrix-vector path: gemvF32's two forms for bf16 operands with
// f32 accumulation. The vector is widened to float32 once (exact); the
// matrix is read in place, its bf16 values widened in registers, so a
// product moves half the bytes of f32. The axpy form (bf16_amd64.s) runs
// every output as one f32 FMA chain over k in order from zero — the
// arithmetic of the blocked GEMM's bf16 path, whose packing widens to f32
// — so it equals the corresponding row of a batched product bit for bit;
// its Go loop for the last columns uses vec.FMA (internal/vec), an exactly
// rounded float32 FMA (a product of two bf16 values is exact in float32
// unless it overflows or underflows, and there only the FMA gives the
// kernels' bits). The dot form runs the bf16 dot order of gemm_gemv.go
// (internal/gemm/bf16_gemv_amd64.s), its vector deinterleaved to match. The f32 outputs
// go out through the problem's store, which rounds them to bf16 once.
//
// At level avx512bf16 the axpy form runs on VDPBF16PS instead
// (gemm.GemvAxpyBF16DP): rows k and k+1 interleaved into pairs, the vector as
// bf16 pairs (exact: it is a bf16 tensor). The instruction adds the two
// products of a pair as two fused multiply-adds in turn, the pair's first
// k step first (bf16_gemm.go has the measured contract), so every output is
// still the FMA chain over k in order from zero — with the VDPBF16PS GEMM's
// treatment of denormals (inputs read as zero, results flushed: fmaDAZ is
// the exact model), the arithmetic the m > 1 products run at this level.
// It reads half the instructions' worth of the widening kernel per byte,
// which is what a bf16 decode step is bound by there.

// gemvKernelsBF16 are the bf16 matrix-vector axpy kernels of a CPU level
// (the dot form's are gemvDotBF16Z and gemvDotBF16Y).
type gemvKernelsBF16 struct {
	axpy func(k int, x *float32, b *uint16, ldb int, y *float32, n int, load int)
}

// gemvAsmBF16 is set by the amd64 kernels' init; nil elsewhere.
var gemvAsmBF16 *gemvKernelsBF16

// gemvBF16 runs a bf16 matrix-vector problem in store mode on kr,
// reporting whether it did (false for layouts the kernels do not read).
func gemvBF16(g *gemmProblem[dtype.BFloat16, dtype.BFloat16, float32], kr *gemvKernelsBF16) bool {
	l, ok := gemvLayoutOf(g)
	if !ok {
		return false
	}
	mat, vec, rows, rowsAreM, rs, ks, dot := l.mat, l.vec, l.rows, l.rowsAreM, l.rs, l.ks, l.dot
	k := g.k
	store := func(b, r0, n int, y []float32) {
		if rowsAreM {
			g.store(b, r0, 0, n, 1, y[:n])
		} else {
			g.store(b, 0, r0, 1, n, y[:n])
		}
	}
	cost := g.nb * rows * max(k, 1)
	nw := 1
	if cost >= gemvParallelMACs {
		nw = runtime.GOMAXPROCS(0)
	}
	step := 16
	if !dot {
		step = max(64, roundUp(ceilDiv(rows, nw), 64))
	}
	// Scratch (float32 units): the widened vectors, then per thread an
	// output strip and a zero-padded 16-row bf16 block (rows k rounded up
	// to 16 long) for the dot form's last rows. The dot form's vectors are
	// deinterleaved (gemvDeinterleave), kp = k rounded up to 32 long.
	xsz := g.nb * k
	kp, k16 := roundUp(k, 32), roundUp(k, 16)
	if dot {
		xsz = g.nb * kp
	}
	tsz := step + 8*k16 + 16
	buf := getScratch((xsz + nw*tsz) * 4)
	defer putScratch(buf)
	all := as[float32](*buf)
	xs := all[:xsz]
	var nat []float32 // one vector in its own order, for deinterleaving
	if dot && k > 0 {
		nbuf := getScratch(k * 4)
		defer putScratch(nbuf)
		nat = as[float32](*nbuf)[:k]
	}
	for b := 0; b < g.nb; b++ {
		o := vec.batchOff(b) + vec.row[0]
		xb := xs[b*k : (b+1)*k]
		if dot {
			xb = nat
		}
		if vs, ok := uniformStride(vec.k); ok && (vs == 1 || k <= 1) {
			if k > 0 {
				g.ks.vec.Widen(xb, vec.src[o+vec.k[0]:])
			}
		} else {
			for p, ko := range vec.k {
				xb[p] = vec.src[o+ko].F32()
			}
		}
		if dot {
			gemvDeinterleave(xs[b*kp:(b+1)*kp], nat)
		}
	}
	per := ceilDiv(rows, step)
	total := g.nb * per
	chunk := max(1, total/(nw*4))
	if !dot {
		chunk = 1
	}
	// The axpy form on VDPBF16PS takes the vector as bf16 pairs.
	var xps []uint32
	if !dot && k > 0 && gemvAxpyBF16DPZ != nil && g.ks.atLeast(LevelAVX512BF16) {
		half := (k + 1) / 2
		pbuf := getScratch(g.nb * half * 4)
		defer putScratch(pbuf)
		xps = as[uint32](*pbuf)[:g.nb*half]
		for b := 0; b < g.nb; b++ {
			gemvPairsBF16(xps[b*half:(b+1)*half], xs[b*k:(b+1)*k])
		}
	}
	dk, dkAVX2 := gemvDotBF16(g.ks)
	tail := gemvTailMask16(k)
	var next atomic.Int64
	pool.Run(nw, nil, func(tid, _ int) {
		tb := all[xsz+tid*tsz : xsz+(tid+1)*tsz]
		y := tb[:step]
		pad := unsafe.Slice((*dtype.BFloat16)(unsafe.Pointer(&tb[step])), 16*k16)
		for {
			u0 := int(next.Add(int64(chunk))) - chunk
			if u0 >= total {
				return
			}
			for u := u0; u < min(u0+chunk, total); u++ {
				b, r0 := u/per, u%per*step
				n := min(step, rows-r0)
				x := xs[b*k : (b+1)*k]
				if dot {
					x = xs[b*kp : (b+1)*kp]
				}
				base := mat.batchOff(b) + mat.row[0]
				if k > 0 {
					base += mat.k[0]
				}
				src := mat.src
				switch {
				case k == 0:
					clear(y[:n])
				case xps != nil:
					half := (k + 1) / 2
					gemvAxpyBF16DPStrip(xps[b*half:(b+1)*half], k, src[base+r0:], ks, y[:n])
				case !dot:
					gemvAxpyBF16Strip(g.ks, kr, x, src[base+r0:], ks, y[:n])
				default:
					a, lda := src[base+r0*rs:], rs
					if dkAVX2 && k%16 != 0 && base+(r0+n-1)*rs+k16 > len(src) {
						// The AVX2 kernel reads each row to k rounded up to 16:
						// past the end of the matrix here, so read a copy.
						clear(pad)
						for r := 0; r < n; r++ {
							o := base + (r0+r)*rs
							copy(pad[r*k16:r*k16+k], src[o:o+k])
						}
						a, lda = pad, k16
					}
					dk(k, (*uint16)(unsafe.Pointer(&a[0])), lda, &x[0], &y[0], n, tail)
				}
				store(b, r0, n, y)
			}
		}
	})
	gemvHits.Add(1)
	return true
}

// gemvAxpyBF16Strip sets y[j] to the chain over p < len(x) of
// x[p]*b[p*ldb+j]: the multiples of 8 columns on the kernel, gemvKB
// matrix rows at a time, the last len(y)%8 columns in Go.
func gemvAxpyBF16Strip(ks *kset, kr *gemvKernelsBF16, x []float32, b []dtype.BFloat16, ldb int, y []float32) {
	k, n := len(x), len(y)
	n8 := n &^ 7
	axpy := kr.axpy
	if gemvAxpyBF16Z != nil && ks.atLeast(LevelAVX512) {
		axpy = gemvAxpyBF16Z
	}
	if n8 > 0 {
		for kb := 0; kb < k; kb += gemvKB {
			load := 0
			if kb > 0 {
				load = 1
			}
			axpy(min(gemvKB, k-kb), &x[kb], (*uint16)(unsafe.Pointer(&b[kb*ldb])), ldb, &y[0], n8, load)
		}
	}
	for j := n8; j < n; j++ {
		var acc float32
		for p, xv := range x {
			acc = vec.FMA(xv, b[p*ldb+j].F32(), acc)
		}
		y[j] = acc
	}
}

// gemvPairsBF16 sets xp[q] to the VDPBF16PS pair of x[2q] (high half: the
// instruction's first product) and x[2q+1] (low half), the last pair of an
// odd length padded with -0 (bf16_gemm.go's pairPadA: a -0 product leaves
// every sum unchanged). x holds widened bf16 values, so the narrowing is
// exact.
func gemvPairsBF16(xp []uint32, x []float32) {
	hi := func(v float32) uint32 { return math.Float32bits(v) >> 16 }
	for q := range xp {
		lo := pairPadA
		if 2*q+1 < len(x) {
			lo = hi(x[2*q+1])
		}
		xp[q] = hi(x[2*q])<<16 | lo
	}
}

// gemvAxpyBF16DPStrip sets y[j] to the chain over p < k of
// x[p]*b[p*ldb+j] on the VDPBF16PS kernel (xp holds x as gemvPairsBF16's
// pairs), gemvKB matrix rows at a time.
func gemvAxpyBF16DPStrip(xp []uint32, k int, b []dtype.BFloat16, ldb int, y []float32) {
	n := len(y)
	_ = b[(k-1)*ldb+n-1]
	for kb := 0; kb < k; kb += gemvKB {
		kc := min(gemvKB, k-kb)
		load := 0
		if kb > 0 {
			load = 1
		}
		gemvAxpyBF16DPZ(kc/2, &xp[kb/2], (*uint16)(unsafe.Pointer(&b[kb*ldb])), ldb, &y[0], n, load, kc&1)
	}
}
