package cpu

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// transposeCase is a copy between two layouts of one shape, over a source
// buffer of srcN elements and a destination of dstN.
type transposeCase struct {
	name     string
	dt       dtype.DType
	shape    []int
	src, dst op.Layout // shapes filled from shape
	srcN     int
	dstN     int
	want     bool // whether transposeCopy takes it
}

// perm2 returns the layout of shape whose last two axes are stored swapped
// (a transposed view of a contiguous tensor), with leading axes outermost.
func perm2(shape []int, off int) op.Layout {
	r := len(shape)
	st := make([]int, r)
	st[r-2], st[r-1] = 1, shape[r-2]
	s := shape[r-2] * shape[r-1]
	for k := r - 3; k >= 0; k-- {
		st[k] = s
		s *= shape[k]
	}
	return op.Layout{Shape: shape, Strides: st, Offset: off}
}

func transposeCases() []transposeCase {
	var cs []transposeCase
	for _, dt := range []dtype.DType{dtype.F32, dtype.I32, dtype.BF16, dtype.F16} {
		for _, sh := range [][]int{{512, 784}, {784, 512}, {8, 8}, {9, 37}, {67, 130}, {16, 16}, {3, 100, 33}, {2, 1, 64, 72}, {300, 10}} {
			n := op.Numel(sh)
			cs = append(cs,
				transposeCase{fmt.Sprintf("%s/%v/gather", dt, sh), dt, sh, perm2(sh, 0), op.Contiguous(sh), n, n, n >= transposeMinElems},
				transposeCase{fmt.Sprintf("%s/%v/scatter", dt, sh), dt, sh, op.Contiguous(sh), perm2(sh, 0), n, n, n >= transposeMinElems},
			)
		}
		// Row padding on both sides and offsets: A rows of 40 with 33 used,
		// B rows of 70 with 64 used.
		sh := []int{64, 33}
		cs = append(cs, transposeCase{fmt.Sprintf("%s/padded", dt), dt, sh,
			op.Layout{Shape: sh, Strides: []int{1, 70}, Offset: 5},
			op.Layout{Shape: sh, Strides: []int{40, 1}, Offset: 3},
			70*33 + 5, 40*64 + 3, true})
	}
	// Not transposes: contiguous, a broadcast, int64 and u8 elements, a
	// permutation that keeps the inner axis.
	cs = append(cs,
		transposeCase{"contiguous", dtype.F32, []int{32, 32}, op.Contiguous([]int{32, 32}), op.Contiguous([]int{32, 32}), 1024, 1024, false},
		transposeCase{"broadcast", dtype.F32, []int{32, 32}, op.Layout{Shape: []int{32, 32}, Strides: []int{0, 1}}, op.Contiguous([]int{32, 32}), 32, 1024, false},
		transposeCase{"i64", dtype.I64, []int{32, 32}, perm2([]int{32, 32}, 0), op.Contiguous([]int{32, 32}), 1024, 1024, false},
		transposeCase{"u8", dtype.U8, []int{32, 32}, perm2([]int{32, 32}, 0), op.Contiguous([]int{32, 32}), 1024, 1024, false},
		transposeCase{"outer permute", dtype.F32, []int{16, 16, 8}, op.Layout{Shape: []int{16, 16, 8}, Strides: []int{8, 128, 1}}, op.Contiguous([]int{16, 16, 8}), 2048, 2048, false},
	)
	return cs
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestTransposeCopy compares transposeCopy with the generic strided loop,
// at both kernel levels, byte for byte (padding untouched included).
func TestTransposeCopy(t *testing.T) {
	t.Parallel()
	levels := []string{LevelGeneric}
	if haveAVX2() {
		levels = append(levels, LevelAVX2)
	}
	for _, lv := range levels {
		for _, tc := range transposeCases() {
			t.Run(lv+"/"+tc.name, func(t *testing.T) {
				ks := ksetFor(lv)
				es := tc.dt.Size()
				tc.src.Shape, tc.dst.Shape = tc.shape, tc.shape
				s := device.Operand{DType: tc.dt, Layout: tc.src}
				d := device.Operand{DType: tc.dt, Layout: tc.dst}
				src := randomBytes(tc.srcN*es, 1)
				got := randomBytes(tc.dstN*es, 2)
				want := slices.Clone(got)
				ok := transposeCopy(ks, s, src, d, got)
				if ok != tc.want {
					t.Fatalf("transposeCopy took it: %v, want %v", ok, tc.want)
				}
				switch es {
				case 1:
					moveLoop[uint8](s, src, d, want)
				case 2:
					moveLoop[uint16](s, src, d, want)
				case 4:
					moveLoop[uint32](s, src, d, want)
				case 8:
					moveLoop[uint64](s, src, d, want)
				}
				if ok && !slices.Equal(got, want) {
					for i := range got {
						if got[i] != want[i] {
							t.Fatalf("byte %d (element %d) = %#x, want %#x", i, i/es, got[i], want[i])
						}
					}
				}
				// castLoop (the copy kernel) gives the same bytes either way.
				viaCast := randomBytes(tc.dstN*es, 2)
				castLoop(procKS, s, src, d, viaCast)
				if !slices.Equal(viaCast, want) {
					t.Fatalf("castLoop differs from the strided loop")
				}
			})
		}
	}
}

// BenchmarkTransposeCopy: the copy kernel on a transposed f32 or bf16
// matrix (the shape of the MNIST MLP's first weight gradient) made
// contiguous, through the generic strided loop, the portable blocked loop
// and the assembly blocks.
func BenchmarkTransposeCopy(b *testing.B) {
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		for _, sh := range [][]int{{512, 784}, {2048, 2048}} {
			es := dt.Size()
			n := op.Numel(sh)
			s := device.Operand{DType: dt, Layout: perm2(sh, 0)}
			d := device.Operand{DType: dt, Layout: op.Contiguous(sh)}
			src, dst := randomBytes(n*es, 1), make([]byte, n*es)
			run := func(name string, f func()) {
				b.Run(fmt.Sprintf("%s/%dx%d/%s", dt, sh[0], sh[1], name), func(b *testing.B) {
					b.SetBytes(int64(2 * n * es))
					for b.Loop() {
						f()
					}
				})
			}
			run("strided", func() {
				if es == 4 {
					moveLoop[uint32](s, src, d, dst)
				} else {
					moveLoop[uint16](s, src, d, dst)
				}
			})
			for _, lv := range []string{LevelGeneric, LevelAVX2} {
				if lv == LevelAVX2 && !haveAVX2() {
					continue
				}
				ks := ksetFor(lv)
				run("blocked-"+lv, func() { transposeCopy(ks, s, src, d, dst) })
			}
		}
	}
}
