package dist

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/tensor"
)

// DefaultBucketBytes is DDP's gradient bucket size (torch's bucket_cap_mb=25).
const DefaultBucketBytes = 25 << 20

// DDPOptions configure NewDDP.
type DDPOptions struct {
	// BucketBytes caps a gradient bucket (default DefaultBucketBytes).
	BucketBytes int
	// NoBroadcast skips copying rank 0's parameters to every rank at
	// construction (do it when every rank already starts equal).
	NoBroadcast bool
}

// DDP is data-parallel training (torch's DistributedDataParallel) over a
// group: each rank runs the model on its part of the batch, and the
// gradients are averaged over the ranks, so that with equal local batches
// a step equals one process's step over the global batch.
//
// Gradients are packed into buckets in the order backward produces them
// (parameters in reverse); as soon as every gradient of a bucket is ready
// — while backward still runs — the bucket's all-reduce starts
// asynchronously (tensor.RegisterGradReadyHook). Call Sync after
// Backward (or use Backward): it waits for the buckets and sets each
// parameter's Grad to its previous value plus the averaged gradient of
// the pass.
type DDP struct {
	g       *Group
	params  []*tensor.Tensor
	buckets []*bucket
	where   map[*tensor.Tensor]slotRef

	mu          sync.Mutex
	next        int // first bucket not launched in this pass
	launchedBwd int // buckets launched from inside backward (last pass)
	err         error
}

type slotRef struct{ bucket, index int }

type bucket struct {
	dt     dtype.DType
	params []*tensor.Tensor
	offs   []int // byte offsets in flat
	flat   *tensor.Tensor
	ready  []bool
	prev   []*tensor.Tensor // Grad before the pass
	nready int
	work   *Work
}

// NewDDP wraps params (nn.Parameters(model)) for data-parallel training on
// g. Every rank must call it with the same parameters in the same order.
func NewDDP(ctx context.Context, g *Group, params []*tensor.Tensor, opts DDPOptions) (*DDP, error) {
	if opts.BucketBytes <= 0 {
		opts.BucketBytes = DefaultBucketBytes
	}
	d := &DDP{g: g, where: map[*tensor.Tensor]slotRef{}}
	for _, p := range params {
		if p.RequiresGrad() {
			d.params = append(d.params, p)
		}
	}
	if len(d.params) == 0 {
		return nil, errors.New("dist: ddp: no parameters that require grad")
	}
	if !opts.NoBroadcast {
		for i, p := range d.params {
			var err error
			tensor.NoGrad(func() { err = g.Broadcast(ctx, p, 0) })
			if err != nil {
				return nil, fmt.Errorf("dist: ddp: broadcast parameter %d: %w", i, err)
			}
		}
	}
	// Buckets in reverse parameter order, one dtype each.
	var cur *bucket
	size := 0
	for i := len(d.params) - 1; i >= 0; i-- {
		p := d.params[i]
		nb := p.Numel() * p.DType().Size()
		if cur == nil || cur.dt != p.DType() || (size > 0 && size+nb > opts.BucketBytes) {
			cur = &bucket{dt: p.DType()}
			d.buckets = append(d.buckets, cur)
			size = 0
		}
		d.where[p] = slotRef{len(d.buckets) - 1, len(cur.params)}
		cur.params = append(cur.params, p)
		cur.offs = append(cur.offs, size)
		size += nb
	}
	for _, b := range d.buckets {
		n := 0
		for _, p := range b.params {
			n += p.Numel()
		}
		if err := tensor.Catch(func() { b.flat = tensor.Zeros(tensor.MustDevice("cpu"), b.dt, n) }); err != nil {
			return nil, fmt.Errorf("dist: ddp: bucket buffer: %w", err)
		}
		b.ready = make([]bool, len(b.params))
		b.prev = make([]*tensor.Tensor, len(b.params))
	}
	for _, p := range d.params {
		p.RegisterGradReadyHook(func(grad *tensor.Tensor) { d.ready(p, grad) })
	}
	return d, nil
}

