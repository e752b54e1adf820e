package cpu

import (
	"math/rand/v2"
	"testing"
)

// TestPack6F32 checks the six-row interleave against its definition for
// every length around the assembly's blocks of eight, several row
// strides, at every level, and that it writes nothing past its panel.
func TestPack6F32(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for _, level := range []string{LevelAVX2, LevelGeneric} {
		ks := ksetFor(level)
		for _, n := range []int{1, 2, 7, 8, 9, 15, 16, 17, 24, 63, 64, 65, 784} {
			for _, lda := range []int{n, n + 1, n + 13, 2*n + 5} {
				src := make([]float32, 5*lda+n)
				for i := range src {
					src[i] = r.Float32()
				}
				dst := make([]float32, n*6+8)
				for i := range dst {
					dst[i] = -1
				}
				pack6F32(ks, dst[:n*6], src, lda, n)
				for p := 0; p < n; p++ {
					for row := 0; row < 6; row++ {
						if got, want := dst[p*6+row], src[row*lda+p]; got != want {
							t.Fatalf("%v n=%d lda=%d: dst[%d*6+%d] = %v, want %v", level, n, lda, p, row, got, want)
						}
					}
				}
				for i := n * 6; i < len(dst); i++ {
					if dst[i] != -1 {
						t.Fatalf("%v n=%d lda=%d: wrote past the panel at %d", level, n, lda, i)
					}
				}
			}
		}
	}
}

func BenchmarkPack6F32(b *testing.B) {
	const n, lda = 784, 784
	src := make([]float32, 6*lda)
	dst := make([]float32, 6*n)
	for _, level := range []string{LevelAVX2, LevelGeneric} {
		b.Run(level, func(b *testing.B) {
			ks := ksetFor(level)
			b.SetBytes(6 * n * 4)
			for b.Loop() {
				pack6F32(ks, dst, src, lda, n)
			}
		})
	}
}
