package dist

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/tensor"
)

// call is one collective in progress on the group's goroutine.
type call struct {
	ctx      context.Context
	seq      uint64
	desc     string
	timeout  time.Duration
	deadline time.Time // zero until due is first asked
	checked  bool
	p2p      bool // a send or recv: seq counts that peer's messages, not the group's collectives
}

// due returns the call's deadline: the group's timeout from the first
// time a wait asks (a collective that completes at once never reads the
// clock for it), or ctx's deadline when sooner.
func (c *call) due() time.Time {
	if c.deadline.IsZero() {
		c.deadline = time.Now().Add(c.timeout)
		if d, ok := c.ctx.Deadline(); ok && d.Before(c.deadline) {
			c.deadline = d
		}
	}
	return c.deadline
}

// describe returns t's dtype and shape, "f32[2,3]".
func describe(t *tensor.Tensor) string {
	var arr [64]byte
	return string(appendDesc(arr[:0], t))
}

// appendDesc appends describe(t) to b, without fmt and without copying
// the shape: it is built on every collective.
func appendDesc(b []byte, t *tensor.Tensor) []byte {
	b = append(b, t.DType().String()...)
	b = append(b, '[')
	for i := range t.Dim() {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(t.Size(i)), 10)
	}
	return append(b, ']')
}

// begin starts collective desc: it fails at once on a group that failed
// before, and publishes the descriptor the other ranks compare with theirs.
func (g *Group) begin(ctx context.Context, desc string) (*call, error) {
	c := &call{ctx: ctx, seq: g.seq, desc: desc, timeout: g.timeout}
	if f := g.failure(); f != nil {
		return nil, fmt.Errorf("dist: %s #%d in group %s: %w: %v", desc, g.seq, g.name, ErrAborted, f)
	}
	g.seq++
	g.eng.begin(c)
	return c, nil
}

// fail marks the group failed and tells the other ranks why.
func (g *Group) fail(err error) error {
	g.failMu.Lock()
	defer g.failMu.Unlock()
	if g.failed == nil {
		g.failed = err
		g.hasFailed.Store(true)
		g.eng.abort(err)
	}
	return err
}

func (g *Group) errorf(c *call, kind string, ranks []int, format string, args ...any) *Error {
	gr := make([]int, len(ranks))
	for i, r := range ranks {
		gr[i] = g.ranks[r]
	}
	return &Error{Group: g.name, Collective: c.desc, Seq: c.seq, Kind: kind, Ranks: gr, Detail: fmt.Sprintf(format, args...)}
}

func (g *Group) failure() error {
	if !g.hasFailed.Load() {
		return nil
	}
	g.failMu.Lock()
	defer g.failMu.Unlock()
	return g.failed
}

// step is one lock-step point: this rank announces it reached it and waits
// until every other rank of the group has. The first step of a collective
// also compares the ranks' descriptors.
func (g *Group) step(c *call) error {
	g.steps++
	g.seg.step(g.rank).Store(g.steps)
	target := g.steps
	if err := g.waitPeers(c, func(r int) bool { return g.seg.step(r).Load() >= target }, nil); err != nil {
		return g.fail(err)
	}
	if !c.checked {
		c.checked = true
		var bad []int
		var theirs []string
		for r := range g.ranks {
			if r == g.rank {
				continue
			}
			d, ok := g.seg.readDesc(r, c.seq)
			if !ok {
				d = "a different collective (" + g.seg.lastDesc(r) + ")"
			}
			if d != c.desc {
				bad = append(bad, r)
				theirs = append(theirs, fmt.Sprintf("rank %d called %s", g.ranks[r], d))
			}
		}
		if len(bad) > 0 {
			return g.fail(g.errorf(c, "mismatch", bad, "rank %d (this rank) called %s but %s", g.global, c.desc, strings.Join(theirs, "; ")))
		}
	}
	return nil
}