// ready copies p's gradient of this pass into its bucket and launches
// every bucket that is complete, in bucket order.
func (d *DDP) ready(p *tensor.Tensor, grad *tensor.Tensor) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ref := d.where[p]
	b := d.buckets[ref.bucket]
	if b.ready[ref.index] {
		return
	}
	d.fill(b, ref.index, grad)
	d.launchReady(true)
}

// fill copies grad (nil: zeros) into slot i of b.
func (d *DDP) fill(b *bucket, i int, grad *tensor.Tensor) {
	p := b.params[i]
	b.prev[i] = p.Grad()
	b.ready[i] = true
	b.nready++
	off := b.offs[i]
	nb := p.Numel() * p.DType().Size()
	ok := b.flat.WithHostBytes(true, func(dst []byte) {
		dst = dst[off : off+nb]
		if grad == nil {
			clear(dst)
			return
		}
		g := grad.ToDType(b.dt)
		if !g.WithHostBytes(false, func(src []byte) { copy(dst, src) }) {
			copy(dst, g.Bytes())
		}
	})
	if !ok && d.err == nil {
		d.err = errors.New("dist: ddp: bucket buffer is not in host memory")
	}
}

// launchReady starts the all-reduce of every complete bucket from d.next.
func (d *DDP) launchReady(inBackward bool) {
	for d.next < len(d.buckets) {
		b := d.buckets[d.next]
		if b.nready < len(b.params) {
			return
		}
		b.work = d.g.AllReduceAsync(context.Background(), b.flat, Avg)
		if inBackward {
			d.launchedBwd++
		}
		d.next++
	}
}

// Backward runs loss.Backward and Sync.
func (d *DDP) Backward(ctx context.Context, loss *tensor.Tensor) error {
	if err := tensor.Catch(func() { loss.Backward() }); err != nil {
		d.reset()
		return err
	}
	return d.Sync(ctx)
}

// Sync finishes the gradient exchange of the pass that just ran backward:
// parameters that got no gradient contribute zeros, the remaining buckets
// are launched, every bucket is waited for, and each parameter's Grad
// becomes its value before the pass plus the averaged gradient.
func (d *DDP) Sync(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	defer d.resetLocked()
	for _, b := range d.buckets {
		for i := range b.params {
			if !b.ready[i] {
				d.fill(b, i, nil)
			}
		}
	}
	d.launchReady(false)
	if d.err != nil {
		return d.err
	}
	for bi, b := range d.buckets {
		if err := b.work.Wait(ctx); err != nil {
			return fmt.Errorf("dist: ddp: gradient bucket %d: %w", bi, err)
		}
	}
	return tensor.Catch(func() {
		for _, b := range d.buckets {
			b.flat.WithHostBytes(false, func(raw []byte) {
				for i, p := range b.params {
					avg := raw[b.offs[i] : b.offs[i]+p.Numel()*p.DType().Size()]
					// Backward left Grad = previous + this pass's local
					// gradient; with no previous gradient (ZeroGrad sets
					// none) that tensor is overwritten in place.
					if cur := p.Grad(); b.prev[i] == nil && cur != nil && cur.DType() == b.dt &&
						cur.WithHostBytes(true, func(dst []byte) { copy(dst, avg) }) {
						continue
					}
					g := tensor.FromBytes(p.Device(), b.dt, p.Shape(), avg)
					if b.prev[i] != nil {
						g = b.prev[i].Add(g)
					}
					p.SetGrad(g)
				}
			})
		}
	})
}

func (d *DDP) reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.resetLocked()
}

func (d *DDP) resetLocked() {
	for _, b := range d.buckets {
		clear(b.ready)
		clear(b.prev)
		b.nready = 0
		b.work = nil
	}
	d.next = 0
	d.err = nil
}

// DDPStats count DDP's buckets and their launches.
type DDPStats struct {
	Buckets int `json:"buckets"`
	// LaunchedInBackward counts the bucket all-reduces that started while
	// backward was still running, since the previous Stats call.
	LaunchedInBackward int `json:"launched_in_backward"`
}

// Stats returns the bucket count and how many bucket all-reduces started
// during backward since the previous call (every pass launches each bucket
// once).
func (d *DDP) Stats() DDPStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := DDPStats{Buckets: len(d.buckets), LaunchedInBackward: d.launchedBwd}
	d.launchedBwd = 0
	return s
}
