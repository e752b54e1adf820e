package cpu

import (
	"math"
	"testing"
)

// TestEpiLoad checks the bool widening and the fill over lengths around
// the vector loop's eight elements, bytes 0/1 and others, and that
// nothing past the destination is written.
func TestEpiLoad(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 100, 4096, 4099} {
		src := make([]uint8, n+3)
		for i := range src {
			src[i] = uint8(i*7) % 3 // 0, 1 and 2
			if i%11 == 0 {
				src[i] = 255
			}
		}
		buf := make([]float32, n+1)
		buf[n] = packGuard
		epiU8ToF32(procKS, buf[:n], src)
		for i := 0; i < n; i++ {
			if buf[i] != float32(src[i]) {
				t.Fatalf("n %d: widened %d = %v, want %v", n, i, buf[i], src[i])
			}
		}
		if buf[n] != packGuard {
			t.Fatalf("n %d: wrote past the end", n)
		}
		for _, v := range []float32{0, -1.5, float32(math.Inf(1))} {
			epiFill(buf[:n], v)
			for i := 0; i < n; i++ {
				if math.Float32bits(buf[i]) != math.Float32bits(v) {
					t.Fatalf("n %d: fill %d = %v, want %v", n, i, buf[i], v)
				}
			}
			if buf[n] != packGuard {
				t.Fatalf("n %d: fill wrote past the end", n)
			}
		}
	}
}