// waitPeers waits until ready(r) holds for every rank r of peers (all
// other ranks when peers is nil), failing fast when one died, aborted or
// closed, and at the deadline naming the ranks that never arrived.
func (g *Group) waitPeers(c *call, ready func(r int) bool, peers []int) error {
	if peers == nil {
		peers = make([]int, 0, len(g.ranks)-1)
		for r := range g.ranks {
			if r != g.rank {
				peers = append(peers, r)
			}
		}
	}
	var w waiter
	for {
		all := true
		for _, r := range peers {
			if !ready(r) {
				all = false
				break
			}
		}
		if all {
			return nil
		}
		if !w.pause() {
			continue
		}
		var lag []int
		for _, r := range peers {
			if !ready(r) {
				lag = append(lag, r)
			}
		}
		if err := g.checkPeers(c, lag, ready); err != nil {
			return err
		}
		if g.closing.Load() {
			return g.errorf(c, "closed", []int{g.rank}, "this rank closed the group while the collective waited")
		}
		err := c.ctx.Err()
		if d, ok := c.ctx.Deadline(); ok && err == nil && !time.Now().Before(d) {
			err = context.DeadlineExceeded // the context's timer has not fired yet
		}
		if err != nil {
			e := g.errorf(c, "canceled", lag, "%v while waiting", err)
			e.Err = err
			return e
		}
		if time.Now().After(c.due()) {
			var parts []string
			now := time.Now().UnixNano()
			for _, r := range lag {
				ctl := g.seg.ctl(r)
				hb := time.Duration(now - g.seg.i64(ctl+ctlHeartbeat).Load())
				parts = append(parts, fmt.Sprintf("rank %d (pid %d, alive, %s, heartbeat %.1fs ago)", g.ranks[r], g.seg.i64(ctl+ctlPid).Load(), g.seg.lastDesc(r), hb.Seconds()))
			}
			return g.errorf(c, "timeout", lag, "did not arrive within %v: %s", g.timeout, strings.Join(parts, "; "))
		}
	}
}

// staleHeartbeat is how old the heartbeat of a rank whose pid this
// process cannot see (another pid namespace) may be before the rank counts
// as dead; the heartbeat ticks every 200ms.
const staleHeartbeat = 3 * time.Second

// checkPeers reports a lagging rank that died, aborted or left. Each
// rank's state is read before ready is asked again: a rank that arrived
// and then exited or closed between the caller's look and this one is not
// missing.
func (g *Group) checkPeers(c *call, lag []int, ready func(r int) bool) error {
	var dead, aborted, closed []int
	var msgs []string
	for _, r := range lag {
		ctl := g.seg.ctl(r)
		state := g.seg.u32(ctl + ctlState).Load()
		pid := int(g.seg.i64(ctl + ctlPid).Load())
		var gone string
		switch {
		case state == stateAborted || state == stateClosed:
		case g.pidSeen[r]:
			if !pidAlive(pid) {
				gone = fmt.Sprintf("rank %d (pid %d) died, %s", g.ranks[r], pid, g.seg.lastDesc(r))
			}
		default:
			if hb := time.Since(time.Unix(0, g.seg.i64(ctl+ctlHeartbeat).Load())); hb > staleHeartbeat {
				gone = fmt.Sprintf("rank %d (pid %d in another pid namespace) stopped its heartbeat %.1fs ago, %s", g.ranks[r], pid, hb.Seconds(), g.seg.lastDesc(r))
			}
		}
		if (state != stateAborted && state != stateClosed && gone == "") || ready(r) {
			continue
		}
		switch {
		case state == stateAborted:
			aborted = append(aborted, r)
			msgs = append(msgs, fmt.Sprintf("rank %d failed: %s", g.ranks[r], g.seg.abortMsg(r)))
		case state == stateClosed:
			closed = append(closed, r)
		default:
			dead = append(dead, r)
			msgs = append(msgs, gone)
		}
	}
	switch {
	case len(dead) > 0:
		return g.errorf(c, "dead", dead, "%s", strings.Join(msgs, "; "))
	case len(aborted) > 0:
		return g.errorf(c, "aborted", aborted, "%s", strings.Join(msgs, "; "))
	case len(closed) > 0:
		return g.errorf(c, "closed", closed, "the rank closed the group before this collective")
	}
	return nil
}

// recoverAccess, deferred, turns a panic with an error (a tensor's memory
// could not be reached) into *err; any other panic goes on.
func recoverAccess(err *error) {
	if r := recover(); r != nil {
		if e, ok := r.(error); ok {
			*err = fmt.Errorf("dist: tensor access: %w", e)
			return
		}
		panic(r)
	}
}

// withBytes1 is withBytes for one tensor, without its per-call slices and
// closures when the tensor's memory is reachable.
func withBytes1(t *tensor.Tensor, write bool, f func(b []byte) error) (err error) {
	defer recoverAccess(&err)
	var inner error
	if t.WithHostBytes(write, func(b []byte) { inner = f(b) }) {
		return inner
	}
	return withBytes([]*tensor.Tensor{t}, write, func(bs [][]byte) error { return f(bs[0]) })
}

