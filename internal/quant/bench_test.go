package quant

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkGEMV reports the weight bytes streamed per second (SetBytes) of
// the decode-shaped product on a SmolLM2-135M shape, per type and level.
// The gotpu bench qgemv command and bench/qgemv report the same with the
// copy bandwidth of the same run.
func BenchmarkGEMV(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, sh := range [][2]int{{576, 1536}, {1536, 576}} {
		k, n := sh[0], sh[1]
		for _, typ := range weightTypes {
			if k%typ.BlockSize() != 0 {
				continue
			}
			_, wq := randWeights(r, typ, n, k)
			x := randActs(r, 1, k)
			y := make([]float32, n)
			for _, l := range Levels() {
				kern := For(l)
				if kern.Level() != l {
					continue
				}
				for _, w := range benchLayouts(typ, wq, n, k) {
					b.Run(fmt.Sprintf("%dx%d/%v/%s%s", k, n, typ, l, w.name), func(b *testing.B) {
						b.SetBytes(int64(len(wq)))
						c0 := processCPU()
						for b.Loop() {
							if err := kern.MatMulMulti(typ, []Weight{{W: w.w, N: n, Y: y, Packed: w.packed}}, k, x, 1, nil); err != nil {
								b.Fatal(err)
							}
						}
						if c0 >= 0 {
							b.ReportMetric(float64(len(wq))*float64(b.N)/(processCPU()-c0)/1e9, "GB/cpu-s")
						}
					})
				}
			}
		}
	}
}

// BenchmarkGEMM reports the prefill-shaped product (64 activation rows) in
// GFLOP/s (2·m·n·k per product), per type and level.
func BenchmarkGEMM(b *testing.B) {
	r := rand.New(rand.NewPCG(2, 2))
	const m = 64
	for _, sh := range [][2]int{{1536, 576}} {
		k, n := sh[0], sh[1]
		for _, typ := range weightTypes {
			_, wq := randWeights(r, typ, n, k)
			x := randActs(r, m, k)
			y := make([]float32, m*n)
			for _, l := range Levels()[1:] {
				kern := For(l)
				if kern.Level() != l {
					continue
				}
				for _, w := range benchLayouts(typ, wq, n, k) {
					b.Run(fmt.Sprintf("%dx%dx%d/%v/%s%s", m, k, n, typ, l, w.name), func(b *testing.B) {
						c0 := processCPU()
						for b.Loop() {
							if err := kern.MatMulMulti(typ, []Weight{{W: w.w, N: n, Y: y, Packed: w.packed}}, k, x, m, nil); err != nil {
								b.Fatal(err)
							}
						}
						flops := 2 * m * float64(n) * float64(k) * float64(b.N)
						b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
						if c0 >= 0 {
							b.ReportMetric(flops/(processCPU()-c0)/1e9, "GFLOP/cpu-s")
						}
					})
				}
			}
		}
	}
}

type benchWeight struct {
	name   string
	w      []byte
	packed bool
}

// benchLayouts returns w row-major and, for a type with one, in the r16
// layout ("/r16").
func benchLayouts(typ Type, w []byte, n, k int) []benchWeight {
	out := []benchWeight{{"", w, false}}
	if CanPack(typ) {
		rb, _ := RowBytes(typ, k)
		p := make([]byte, len(w))
		if err := Pack(typ, p, w, n, rb); err != nil {
			panic(err)
		}
		out = append(out, benchWeight{"/r16", p, true})
	}
	return out
}
