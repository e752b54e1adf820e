package cpu

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

// pagedGathered is paged_attention's reference on this backend: the
// blocks gathered into [B, Hkv, M·P, E] and the dense attention kernel.
func pagedGathered(t *testing.T, q, kc, vc, table, mask *tensor.Tensor, a op.Attrs) *tensor.Tensor {
	t.Helper()
	b, m := table.Size(0), table.Size(1)
	idx := table.Reshape(-1)
	gather := func(c *tensor.Tensor) *tensor.Tensor {
		return c.IndexSelect(0, idx).Reshape(b, m*c.Size(1), c.Size(2), c.Size(3)).Transpose(1, 2)
	}
	sa := op.Attrs{"enable_gqa": kc.Size(2) != q.Size(1)}
	if a.Has("scale") {
		sa["scale"] = a.Float("scale")
	}
	return sdpaDirect(t, procKS, []*tensor.Tensor{q, gather(kc), gather(vc), mask}, sa)
}

// pagedDirect runs paged_attention and fails unless its kernel ran.
func pagedDirect(t *testing.T, in []*tensor.Tensor, a op.Attrs) *tensor.Tensor {
	t.Helper()
	before := pagedRuns.Load()
	out := tensor.Apply("paged_attention", in, a)[0]
	if pagedRuns.Load() == before {
		t.Fatalf("the paged kernel did not run")
	}
	return out
}

// TestPagedAttentionMatchesGather compares the paged kernel with the
// dense kernel over the gathered keys and values, bit for bit: both run
// the same FMA chains in the same order (the row path per block of rows,
// the tiled paths on the same packs). Block sizes that do and do not
// divide the row kernels' 16 rows, decode and prefill shapes, grouped
// heads, shared blocks, bool and float masks, a strided value cache.
func TestPagedAttentionMatchesGather(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	run := func(name string, nb, heads, hkv, l, page, m, e, ev int, maskKind string, strided bool) {
		t.Helper()
		nblk := nb*m/2 + 2
		q := sdpaRand(r, nb, heads, l, e)
		kc := sdpaRand(r, nblk, page, hkv, e)
		var vc *tensor.Tensor
		if strided { // [N, P, Hkv, Ev] with Ev not innermost
			vc = sdpaRand(r, nblk, page, ev, hkv).Transpose(2, 3)
		} else {
			vc = sdpaRand(r, nblk, page, hkv, ev)
		}
		tab := make([]int64, nb*m)
		for i := range tab {
			tab[i] = int64(r.Intn(nblk)) // blocks may repeat (shared prefixes)
		}
		table := tensor.FromSlice(sdpaCPU(), tab, nb, m)
		s := m * page
		var mask *tensor.Tensor
		switch maskKind {
		case "padding": // sequence b holds n_b keys; query i sits at n_b-l+i (causal)
			v := make([]bool, nb*l*s)
			for b := range nb {
				n := max(l, s-r.Intn(page+1)-b)
				for i := range l {
					for j := range s {
						v[(b*l+i)*s+j] = j <= n-l+i
					}
				}
			}
			mask = tensor.FromSlice(sdpaCPU(), v, nb, 1, l, s)
		case "float":
			mask = sdpaRand(r, l, s)
		}
		a := op.Attrs{}
		if maskKind == "float" {
			a["scale"] = 0.3
		}
		got := pagedDirect(t, []*tensor.Tensor{q, kc, vc, table, mask}, a)
		want := pagedGathered(t, q, kc, vc, table, mask, a)
		sdpaClose(t, name, got, want, true, 0, 0)
	}
	for _, page := range []int{1, 5, 16, 32} {
		for _, l := range []int{1, 3, sdpaRowMaxL, 40} {
			for _, m := range []int{1, 3, 9} {
				for _, mk := range []string{"", "padding", "float"} {
					name := fmt.Sprintf("P%d/L%d/M%d/%s", page, l, m, mk)
					run(name+"/gqa", 2, 4, 2, l, page, m, 64, 64, mk, false)
					run(name+"/mha", 1, 3, 3, l, page, m, 8, 20, mk, false)
					if page == 5 {
						run(name+"/strided", 2, 2, 1, l, page, m, 16, 8, mk, true)
					}
				}
			}
		}
	}
	// Many key blocks and ragged query blocks on the tiled path.
	withSDPABlocks(12, 16, func() {
		for _, page := range []int{5, 16} {
			run(fmt.Sprintf("small blocks/P%d", page), 2, 4, 2, 30, page, 7, 16, 16, "padding", false)
		}
	})
}

// TestPagedAttentionErrors checks that a block number outside the cache
// is an error naming it, not a read out of bounds.
func TestPagedAttentionErrors(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	q, kc, vc := sdpaRand(r, 1, 2, 1, 8), sdpaRand(r, 3, 4, 2, 8), sdpaRand(r, 3, 4, 2, 8)
	for _, bad := range []int64{3, -1} {
		table := tensor.FromSlice(sdpaCPU(), []int64{0, bad}, 1, 2)
		err := tensor.Catch(func() { tensor.PagedAttention(q, kc, vc, table, tensor.PagedAttentionOpts{}) })
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("block_table[0, 1] = %d is outside the cache's 3 blocks", bad)) {
			t.Errorf("block %d: err = %v", bad, err)
		}
	}
}