// withBytes runs f on the bytes of ts: their live memory when the device
// allows it, else host copies written back afterwards when write is set.
func withBytes(ts []*tensor.Tensor, write bool, f func(bs [][]byte) error) (err error) {
	defer recoverAccess(&err)
	bs := make([][]byte, len(ts))
	var rec func(i int) error
	rec = func(i int) error {
		if i == len(ts) {
			return f(bs)
		}
		var inner error
		if ts[i].WithHostBytes(write, func(b []byte) { bs[i] = b; inner = rec(i + 1) }) {
			return inner
		}
		bs[i] = ts[i].Bytes()
		if inner = rec(i + 1); inner != nil || !write {
			return inner
		}
		t := ts[i]
		tensor.NoGrad(func() { t.CopyFrom(tensor.FromBytes(t.Device(), t.DType(), t.Shape(), bs[i])) })
		return nil
	}
	return rec(0)
}

func (g *Group) nextSlot() int {
	k := int(g.chunkK % 2)
	g.chunkK++
	return k
}

func nChunks(n, per int) int {
	if n == 0 {
		return 1
	}
	return (n + per - 1) / per
}

func span(i, per, n int) (int, int) {
	lo := min(i*per, n)
	return lo, min(lo+per, n)
}

// AllReduce reduces t across the group in place (all_reduce): every rank
// ends with the same result, reduced in rank order.
func (g *Group) AllReduce(ctx context.Context, t *tensor.Tensor, op ReduceOp) error {
	// exec without the closure: this is the call a training loop makes.
	inline, err := g.lockInline()
	if !inline {
		return g.submit(ctx, g.allReduceFn(t, op)).Wait(context.Background())
	}
	if err != nil {
		return err
	}
	defer g.execMu.Unlock()
	return g.allReduceNow(ctx, t, op)
}

// AllReduceAsync is AllReduce returning at once with a handle.
func (g *Group) AllReduceAsync(ctx context.Context, t *tensor.Tensor, op ReduceOp) *Work {
	return g.submit(ctx, g.allReduceFn(t, op))
}

func (g *Group) allReduceFn(t *tensor.Tensor, op ReduceOp) func(ctx context.Context) error {
	return func(ctx context.Context) error { return g.allReduceNow(ctx, t, op) }
}

// allReduceNow runs all_reduce, holding execMu.
func (g *Group) allReduceNow(ctx context.Context, t *tensor.Tensor, op ReduceOp) error {
	if err := checkReduce(op, t.DType()); err != nil {
		return err
	}
	c, err := g.begin(ctx, g.allReduceDesc(t, op))
	if err != nil {
		return err
	}
	return withBytes1(t, true, func(b []byte) error {
		return g.eng.allReduce(c, b, t.DType(), op)
	})
}

// allReduceDesc returns all_reduce's descriptor, "all_reduce(sum)
// f32[2,3]": the last one again while the op, dtype and shape repeat (a
// training loop's), else a new one. It runs under execMu.
func (g *Group) allReduceDesc(t *tensor.Tensor, op ReduceOp) string {
	d := &g.arDesc
	same := d.desc != "" && d.op == op && d.dt == t.DType() && len(d.shape) == t.Dim()
	for i := 0; same && i < len(d.shape); i++ {
		same = d.shape[i] == t.Size(i)
	}
	if !same {
		var arr [64]byte
		b := append(arr[:0], "all_reduce("...)
		b = append(b, op.String()...)
		d.desc = string(appendDesc(append(b, ") "...), t))
		d.op, d.dt, d.shape = op, t.DType(), t.Shape()
	}
	return d.desc
}

func (g *Group) allReduceBytes(c *call, buf []byte, dt dtype.DType, op ReduceOp, copyOut bool) error {
	es, n, N := dt.Size(), len(buf)/dt.Size(), len(g.ranks)
	per := g.seg.slot / es
	srcs := make([][]byte, N)
	for ch := range nChunks(n, per) {
		lo, hi := span(ch, per, n)
		k := g.nextSlot()
		mine := g.seg.slotMem(g.rank, k)
		cn := hi - lo
		part := (cn + N - 1) / N
		// Only the parts the other ranks reduce go through the slot; this
		// rank reduces its own part straight from buf.
		for r := range N {
			if r != g.rank {
				a, b := span(r, part, cn)
				copy(mine[a*es:b*es], buf[(lo+a)*es:(lo+b)*es])
			}
		}
		if err := g.step(c); err != nil {
			return err
		}
		plo, phi := span(g.rank, part, cn)
		for r := range N {
			srcs[r] = g.seg.slotMem(r, k)[plo*es : phi*es]
		}
		srcs[g.rank] = buf[(lo+plo)*es : (lo+phi)*es]
		reduceBytes(mine[plo*es:phi*es], srcs, dt, op, N)
		if err := g.step(c); err != nil {
			return err
		}
		if !copyOut {
			continue
		}
		for r := range N {
			a, b := span(r, part, cn)
			if r == g.rank {
				copy(buf[(lo+a)*es:(lo+b)*es], mine[a*es:b*es])
				continue
			}
			copy(buf[(lo+a)*es:(lo+b)*es], g.seg.slotMem(r, k)[a*es:b*es])
		}
	}
	return nil
}

