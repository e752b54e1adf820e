//go:build amd64 && !purego

package quant

import "unsafe"

// dot4Fn computes the dot products of four weight rows (at w, rb bytes
// apart) with one activation row: nb blocks of quants qa, scales da and the
// type's extra per-block array aux, into out[0:4].
type dot4Fn func(w *byte, rb, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

//go:noescape
func dot4Q4_0AVX2(w *byte, rb, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

//go:noescape
func dot4Q4_1AVX2(w *byte, rb, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

//go:noescape
func dot4Q5_0AVX2(w *byte, rb, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

//go:noescape
func dot4Q5_1AVX2(w *byte, rb, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

//go:noescape
func dot4Q8_0AVX2(w *byte, rb, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

// auxOf returns the extra per-block activation array that type t's
// four-row kernels read for activation row i.
func auxOf(t Type, a *acts, i int) unsafe.Pointer {
	switch t {
	case Q4_0, Q5_0, Q8_0:
		return unsafe.Pointer(&a.isum[i*a.nb])
	case Q4_1, Q5_1:
		return unsafe.Pointer(&a.s[i*a.nb])
	case Q4_K, Q5_K:
		// int32: the AVX-512 GEMM kernels' (the AVX2 kernels take
		// acts.m16, the same sums as int16: actK6S)
		return unsafe.Pointer(&a.msum[i*a.nb*8])
	}
	return nil
}

// rows4 runs a four-row kernel over groups of four rows and the generic
// dot product over the rest (the same bits).
func rows4(t Type, k4 dot4Fn) rowsFn {
	dot := dotGeneric(t)
	return func(w []byte, rb, j0, j1 int, a *acts, i int, y []float32) {
		nb := a.nb
		qa, da, aux := &a.qs[i*a.k], &a.d[i*nb], auxOf(t, a, i)
		j := j0
		for ; j+4 <= j1; j += 4 {
			k4(&w[j*rb], rb, nb, qa, da, aux, &y[j])
		}
		for ; j < j1; j++ {
			y[j] = dot(w[j*rb:][:rb], a, i)
		}
	}
}

//go:noescape
func dotQ4KAVX2(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

//go:noescape
func dotQ6KAVX2(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

// dotKFn computes one K-type weight row against one activation row up to
// ggml's final sum: out[0:8] the eight float32 lane sums, out[8] sumf.
type dotKFn func(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

// The activation layouts a K-type row kernel reads.
const (
	actQS  = iota // acts.qs
	actKP         // acts.kp, with acts.m16 as the kernel's aux
	actK6         // acts.k6 (and acts.k6c as a GEMM kernel's aux)
	actK6S        // acts.k6, with acts.m16 (Q4_K, Q5_K: the 32-quant sums as int16)
)

// rowsK runs a K-type row kernel and adds its lane sums to sumf in ggml's
// order; layout says which form of the activation quants it reads.
func rowsK(t Type, kern dotKFn, layout int) rowsFn {
	return func(w []byte, rb, j0, j1 int, a *acts, i int, y []float32) {
		nb := a.nb
		qa, da, aux := &a.qs[i*a.k], &a.d[i*nb], auxOf(t, a, i)
		switch layout {
		case actKP:
			qa, aux = &a.kp[i*a.k], unsafe.Pointer(&a.m16[i*nb*8])
		case actK6: // the row kernels make k6c's sums themselves
			qa, aux = &a.k6[i*a.k], nil
		case actK6S:
			qa, aux = &a.k6[i*a.k], unsafe.Pointer(&a.m16[i*nb*8])
		}
		var out [9]float32
		for j := j0; j < j1; j++ {
			kern(&w[j*rb], nb, qa, da, aux, &out[0])
			sumf := out[8]
			for _, s := range out[:8] {
				sumf += s
			}
			y[j] = sumf
		}
	}
}

//go:noescape
func dotQ5KAVX2(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

//go:noescape
func dot4Q4_0VNNI(w *byte, rb, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

//go:noescape
func dot4Q4_1VNNI(w *byte, rb, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

//go:noescape
func dot4Q8_0VNNI(w *byte, rb, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

//go:noescape
func dotQ4KVNNI(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

//go:noescape
func dotQ6KVNNI(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

// gemm4x4Fn computes four weight rows (at w, rb bytes apart) against four
// activation rows (quants lda bytes apart, scales and the extra array nb
// entries apart) into out[a*ldo+r], r, a < 4.
type gemm4x4Fn func(w *byte, rb, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)

//go:noescape
func gemm4x4Q4_0VNNI(w *byte, rb, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)

// gemm4 runs a 4×4 kernel over groups of four weight rows and four
// activation rows, and rows over what is left.
func gemm4(t Type, g4 gemm4x4Fn, rows rowsFn) gemmFn {
	return gemm48(t, nil, g4, rows)
}

// gemm48 runs a 4×8 kernel (four weight rows against eight activation
// rows; nil: none) over groups of eight activation rows, the 4×4 kernel
// over groups of four of the rest, and rows over what is left.
func gemm48(t Type, g8, g4 gemm4x4Fn, rows rowsFn) gemmFn {
	kernels := []struct {
		h int // activation rows per call
		g gemm4x4Fn
	}{{8, g8}, {4, g4}}
	return func(w []byte, rb, j0, j1 int, a *acts, i0, i1 int, y []float32, ldy int) {
		nb := a.nb
		i := i0
		for _, kn := range kernels {
			for ; kn.g != nil && i+kn.h <= i1; i += kn.h {
				qa, da, aux := &a.qs[i*a.k], &a.d[i*nb], auxOf(t, a, i)
				j := j0
				for ; j+4 <= j1; j += 4 {
					kn.g(&w[j*rb], rb, nb, qa, a.k, da, aux, &y[i*ldy+j], ldy)
				}
				for ii := i; ii < i+kn.h && j < j1; ii++ {
					rows(w, rb, j, j1, a, ii, y[ii*ldy:(ii+1)*ldy])
				}
			}
		}
		for ; i < i1; i++ {
			rows(w, rb, j0, j1, a, i, y[i*ldy:(i+1)*ldy])
		}
	}
}

//go:noescape
func gemm4x4Q4_1VNNI(w *byte, rb, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)

//go:noescape
func gemm4x4Q8_0VNNI(w *byte, rb, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)

//go:noescape
func gemm1x4Q4KVNNI(w *byte, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32)

// gemm1x4Fn computes one K-type weight row against four activation rows
// (quants lda bytes apart) up to ggml's final sums: out[9a:9a+8] the lane
// sums of activation row a, out[9a+8] its sumf.
type gemm1x4Fn func(w *byte, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32)

// gemmK runs a one-by-four K kernel (reading the activation quants in the
// given layout) over groups of four activation rows, and rows over what is
// left.
func gemmK(t Type, g gemm1x4Fn, rows rowsFn, layout int) gemmFn {
	return func(w []byte, rb, j0, j1 int, a *acts, i0, i1 int, y []float32, ldy int) {
		nb := a.nb
		var out [36]float32
		i := i0
		for ; i+4 <= i1; i += 4 {
			qa, lda, da, aux := (*int8)(nil), a.k, &a.d[i*nb], auxOf(t, a, i)
			switch layout {
			case actQS:
				qa = &a.qs[i*a.k]
			case actKP:
				qa = &a.kp[i*a.k]
			case actK6:
				qa, aux = &a.k6[i*a.k], unsafe.Pointer(&a.k6c[i*a.k/2])
			}
			for j := j0; j < j1; j++ {
				g(&w[j*rb], nb, qa, lda, da, aux, &out[0])
				for r := range 4 {
					o := out[9*r:][:9]
					sumf := o[8]
					for _, s := range o[:8] {
						sumf += s
					}
					y[(i+r)*ldy+j] = sumf
				}
			}
		}
		for ; i < i1; i++ {
			rows(w, rb, j0, j1, a, i, y[i*ldy:(i+1)*ldy])
		}
	}
}

// gemm1x4YFn is gemm1x4Fn finishing ggml's sums itself: row a's output
// (sumf plus the eight lane sums in order) into y[a·ldy], a < 4.
type gemm1x4YFn func(w *byte, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, y *float32, ldy int)

// gemmKY is gemmK for a kernel that writes the outputs itself (the AVX2
// K GEMM kernels): no per-call sum in Go, which cost a 4-block row (a
// 1024-wide Q4_K row) about a fifth of its time.
func gemmKY(t Type, g gemm1x4YFn, rows rowsFn, layout int) gemmFn {
	return func(w []byte, rb, j0, j1 int, a *acts, i0, i1 int, y []float32, ldy int) {
		nb := a.nb
		i := i0
		for ; i+4 <= i1; i += 4 {
			qa, lda, da, aux := (*int8)(nil), a.k, &a.d[i*nb], auxOf(t, a, i)
			switch layout {
			case actK6:
				qa, aux = &a.k6[i*a.k], unsafe.Pointer(&a.k6c[i*a.k/2])
			case actK6S:
				qa, aux = &a.k6[i*a.k], unsafe.Pointer(&a.m16[i*nb*8])
			default:
				panic("quant: gemmKY: unsupported activation layout")
			}
			_ = y[(i+3)*ldy+j1-1] // the kernel writes y[(i+r)·ldy+j], r < 4
			for j := j0; j < j1; j++ {
				g(&w[j*rb], nb, qa, lda, da, aux, &y[i*ldy+j], ldy)
			}
		}
		for ; i < i1; i++ {
			rows(w, rb, j0, j1, a, i, y[i*ldy:(i+1)*ldy])
		}
	}
}

//go:noescape
func dot4Q5_0VNNI(w *byte, rb, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

//go:noescape
func dot4Q5_1VNNI(w *byte, rb, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

//go:noescape
func gemm4x4Q4_0AVX2(w *byte, rb, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)

// gemm4x4Q8_0AVX2 is the AVX2 four-by-four Q8_0 GEMM kernel
// (dot_amd64.s).
//
//go:noescape
func gemm4x4Q8_0AVX2(w *byte, rb, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)

//go:noescape
func gemm4x4Q4_1AVX2(w *byte, rb, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)

//go:noescape
func gemm4x4Q5_0AVX2(w *byte, rb, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)

// The AVX2 4x8 GEMM kernels (dot_amd64.s): the 4x4 kernels' steps for
// eight activation rows per unpacked weight block.

//go:noescape
func gemm4x8Q4_0AVX2(w *byte, rb, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)

//go:noescape
func gemm4x8Q4_1AVX2(w *byte, rb, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)

//go:noescape
func gemm4x8Q5_0AVX2(w *byte, rb, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)

//go:noescape
func gemm4x8Q5_1AVX2(w *byte, rb, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)

//go:noescape
func gemm4x4Q5_1AVX2(w *byte, rb, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)

//go:noescape
func dot8Q4_0VNNI(w *byte, rb, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

//go:noescape
func dot8Q4_1VNNI(w *byte, rb, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

// rows8 runs an eight-row kernel over groups of eight rows, then rows4's
// four-row kernel and the generic code over the rest (the same bits).
func rows8(t Type, k8, k4 dot4Fn) rowsFn {
	rest := rows4(t, k4)
	return func(w []byte, rb, j0, j1 int, a *acts, i int, y []float32) {
		nb := a.nb
		qa, da, aux := &a.qs[i*a.k], &a.d[i*nb], auxOf(t, a, i)
		j := j0
		for ; j+8 <= j1; j += 8 {
			k8(&w[j*rb], rb, nb, qa, da, aux, &y[j])
		}
		rest(w, rb, j, j1, a, i, y)
	}
}

//go:noescape
func dot8Q5_0VNNI(w *byte, rb, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

//go:noescape
func dotQ5KVNNI(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

//go:noescape
func gemm1x4Q5KVNNI(w *byte, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32)

//go:noescape
func gemm1x4Q4KAVX2(w *byte, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, y *float32, ldy int)

//go:noescape
func gemm1x4Q5KAVX2(w *byte, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, y *float32, ldy int)

//go:noescape
func gemm1x4Q6KAVX2(w *byte, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, y *float32, ldy int)

// dot16Fn computes the dot products of one r16 group of 16 weight rows
// (pack.go) with one activation row (as dot4Fn) into out[0:16].
type dot16Fn func(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

// rows16 runs a packed-group kernel over the full r16 groups of [j0, j1).
func rows16(t Type, k16 dot16Fn) rowsFn {
	return func(w []byte, rb, j0, j1 int, a *acts, i int, y []float32) {
		nb := a.nb
		qa, da, aux := &a.qs[i*a.k], &a.d[i*nb], auxOf(t, a, i)
		for j := j0; j+PackRows <= j1; j += PackRows {
			k16(&w[j*rb], nb, qa, da, aux, &y[j])
		}
	}
}

//go:noescape
func dot16Q4_0VNNI(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

//go:noescape
func dot16Q4_1VNNI(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

//go:noescape
func dot16Q8_0VNNI(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

//go:noescape
func dot16Q4_0AVX2(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

//go:noescape
func dot16Q4_1AVX2(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

//go:noescape
func dot8Q5_1VNNI(w *byte, rb, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

//go:noescape
func dot16Q5_0VNNI(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

//go:noescape
func dot16Q5_1VNNI(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

// gemm16Fn computes one r16 group of 16 weight rows against four
// activation rows (quants lda bytes apart, scales and the extra array nb
// entries apart) into out[a*ldo+r], r < 16, a < 4.
type gemm16Fn func(w *byte, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)

//go:noescape
func gemm16x4Q5_0VNNI(w *byte, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)

//go:noescape
func gemm16x4Q5_1VNNI(w *byte, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)

// packGemm16 runs a 16x4 r16 kernel over groups of four activation rows of
// the full groups of [j0, j1), and the packed row kernel over the rest.
func packGemm16(t Type, g16 gemm16Fn, rows rowsFn) gemmFn {
	return func(w []byte, rb, j0, j1 int, a *acts, i0, i1 int, y []float32, ldy int) {
		nb := a.nb
		i := i0
		for ; i+4 <= i1; i += 4 {
			qa, da, aux := &a.qs[i*a.k], &a.d[i*nb], auxOf(t, a, i)
			for j := j0; j+PackRows <= j1; j += PackRows {
				g16(&w[j*rb], nb, qa, a.k, da, aux, &y[i*ldy+j], ldy)
			}
		}
		for ; i < i1; i++ {
			rows(w, rb, j0, j1, a, i, y[i*ldy:(i+1)*ldy])
		}
	}
}

//go:noescape
func gemm16x4Q4_0VNNI(w *byte, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)

//go:noescape
func gemm16x4Q4_1VNNI(w *byte, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)

//go:noescape
func gemm16x4Q8_0VNNI(w *byte, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)

//go:noescape
func dot16Q4KVNNI(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)

// rows16K runs a K-type r16 kernel (reading acts.kp and acts.m16) over the
// full r16 groups of [j0, j1).
func rows16K(k16 dot16Fn) rowsFn {
	return func(w []byte, rb, j0, j1 int, a *acts, i int, y []float32) {
		nb := a.nb
		qa, da, aux := &a.kp[i*a.k], &a.d[i*nb], unsafe.Pointer(&a.m16[i*nb*8])
		for j := j0; j+PackRows <= j1; j += PackRows {
			k16(&w[j*rb], nb, qa, da, aux, &y[j])
		}
	}
}

//go:noescape
func gemm1x4Q6KZ(w *byte, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32)
