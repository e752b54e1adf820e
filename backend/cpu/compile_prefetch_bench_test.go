package cpu

import (
	"fmt"
	"testing"
	"time"

	"github.com/gotpu/gotpu/dtype"
)

// BenchmarkGEMVStart times one decode-shaped bf16 x·Wᵀ whose matrix is
// cold (not read for 96 MB), read one byte a cache line 40 µs before the
// call (what compile_prefetch.go's job does between a decode step's
// products), or warm (the same matrix every call): the case for the
// weight prefetch. It reports µs a product and GB/s of the matrix.
func BenchmarkGEMVStart(b *testing.B) {
	for _, sh := range [][2]int{{576, 576}, {1536, 576}, {576, 1536}} {
		in, out := sh[0], sh[1]
		dt := dtype.BF16
		wbytes := in * out * dt.Size()
		copies := max(1, (96<<20)/wbytes)
		xs := make([]byte, in*dt.Size())
		ws := make([]byte, copies*wbytes)
		for i := range ws {
			ws[i] = byte(i*7) & 0x3f // small finite bf16 values
		}
		y := make([]byte, out*dt.Size())
		for _, mode := range []string{"cold", "loaded", "warm"} {
			b.Run(fmt.Sprintf("%dto%d/%s", in, out, mode), func(b *testing.B) {
				var tot time.Duration
				var sink byte
				for i := 0; i < b.N; i++ {
					c := i % copies
					if mode == "warm" {
						c = 0
					}
					w := ws[c*wbytes : (c+1)*wbytes]
					if mode == "loaded" {
						for o := 0; o < len(w); o += 64 {
							sink += w[o]
						}
						for t := time.Now(); time.Since(t) < 40*time.Microsecond; {
						}
					}
					call := xwtCall(dt, 1, out, in, xs, w, y)
					t0 := time.Now()
					if err := dotGeneralKernel(call); err != nil {
						b.Fatal(err)
					}
					tot += time.Since(t0)
				}
				per := float64(tot.Nanoseconds()) / float64(b.N)
				b.ReportMetric(per/1e3, "us/product")
				b.ReportMetric(float64(wbytes)/per, "GB/s")
				if sink == 255 {
					b.Log(sink)
				}
			})
		}
	}
}