// Broadcast copies src's t to every rank's t (broadcast; src is a group rank).
func (g *Group) Broadcast(ctx context.Context, t *tensor.Tensor, src int) error {
	return g.BroadcastAsync(blocking(ctx), t, src).Wait(context.Background())
}

// BroadcastAsync is Broadcast returning at once with a handle.
func (g *Group) BroadcastAsync(ctx context.Context, t *tensor.Tensor, src int) *Work {
	desc := fmt.Sprintf("broadcast(src=%d) %s", src, describe(t))
	return g.submit(ctx, func(ctx context.Context) error {
		if src < 0 || src >= len(g.ranks) {
			return fmt.Errorf("dist: broadcast: src %d is not a rank of group %s (size %d)", src, g.name, len(g.ranks))
		}
		c, err := g.begin(ctx, desc)
		if err != nil {
			return err
		}
		return withBytes([]*tensor.Tensor{t}, g.rank != src, func(bs [][]byte) error {
			return g.eng.broadcast(c, bs[0], src)
		})
	})
}

// broadcastBytes is the built-in engine's broadcast.
func (g *Group) broadcastBytes(c *call, buf []byte, src int) error {
	per := g.seg.slot
	for ch := range nChunks(len(buf), per) {
		lo, hi := span(ch, per, len(buf))
		k := g.nextSlot()
		if g.rank == src {
			copy(g.seg.slotMem(g.rank, k), buf[lo:hi])
		}
		if err := g.step(c); err != nil {
			return err
		}
		if g.rank != src {
			copy(buf[lo:hi], g.seg.slotMem(src, k))
		}
	}
	return nil
}

// Barrier waits until every rank of the group reaches it.
func (g *Group) Barrier(ctx context.Context) error {
	return g.BarrierAsync(blocking(ctx)).Wait(context.Background())
}

// BarrierAsync is Barrier returning at once with a handle.
func (g *Group) BarrierAsync(ctx context.Context) *Work {
	return g.submit(ctx, func(ctx context.Context) error {
		c, err := g.begin(ctx, "barrier")
		if err != nil {
			return err
		}
		return g.eng.barrier(c)
	})
}

func checkLike(what string, ref *tensor.Tensor, ts []*tensor.Tensor, n int) error {
	if len(ts) != n {
		return fmt.Errorf("dist: %s: %d tensors for a group of %d ranks", what, len(ts), n)
	}
	for i, t := range ts {
		if t.DType() != ref.DType() || t.Numel() != ref.Numel() {
			return fmt.Errorf("dist: %s: tensor %d is %s, want %s elements of %s", what, i, describe(t), strconv.Itoa(ref.Numel()), ref.DType())
		}
	}
	return nil
}

// AllGather gathers every rank's t into outs (all_gather): outs[r] gets
// group rank r's tensor. outs must hold one tensor per rank, each of t's
// dtype and size.
func (g *Group) AllGather(ctx context.Context, outs []*tensor.Tensor, t *tensor.Tensor) error {
	return g.AllGatherAsync(blocking(ctx), outs, t).Wait(context.Background())
}

// AllGatherAsync is AllGather returning at once with a handle.
func (g *Group) AllGatherAsync(ctx context.Context, outs []*tensor.Tensor, t *tensor.Tensor) *Work {
	desc := "all_gather " + describe(t)
	return g.submit(ctx, func(ctx context.Context) error {
		if err := checkLike("all_gather", t, outs, len(g.ranks)); err != nil {
			return err
		}
		c, err := g.begin(ctx, desc)
		if err != nil {
			return err
		}
		return withBytes([]*tensor.Tensor{t}, false, func(in [][]byte) error {
			return withBytes(outs, true, func(out [][]byte) error {
				return g.eng.allGather(c, in[0], out)
			})
		})
	})
}

