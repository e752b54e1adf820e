package quant

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// TestMatMulMulti checks that products sharing their activations and run
// as one (MatMulMulti) give each output the bits MatMul gives it, at every
// level, serially and with the row groups shared out concurrently.
func TestMatMulMulti(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	par := func(total int, fn func(lo, hi int)) {
		// Uneven pieces that cross the weights' boundaries, run at once.
		var wg sync.WaitGroup
		for lo := 0; lo < total; lo += 3 {
			wg.Add(1)
			go func(lo, hi int) { defer wg.Done(); fn(lo, hi) }(lo, min(lo+3, total))
		}
		wg.Wait()
	}
	const k = 512
	for _, typ := range weightTypes {
		if k%typ.BlockSize() != 0 {
			continue
		}
		ns := []int{40, 16, 0, 33}
		ws := make([][]byte, len(ns))
		for i, n := range ns {
			_, ws[i] = randWeights(r, typ, n, k)
		}
		for _, m := range []int{1, 3} {
			x := randActs(r, m, k)
			for _, l := range Levels() {
				kern := For(l)
				if kern.Level() != l {
					continue
				}
				for pi, p := range []func(int, func(int, int)){nil, par} {
					t.Run(fmt.Sprintf("%v/m=%d/%s/par=%d", typ, m, l, pi), func(t *testing.T) {
						multi := make([]Weight, len(ns))
						for i, n := range ns {
							multi[i] = Weight{W: ws[i], N: n, Y: make([]float32, m*n)}
						}
						if err := kern.MatMulMulti(typ, multi, k, x, m, p); err != nil {
							t.Fatal(err)
						}
						for i, n := range ns {
							want := make([]float32, m*n)
							if err := kern.MatMul(typ, ws[i], n, k, x, m, want, nil); err != nil {
								t.Fatal(err)
							}
							if !slices.Equal(multi[i].Y, want) {
								t.Fatalf("weight %d (n=%d): MatMulMulti differs from MatMul", i, n)
							}
						}
					})
				}
			}
		}
	}
}
