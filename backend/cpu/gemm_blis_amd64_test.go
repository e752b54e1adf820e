//go:build amd64 && !purego

package cpu

import (
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestGEMMBlockedOrder runs the blocked driver with small blocks on two
// threads, in store mode (C in the shared scratch block) and in direct
// mode, so that units of a k block start while units of the block before
// are still running, and a narrower last column block reuses the scratch
// block with another row length. Every element must equal the one-thread
// result bit for bit (each is one FMA chain in k order whatever the
// split). Run under -race it also checks the waits between units.
func TestGEMMBlockedOrder(t *testing.T) {
	if !haveAVX2() {
		t.Logf("level %s not supported by this CPU: not run", LevelAVX2)
		return
	}
	r := rand.New(rand.NewPCG(71, 72))
	tile := *asmTileF32
	// 12-row blocks (5 row units), 32-column blocks (the last 7 wide),
	// k blocks of 8 with a 3-step tail: m*n*k is above the parallel
	// threshold, so two threads share each block.
	tile.kc, tile.mc, tile.nc = 8, 2*tile.mr, 2*tile.nr
	m, n, k := 60, 2*tile.nc+7, 131
	a := make([]float32, m*k)
	b := make([]float32, k*n)
	for i := range a {
		a[i] = genF32(r)
	}
	for i := range b {
		b[i] = genF32(r)
	}
	idF := []func(float32) float32{idF32}
	run := func(procs int, direct bool) []float32 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		out := make([]float32, m*n)
		g := gemmProblem[float32, float32, float32]{nb: 1, m: m, n: n, k: k,
			a:    gemmSide[float32, float32]{src: a, row: seq(m, k), k: seq(k, 1), conv: idF, plain: true},
			b:    gemmSide[float32, float32]{src: b, row: seq(n, 1), k: seq(k, n), conv: idF, plain: true},
			kern: kern4x4[float32], dot: dotPlain[float32], tile: &tile,
		}
		if direct {
			g.dst, g.ldc, g.dstBatch = out, n, m*n
		} else {
			g.store = func(_, i0, j0, mc, nc int, c []float32) {
				for i := 0; i < mc; i++ {
					copy(out[(i0+i)*n+j0:(i0+i)*n+j0+nc], c[i*nc:i*nc+nc])
				}
			}
		}
		g.run()
		return out
	}
	for _, direct := range []bool{false, true} {
		want := run(1, direct)
		for rep := 0; rep < 20; rep++ {
			got := run(2, direct)
			if i := sameBits(got, want); i >= 0 {
				t.Fatalf("direct=%v rep %d: [%d,%d] = %v, one thread %v", direct, rep, i/n, i%n, got[i], want[i])
			}
		}
	}
}