// allGatherBytes gathers buf of every rank into out (nil out: this rank
// only contributes, as a non-destination rank of Gather).
func (g *Group) allGatherBytes(c *call, buf []byte, out [][]byte) error {
	per := g.seg.slot
	for ch := range nChunks(len(buf), per) {
		lo, hi := span(ch, per, len(buf))
		k := g.nextSlot()
		copy(g.seg.slotMem(g.rank, k), buf[lo:hi])
		if err := g.step(c); err != nil {
			return err
		}
		for r := range out {
			copy(out[r][lo:hi], g.seg.slotMem(r, k))
		}
	}
	return nil
}

// splitBytes cuts b into n equal parts.
func splitBytes(b []byte, n int) [][]byte {
	out := make([][]byte, n)
	per := len(b) / n
	for i := range out {
		out[i] = b[i*per : (i+1)*per]
	}
	return out
}

// AllGatherInto gathers every rank's t into out, rank after rank along
// the first dimension (all_gather_into_tensor): out holds Size() times t's
// elements, of t's dtype.
func (g *Group) AllGatherInto(ctx context.Context, out, t *tensor.Tensor) error {
	return g.AllGatherIntoAsync(blocking(ctx), out, t).Wait(context.Background())
}

// AllGatherIntoAsync is AllGatherInto returning at once with a handle.
func (g *Group) AllGatherIntoAsync(ctx context.Context, out, t *tensor.Tensor) *Work {
	desc := "all_gather_into_tensor " + describe(t)
	return g.submit(ctx, func(ctx context.Context) error {
		if out.DType() != t.DType() || out.Numel() != t.Numel()*len(g.ranks) {
			return fmt.Errorf("dist: all_gather_into_tensor: output %s must hold %d×%d elements of %s", describe(out), len(g.ranks), t.Numel(), t.DType())
		}
		c, err := g.begin(ctx, desc)
		if err != nil {
			return err
		}
		return withBytes([]*tensor.Tensor{t}, false, func(in [][]byte) error {
			return withBytes([]*tensor.Tensor{out}, true, func(ob [][]byte) error {
				return g.eng.allGather(c, in[0], splitBytes(ob[0], len(g.ranks)))
			})
		})
	})
}

// ReduceScatterTensor reduces in (Size() equal parts, rank after rank)
// across the group and leaves in out this rank's part of the result
// (reduce_scatter_tensor).
func (g *Group) ReduceScatterTensor(ctx context.Context, out, in *tensor.Tensor, op ReduceOp) error {
	return g.ReduceScatterTensorAsync(blocking(ctx), out, in, op).Wait(context.Background())
}

// ReduceScatterTensorAsync is ReduceScatterTensor returning at once with a handle.
func (g *Group) ReduceScatterTensorAsync(ctx context.Context, out, in *tensor.Tensor, op ReduceOp) *Work {
	desc := "reduce_scatter_tensor(" + op.String() + ") " + describe(out)
	return g.submit(ctx, func(ctx context.Context) error {
		if err := checkReduce(op, out.DType()); err != nil {
			return err
		}
		if in.DType() != out.DType() || in.Numel() != out.Numel()*len(g.ranks) {
			return fmt.Errorf("dist: reduce_scatter_tensor: input %s must hold %d×%d elements of %s", describe(in), len(g.ranks), out.Numel(), out.DType())
		}
		c, err := g.begin(ctx, desc)
		if err != nil {
			return err
		}
		return withBytes([]*tensor.Tensor{in}, false, func(ib [][]byte) error {
			return withBytes([]*tensor.Tensor{out}, true, func(ob [][]byte) error {
				return g.eng.reduceScatter(c, splitBytes(ib[0], len(g.ranks)), ob[0], out.DType(), op)
			})
		})
	})
}

func (g *Group) reduceScatterBytes(c *call, in [][]byte, out []byte, dt dtype.DType, op ReduceOp) error {
	return g.exchange(c, in, func(k int, lo, hi, sec int) {
		srcs := make([][]byte, len(g.ranks))
		for r := range g.ranks {
			srcs[r] = g.seg.slotMem(r, k)[g.rank*sec : g.rank*sec+(hi-lo)]
		}
		reduceBytes(out[lo:hi], srcs, dt, op, len(g.ranks))
	}, dt.Size())
}

// ReduceScatter reduces ins across the group and leaves in out the part of
// this rank (reduce_scatter): out = op over ranks r' of r's ins[Rank()].
func (g *Group) ReduceScatter(ctx context.Context, out *tensor.Tensor, ins []*tensor.Tensor, op ReduceOp) error {
	return g.ReduceScatterAsync(blocking(ctx), out, ins, op).Wait(context.Background())
}

