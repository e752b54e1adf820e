package cpu

import (
	"os"
	"sync/atomic"

	"github.com/gotpu/gotpu/backend/cpu/internal/pool"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

// Weight prefetch. A decode step is a chain of matrix-vector products,
// each reading its weights from memory once, with small single-threaded
// steps between them (norms, RoPE, the KV-cache writes) during which the
// second core only polls for work. While the caller runs those steps, the
// plan gives the pool helper the next products' weights to read
// (pool.Background), so that the products start on cached lines instead
// of a cold stream. The job loads one byte of every cache line: PREFETCHT0
// hints, measured first, left half the lines uncached (the CPU drops
// software prefetches when its miss buffers are full). Because it reads,
// it must not outlive what it reads: the run stops it when the products
// start and when the run ends (pool.StopBackground); a call to the helper
// stops it too. GOTPU_PREFETCH=0 turns it off.

// prefetchMinBytes is the smallest weight worth prefetching, and
// prefetchMaxBytes the most one gap reads (more than a decode step's gaps
// last for: the job is stopped long before).
const (
	prefetchMinBytes = 64 << 10
	prefetchMaxBytes = 4 << 20
)

// prefetchOn is false under GOTPU_PREFETCH=0.
var prefetchOn = os.Getenv("GOTPU_PREFETCH") != "0"

// weightStep reports whether plan step s is a product whose weights are
// worth prefetching: a dot_general or a GGUF linear layer, alone or with a
// fused epilogue, of at most gemvRowsMax activation rows.
func (p *plan) weightStep(s *pstep) bool {
	var n *ir.Node
	switch s.kind {
	case stKernel:
		n = p.g.Nodes[s.node]
		if n.Op != op.DotGeneral && n.Op != op.LinearGguf {
			return false
		}
	case stFused:
		if s.grp.gemm < 0 {
			return false
		}
		n = p.g.Nodes[s.grp.gemm]
	default:
		return false
	}
	// Only products of a few activation rows (a decode step's): they are
	// memory-bound, where a prompt's products are compute-bound and the
	// steps between them use the helper (prefetching there measured 2-16%
	// slower prefills).
	sh := n.Out[0].Meta.Shape
	rows := 1
	for _, d := range sh[:max(len(sh)-1, 0)] {
		rows *= d
	}
	return rows <= gemvRowsMax
}

// prefetchPlan fills p.nextWeight (for each step, the first product step
// at or after it, len(p.steps) if none) and p.weightParams (for the first
// step of each run of products, the parameters of the run worth reading).
func (p *plan) prefetchPlan() {
	p.nextWeight = make([]int32, len(p.steps))
	p.weightParams = make([][]int, len(p.steps))
	next := int32(len(p.steps))
	for i := len(p.steps) - 1; i >= 0; i-- {
		if !p.weightStep(&p.steps[i]) {
			p.nextWeight[i] = next
			continue
		}
		next = int32(i)
		p.nextWeight[i] = next
		var ids []int
		for _, id := range p.steps[i].in {
			if id >= 0 && p.vals[id].param >= 0 {
				ids = append(ids, id)
			}
		}
		if i+1 < len(p.steps) && p.nextWeight[i+1] == int32(i+1) {
			ids = append(ids, p.weightParams[i+1]...) // the rest of the run
			p.weightParams[i+1] = nil
		}
		p.weightParams[i] = ids
	}
}

// prefetchJob is the helper's work for one gap: the weights of the next
// products, in the order they will be read.
type prefetchJob struct {
	regions [][]byte
}

func (j *prefetchJob) RunBackground(stop func() bool) {
	left := prefetchMaxBytes
	var sum byte
	for _, b := range j.regions {
		for off := 0; off < len(b) && left > 0; off += 4096 {
			if stop() {
				prefetchSink.Store(uint32(sum))
				return
			}
			c := b[off:min(off+4096, len(b))]
			for i := 0; i < len(c); i += 64 {
				sum += c[i]
			}
			left -= len(c)
		}
	}
	prefetchSink.Store(uint32(sum))
}

// prefetchSink keeps the loads of prefetchJob from being optimized away.
var prefetchSink atomic.Uint32

// prefetchBefore offers the helper the weights of the next products when
// step si is not one: once per gap, from its first step. Before the
// products themselves run it stops the job, so that the job never reads
// memory past their start: a donated parameter (compile_donate.go) is
// written in place only after its last read.
func (r *crun) prefetchBefore(si int) {
	p := r.c.pl
	j := int(p.nextWeight[si])
	if j == si {
		if r.pfPosted == si {
			pool.StopBackground()
		}
		return
	}
	if j >= len(p.steps) || j == r.pfPosted {
		return
	}
	r.pfPosted = j
	var job prefetchJob
	for _, id := range p.weightParams[j] {
		if b := r.mem(id); len(b) >= prefetchMinBytes {
			job.regions = append(job.regions, b)
		}
	}
	if len(job.regions) > 0 {
		for _, b := range job.regions {
			prefetchOffered.Add(int64(len(b)))
		}
		pool.Background(&job)
	}
}

// prefetchOffered counts the weight bytes offered for prefetching (tests
// check that the plan finds the next product's weights).
var prefetchOffered atomic.Int64