// ReduceScatterAsync is ReduceScatter returning at once with a handle.
func (g *Group) ReduceScatterAsync(ctx context.Context, out *tensor.Tensor, ins []*tensor.Tensor, op ReduceOp) *Work {
	desc := "reduce_scatter(" + op.String() + ") " + describe(out)
	return g.submit(ctx, func(ctx context.Context) error {
		if err := checkReduce(op, out.DType()); err != nil {
			return err
		}
		if err := checkLike("reduce_scatter", out, ins, len(g.ranks)); err != nil {
			return err
		}
		c, err := g.begin(ctx, desc)
		if err != nil {
			return err
		}
		return withBytes(ins, false, func(in [][]byte) error {
			return withBytes([]*tensor.Tensor{out}, true, func(ob [][]byte) error {
				return g.eng.reduceScatter(c, in, ob[0], out.DType(), op)
			})
		})
	})
}

// AllToAll sends ins[r] to group rank r and receives rank r's tensor for
// this rank into outs[r] (all_to_all). All tensors have one dtype and size.
func (g *Group) AllToAll(ctx context.Context, outs, ins []*tensor.Tensor) error {
	return g.AllToAllAsync(blocking(ctx), outs, ins).Wait(context.Background())
}

// AllToAllAsync is AllToAll returning at once with a handle.
func (g *Group) AllToAllAsync(ctx context.Context, outs, ins []*tensor.Tensor) *Work {
	var desc string
	if len(ins) > 0 {
		desc = "all_to_all " + describe(ins[0])
	}
	return g.submit(ctx, func(ctx context.Context) error {
		if len(ins) == 0 {
			return errors.New("dist: all_to_all: no input tensors")
		}
		if err := checkLike("all_to_all", ins[0], ins, len(g.ranks)); err != nil {
			return err
		}
		if err := checkLike("all_to_all", ins[0], outs, len(g.ranks)); err != nil {
			return err
		}
		c, err := g.begin(ctx, desc)
		if err != nil {
			return err
		}
		return withBytes(ins, false, func(in [][]byte) error {
			return withBytes(outs, true, func(ob [][]byte) error {
				return g.eng.allToAll(c, in, ob, ins[0].DType().Size())
			})
		})
	})
}

// allToAllBytes is the built-in engine's all_to_all.
func (g *Group) allToAllBytes(c *call, in, out [][]byte, es int) error {
	return g.exchange(c, in, func(k int, lo, hi, sec int) {
		for r := range g.ranks {
			copy(out[r][lo:hi], g.seg.slotMem(r, k)[g.rank*sec:g.rank*sec+(hi-lo)])
		}
	}, es)
}

// exchange moves per-destination buffers through the slots: each chunk,
// every rank copies in[q]'s chunk into section q of its slot, steps, and
// consume reads section Rank() of every rank's slot.
func (g *Group) exchange(c *call, in [][]byte, consume func(k, lo, hi, sec int), es int) error {
	N := len(g.ranks)
	sec := g.seg.slot / N / es * es
	if sec == 0 {
		return fmt.Errorf("dist: slot of %d bytes too small for %d ranks", g.seg.slot, N)
	}
	n := len(in[0])
	for ch := range nChunks(n, sec) {
		lo, hi := span(ch, sec, n)
		k := g.nextSlot()
		mine := g.seg.slotMem(g.rank, k)
		for q := range N {
			copy(mine[q*sec:], in[q][lo:hi])
		}
		if err := g.step(c); err != nil {
			return err
		}
		consume(k, lo, hi, sec)
	}
	return nil
}

// Send sends t to group rank dst (send). It returns once t is copied out
// (up to two slots are buffered), not when dst has received it.
func (g *Group) Send(ctx context.Context, t *tensor.Tensor, dst int) error {
	return g.SendAsync(ctx, t, dst).Wait(context.Background())
}

// SendAsync is Send returning at once with a handle (isend).
func (g *Group) SendAsync(ctx context.Context, t *tensor.Tensor, dst int) *Work {
	desc := describe(t)
	return g.submitP2P(ctx, "send"+strconv.Itoa(dst), func(ctx context.Context) error {
		if dst < 0 || dst >= len(g.ranks) || dst == g.rank {
			return fmt.Errorf("dist: send: dst %d is not another rank of group %s (size %d, this rank %d)", dst, g.name, len(g.ranks), g.rank)
		}
		if f := g.failure(); f != nil {
			return fmt.Errorf("dist: send to %d in group %s: %w: %v", dst, g.name, ErrAborted, f)
		}
		c := &call{ctx: ctx, seq: g.p2pSent[dst], desc: fmt.Sprintf("send %s to rank %d", desc, g.ranks[dst]), timeout: g.timeout, checked: true, p2p: true}
		return withBytes([]*tensor.Tensor{t}, false, func(bs [][]byte) error {
			return g.eng.send(c, bs[0], dst, desc)
		})
	})
}

// sendBytes is the built-in engine's send.
func (g *Group) sendBytes(c *call, buf []byte, dst int, desc string) error {
	box := g.seg.mailbox(g.rank, dst)
	prod, cons := g.seg.u64(box), g.seg.u64(box+64)
	per := g.seg.p2p - msgHeader
	for ch := range nChunks(len(buf), per) {
		lo, hi := span(ch, per, len(buf))
		j := g.p2pSent[dst]
		if err := g.waitPeers(c, func(int) bool { return cons.Load()+1 >= j }, []int{dst}); err != nil {
			return g.fail(err)
		}
		slot := g.seg.p2pSlot(g.rank, dst, int(j%2))
		writeMsgHeader(slot, desc)
		copy(slot[msgHeader:], buf[lo:hi])
		prod.Store(j + 1)
		g.p2pSent[dst]++
	}
	return nil
}

func writeMsgHeader(slot []byte, desc string) {
	desc = desc[:min(len(desc), msgHeader-4)]
	slot[0], slot[1], slot[2], slot[3] = byte(len(desc)), byte(len(desc)>>8), 0, 0
	copy(slot[4:], desc)
}

func readMsgHeader(slot []byte) string {
	n := min(int(slot[0])|int(slot[1])<<8, msgHeader-4)
	return string(slot[4 : 4+n])
}

// Recv receives into t a tensor that group rank src sends (recv). The
// sender's dtype and shape must match t's.
func (g *Group) Recv(ctx context.Context, t *tensor.Tensor, src int) error {
	return g.RecvAsync(ctx, t, src).Wait(context.Background())
}

// RecvAsync is Recv returning at once with a handle (irecv).
func (g *Group) RecvAsync(ctx context.Context, t *tensor.Tensor, src int) *Work {
	desc := describe(t)
	return g.submitP2P(ctx, "recv"+strconv.Itoa(src), func(ctx context.Context) error {
		if src < 0 || src >= len(g.ranks) || src == g.rank {
			return fmt.Errorf("dist: recv: src %d is not another rank of group %s (size %d, this rank %d)", src, g.name, len(g.ranks), g.rank)
		}
		if f := g.failure(); f != nil {
			return fmt.Errorf("dist: recv from %d in group %s: %w: %v", src, g.name, ErrAborted, f)
		}
		c := &call{ctx: ctx, seq: g.p2pRecv[src], desc: fmt.Sprintf("recv %s from rank %d", desc, g.ranks[src]), timeout: g.timeout, checked: true, p2p: true}
		return withBytes([]*tensor.Tensor{t}, true, func(bs [][]byte) error {
			return g.eng.recv(c, bs[0], src, desc)
		})
	})
}

// recvBytes is the built-in engine's recv.
func (g *Group) recvBytes(c *call, buf []byte, src int, desc string) error {
	box := g.seg.mailbox(src, g.rank)
	prod, cons := g.seg.u64(box), g.seg.u64(box+64)
	per := g.seg.p2p - msgHeader
	for ch := range nChunks(len(buf), per) {
		lo, hi := span(ch, per, len(buf))
		j := g.p2pRecv[src]
		if err := g.waitPeers(c, func(int) bool { return prod.Load() >= j+1 }, []int{src}); err != nil {
			return g.fail(err)
		}
		slot := g.seg.p2pSlot(src, g.rank, int(j%2))
		if got := readMsgHeader(slot); got != desc {
			return g.fail(g.errorf(c, "mismatch", []int{src}, "rank %d sent %s but rank %d (this rank) receives %s", g.ranks[src], got, g.global, desc))
		}
		copy(buf[lo:hi], slot[msgHeader:])
		cons.Store(j + 1)
		g.p2pRecv[src]++
	}
	return nil
}

func (g *Group) checkRoot(what string, root int) error {
	if root < 0 || root >= len(g.ranks) {
		return fmt.Errorf("dist: %s: rank %d is not a rank of group %s (size %d)", what, root, g.name, len(g.ranks))
	}
	return nil
}

// Reduce reduces t across the group into group rank dst's t (reduce);
// the other ranks' t are left unchanged.
func (g *Group) Reduce(ctx context.Context, t *tensor.Tensor, dst int, op ReduceOp) error {
	return g.ReduceAsync(blocking(ctx), t, dst, op).Wait(context.Background())
}

// ReduceAsync is Reduce returning at once with a handle.
func (g *Group) ReduceAsync(ctx context.Context, t *tensor.Tensor, dst int, op ReduceOp) *Work {
	desc := fmt.Sprintf("reduce(%s, dst=%d) %s", op, dst, describe(t))
	return g.submit(ctx, func(ctx context.Context) error {
		if err := checkReduce(op, t.DType()); err != nil {
			return err
		}
		if err := g.checkRoot("reduce", dst); err != nil {
			return err
		}
		c, err := g.begin(ctx, desc)
		if err != nil {
			return err
		}
		me := g.rank == dst
		return withBytes([]*tensor.Tensor{t}, me, func(bs [][]byte) error {
			return g.eng.reduce(c, bs[0], t.DType(), op, dst)
		})
	})
}

// Gather collects every rank's t into outs on group rank dst (gather);
// outs is ignored (may be nil) on the other ranks.
func (g *Group) Gather(ctx context.Context, outs []*tensor.Tensor, t *tensor.Tensor, dst int) error {
	return g.GatherAsync(blocking(ctx), outs, t, dst).Wait(context.Background())
}

// GatherAsync is Gather returning at once with a handle.
func (g *Group) GatherAsync(ctx context.Context, outs []*tensor.Tensor, t *tensor.Tensor, dst int) *Work {
	desc := fmt.Sprintf("gather(dst=%d) %s", dst, describe(t))
	return g.submit(ctx, func(ctx context.Context) error {
		if err := g.checkRoot("gather", dst); err != nil {
			return err
		}
		me := g.rank == dst
		if me {
			if err := checkLike("gather", t, outs, len(g.ranks)); err != nil {
				return err
			}
		} else {
			outs = nil
		}
		c, err := g.begin(ctx, desc)
		if err != nil {
			return err
		}
		return withBytes([]*tensor.Tensor{t}, false, func(in [][]byte) error {
			return withBytes(outs, true, func(out [][]byte) error {
				if !me {
					out = nil
				}
				return g.eng.gather(c, in[0], out, dst)
			})
		})
	})
}

// Scatter sends ins[r] of group rank src to rank r's t (scatter); ins is
// ignored (may be nil) on the other ranks.
func (g *Group) Scatter(ctx context.Context, t *tensor.Tensor, ins []*tensor.Tensor, src int) error {
	return g.ScatterAsync(blocking(ctx), t, ins, src).Wait(context.Background())
}

// ScatterAsync is Scatter returning at once with a handle.
func (g *Group) ScatterAsync(ctx context.Context, t *tensor.Tensor, ins []*tensor.Tensor, src int) *Work {
	desc := fmt.Sprintf("scatter(src=%d) %s", src, describe(t))
	return g.submit(ctx, func(ctx context.Context) error {
		if err := g.checkRoot("scatter", src); err != nil {
			return err
		}
		me := g.rank == src
		if me {
			if err := checkLike("scatter", t, ins, len(g.ranks)); err != nil {
				return err
			}
		} else {
			ins = nil
		}
		c, err := g.begin(ctx, desc)
		if err != nil {
			return err
		}
		return withBytes(ins, false, func(in [][]byte) error {
			return withBytes([]*tensor.Tensor{t}, true, func(ob [][]byte) error {
				return g.eng.scatter(c, in, ob[0], src, t.DType().Size())
			})
		})
	})
}

// scatterBytes is the built-in engine's scatter (in is nil off src).
func (g *Group) scatterBytes(c *call, in [][]byte, out []byte, src, es int) error {
	N := len(g.ranks)
	sec := g.seg.slot / N / es * es
	n := len(out)
	for ch := range nChunks(n, sec) {
		lo, hi := span(ch, sec, n)
		k := g.nextSlot()
		if g.rank == src {
			mine := g.seg.slotMem(g.rank, k)
			for q := range N {
				copy(mine[q*sec:], in[q][lo:hi])
			}
		}
		if err := g.step(c); err != nil {
			return err
		}
		copy(out[lo:hi], g.seg.slotMem(src, k)[g.rank*sec:g.rank*sec+(hi-lo)])
	}
	return nil
}
