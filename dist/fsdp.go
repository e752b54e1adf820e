package dist

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/nn"
	"github.com/gotpu/gotpu/tensor"
)

// FSDPOptions configure NewFSDP.
type FSDPOptions struct {
	// KeepAfterForward keeps a unit's full parameters from its forward
	// until its backward has used them (torch's
	// reshard_after_forward=False): one all-gather per unit and step
	// instead of two, for the memory of every unit's full parameters held
	// from forward to backward. By default they are freed after forward
	// and gathered again when backward reaches the unit.
	KeepAfterForward bool
	// NoBroadcast skips copying rank 0's parameters to every rank at
	// construction (do it when every rank already starts equal).
	NoBroadcast bool
}

// FSDPUnit is what NewFSDP gathers and frees together: the parameters of
// one layer or block (torch wraps each such submodule in its own FSDP).
// Names are the parameters' state-dict names (checkpoints use them).
type FSDPUnit struct {
	Name   string
	Params []nn.Named
}

// ModuleUnit makes the unit of module m's parameters, named as in the
// state dict of the model that holds m under prefix ("" for the model
// itself, "fc1" for its child fc1).
func ModuleUnit(prefix string, m nn.Module) FSDPUnit {
	u := FSDPUnit{Name: prefix}
	for _, p := range nn.NamedParameters(m) {
		if prefix != "" {
			p.Name = prefix + "." + p.Name
		}
		u.Params = append(u.Params, p)
	}
	return u
}

// FSDP is fully sharded data parallelism (torch's FullyShardedDataParallel,
// ZeRO stage 3) over a group: data-parallel like DDP, but each rank keeps
// only its 1/Size() of every unit's parameters, gradients and optimizer
// state.
//
// Each unit's parameters are flattened in order into one vector, padded
// with zeros to a multiple of Size(); rank r owns elements [r·S, (r+1)·S)
// (S = ShardLen), a 1-D tensor that requires grad. Parameters returns
// these shards: build the optimizer over them, and it steps only the
// local shard, so its state (Adam's moments) is sharded too.
//
// The module's own parameter tensors stay in the module (its Forward is
// unchanged) but hold no memory between uses: their storage is released
// (tensor.ReleaseStorage, torch's storage resize_(0)), and reading one
// outside Unit.Forward or SummonFullParams panics as a use of freed
// storage. Unit.Forward all-gathers the unit's shards (AllGatherInto)
// into the parameters, runs the layer, and releases them again (unless
// KeepAfterForward); a hook on the layer's output gathers them once more
// when backward reaches the layer, in place (so the tensors autograd saved
// in forward see the values again), and releases them when the unit's
// gradients are complete. The unit's gradient is then reduce-scattered
// (ReduceScatterTensor, average) into the local shard's Grad, started
// asynchronously while backward continues; Backward or Sync after backward
// waits for it.
//
// Memory per rank, for P parameter elements in units of at most U: the
// shard (P/N), its gradient (P/N) and the optimizer's state (Adam: 2P/N)
// between steps, against 4P for DDP; plus the gathered parameters of the
// unit in use (U, or the whole model from forward to backward with
// KeepAfterForward) and its gradient buffers during a step. gotpu's
// autograd accumulates leaf gradients at the end of Backward, so the full
// gradients of the module's parameters exist from then until Sync drops
// them: the saving is in parameters, optimizer state and the gradient
// between steps, not in backward's peak of gradient memory.
//
// Strict (eager) mode only; every rank must wrap the same units in the
// same order and run the same units in the same order.
type FSDP struct {
	g     *Group
	opts  FSDPOptions
	units []*Unit

	mu     sync.Mutex
	bwdCtx context.Context
	stats  FSDPStats
	held   int // elements of full parameters gathered now
}

// Unit is one unit of an FSDP: its parameters, shard and state.
type Unit struct {
	f        *FSDP
	index    int
	name     string
	names    []string
	params   []*tensor.Tensor
	offs     []int // element offsets in the flat vector
	numel    int
	shardLen int
	dt       dtype.DType
	shard    *tensor.Tensor

	gathered bool
	// gradient exchange of the pass in progress (under f.mu)
	ready    []bool
	nready   int
	gradFull *tensor.Tensor
	gradPart *tensor.Tensor
	work     *Work
}

// FSDPStats count FSDP's collectives and the memory of gathered
// parameters.
type FSDPStats struct {
	Units int `json:"units"`
	// Params and ShardParams are the elements of every unit's parameters
	// and of this rank's shards (with padding).
	Params      int `json:"params"`
	ShardParams int `json:"shard_params"`
	// AllGathers and ReduceScatters count the units' collectives since the
	// previous Stats call; ReduceScattersInBackward those started while
	// backward still ran.
	AllGathers               int `json:"all_gathers"`
	ReduceScatters           int `json:"reduce_scatters"`
	ReduceScattersInBackward int `json:"reduce_scatters_in_backward"`
	// PeakGathered is the most parameter elements held gathered at once
	// since the previous Stats call.
	PeakGathered int `json:"peak_gathered"`
}

// NewFSDP shards units over g. Every rank must call it with the same units
// (names, shapes, dtypes, order). Unless opts.NoBroadcast, rank 0's values
// are the starting point of every rank. On return the module's parameters
// hold no memory (see FSDP).
func NewFSDP(ctx context.Context, g *Group, units []FSDPUnit, opts FSDPOptions) (*FSDP, error) {
	f := &FSDP{g: g, opts: opts}
	if len(units) == 0 {
		return nil, errors.New("dist: fsdp: no units")
	}
	seen := map[*tensor.Tensor]string{}
	N, me := g.Size(), g.Rank()
	for ui, spec := range units {
		u := &Unit{f: f, index: ui, name: spec.Name}
		for _, p := range spec.Params {
			if p.Tensor == nil {
				continue // an absent optional parameter (a disabled bias)
			}
			if prev, ok := seen[p.Tensor]; ok {
				return nil, fmt.Errorf("dist: fsdp: parameter %s of unit %q is also %s (shared parameters must be in one unit)", p.Name, spec.Name, prev)
			}
			seen[p.Tensor] = p.Name
			if !p.Tensor.RequiresGrad() || !p.Tensor.IsLeaf() {
				return nil, fmt.Errorf("dist: fsdp: %s is not a leaf that requires grad", p.Name)
			}
			if len(u.params) == 0 {
				u.dt = p.Tensor.DType()
			} else if p.Tensor.DType() != u.dt || p.Tensor.Device() != u.params[0].Device() {
				return nil, fmt.Errorf("dist: fsdp: unit %q mixes %s on %s (%s) with %s on %s (%s); a unit holds one dtype on one device",
					spec.Name, u.dt, u.params[0].Device(), u.names[0], p.Tensor.DType(), p.Tensor.Device(), p.Name)
			}
			if p.Tensor.StorageReleased() {
				return nil, fmt.Errorf("dist: fsdp: %s holds no memory (already wrapped?)", p.Name)
			}
			u.names = append(u.names, p.Name)
			u.params = append(u.params, p.Tensor)
			u.offs = append(u.offs, u.numel)
			u.numel += p.Tensor.Numel()
		}
		if u.numel == 0 {
			return nil, fmt.Errorf("dist: fsdp: unit %q has no parameter elements", spec.Name)
		}
		u.shardLen = (u.numel + N - 1) / N
		u.ready = make([]bool, len(u.params))
		f.units = append(f.units, u)
	}
	for _, u := range f.units {
		var full *tensor.Tensor
		err := tensor.Catch(func() {
			es := u.dt.Size()
			raw := make([]byte, u.shardLen*N*es)
			for i, p := range u.params {
				copy(raw[u.offs[i]*es:], p.Contiguous().Bytes())
			}
			full = tensor.FromBytes(u.params[0].Device(), u.dt, []int{u.shardLen * N}, raw)
		})
		if err == nil && !opts.NoBroadcast {
			if err = g.Broadcast(ctx, full, 0); err != nil {
				err = fmt.Errorf("broadcast: %w", err)
			}
		}
		if err == nil {
			err = tensor.Catch(func() {
				u.shard = full.Narrow(0, me*u.shardLen, u.shardLen).Clone().SetRequiresGrad(true)
				full.Free()
				for _, p := range u.params {
					p.ReleaseStorage()
				}
			})
		}
		if err != nil {
			return nil, fmt.Errorf("dist: fsdp: unit %q: %w", u.name, err)
		}
		for i, p := range u.params {
			p.RegisterGradReadyHook(func(grad *tensor.Tensor) { u.gradReady(i, grad) })
			// The hook copies the gradient into the unit's reduce-scatter:
			// autograd need not keep the full gradient (nor set Grad).
			p.SetGradConsumedByHooks(true)
		}
	}
	f.stats = FSDPStats{}
	return f, nil
}

// Group returns the group the FSDP shards over.
func (f *FSDP) Group() *Group { return f.g }

// Units returns the units in order.
func (f *FSDP) Units() []*Unit { return f.units }

// Unit returns unit i.
func (f *FSDP) Unit(i int) *Unit { return f.units[i] }

// Parameters returns this rank's shards, one per unit in order: the
// tensors to give the optimizer.
func (f *FSDP) Parameters() []*tensor.Tensor {
	out := make([]*tensor.Tensor, len(f.units))
	for i, u := range f.units {
		out[i] = u.shard
	}
	return out
}

// Name returns the unit's name.
func (u *Unit) Name() string { return u.name }

// Numel returns the number of parameter elements of the unit (without
// padding).
func (u *Unit) Numel() int { return u.numel }

// ShardLen returns the length of each rank's shard of the unit (the last
// rank's includes the padding).
func (u *Unit) ShardLen() int { return u.shardLen }

// Shard returns this rank's shard of the unit (the optimizer's parameter).
func (u *Unit) Shard() *tensor.Tensor { return u.shard }

// Gathered reports whether the unit's parameters hold their full values
// now.
func (u *Unit) Gathered() bool {
	u.f.mu.Lock()
	defer u.f.mu.Unlock()
	return u.gathered
}

// fillParams writes the flat full vector into the unit's parameters
// (restoring their storage) without changing their version counters, so
// that tensors autograd saved from them stay valid.
func (u *Unit) fillParams(full *tensor.Tensor) {
	es := u.dt.Size()
	src := full.Bytes()
	for i, p := range u.params {
		p.RestoreStorage()
		part := src[u.offs[i]*es : (u.offs[i]+p.Numel())*es]
		tensor.PreserveVersion(p, func() {
			if !p.WithHostBytes(true, func(dst []byte) { copy(dst, part) }) {
				tensor.NoGrad(func() { p.CopyFrom(tensor.FromBytes(p.Device(), u.dt, p.Shape(), part)) })
			}
		})
	}
}

// gather all-gathers the unit's full parameters into the module's
// parameter tensors, if they are not gathered.
func (u *Unit) gather(ctx context.Context) error {
	f := u.f
	f.mu.Lock()
	if u.gathered {
		f.mu.Unlock()
		return nil
	}
	f.mu.Unlock()
	var full *tensor.Tensor
	if err := tensor.Catch(func() { full = tensor.Empty(u.shard.Device(), u.dt, u.shardLen*f.g.Size()) }); err != nil {
		return fmt.Errorf("dist: fsdp: unit %q: %w", u.name, err)
	}
	defer full.Free()
	if err := f.g.AllGatherInto(ctx, full, u.shard.Detach()); err != nil {
		return fmt.Errorf("dist: fsdp: gathering unit %q: %w", u.name, err)
	}
	if err := tensor.Catch(func() { u.fillParams(full) }); err != nil {
		return fmt.Errorf("dist: fsdp: unit %q: %w", u.name, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	u.gathered = true
	f.stats.AllGathers++
	f.held += u.numel
	f.stats.PeakGathered = max(f.stats.PeakGathered, f.held)
	return nil
}

// release frees the memory of the unit's full parameters.
func (u *Unit) release() {
	u.f.mu.Lock()
	defer u.f.mu.Unlock()
	u.releaseLocked()
}

func (u *Unit) releaseLocked() {
	if !u.gathered {
		return
	}
	for _, p := range u.params {
		p.ReleaseStorage()
	}
	u.gathered = false
	u.f.held = max(u.f.held-u.numel, 0)
}

// Forward runs fn, the unit's layer, with the unit's full parameters:
// gathered before, released after (unless KeepAfterForward) and gathered
// again when backward reaches fn's output. fn's output must be the only
// way fn's computation reaches the loss (return a tensor that carries it
// all). Panics inside fn (tensor errors) are returned as errors.
func (u *Unit) Forward(ctx context.Context, fn func() *tensor.Tensor) (*tensor.Tensor, error) {
	if err := u.gather(ctx); err != nil {
		return nil, err
	}
	var out *tensor.Tensor
	if err := tensor.Catch(func() { out = fn() }); err != nil {
		u.release()
		return nil, err
	}
	backward := out != nil && out.RequiresGrad() && !out.IsLeaf()
	if !backward || !u.f.opts.KeepAfterForward {
		u.release()
	}
	if backward {
		out.RegisterHook(func(*tensor.Tensor) *tensor.Tensor {
			if err := u.gather(u.f.backwardCtx()); err != nil {
				panic(&tensor.Error{Op: "fsdp pre-backward", Msg: err.Error(), Err: err})
			}
			return nil
		})
	}
	return out, nil
}

func (f *FSDP) backwardCtx() context.Context {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.bwdCtx != nil {
		return f.bwdCtx
	}
	return context.Background()
}

// gradReady records parameter i's gradient of this pass; the unit's
// reduce-scatter starts when every parameter has one.
func (u *Unit) gradReady(i int, grad *tensor.Tensor) {
	f := u.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if u.ready[i] {
		return
	}
	u.fill(i, grad)
	if u.nready == len(u.params) {
		u.launch(true)
	}
}

// fill copies grad (nil: zeros) into slot i of the unit's full gradient.
func (u *Unit) fill(i int, grad *tensor.Tensor) {
	if u.gradFull == nil {
		u.gradFull = tensor.Zeros(u.shard.Device(), u.dt, u.shardLen*u.f.g.Size())
	}
	u.ready[i] = true
	u.nready++
	if grad == nil {
		return
	}
	es := u.dt.Size()
	p := u.params[i]
	src := grad.ToDType(u.dt).Contiguous().Bytes()
	lo := u.offs[i] * es
	if !u.gradFull.WithHostBytes(true, func(dst []byte) { copy(dst[lo:lo+p.Numel()*es], src) }) {
		raw := u.gradFull.Bytes()
		copy(raw[lo:], src)
		u.gradFull = tensor.FromBytes(u.gradFull.Device(), u.dt, u.gradFull.Shape(), raw)
	}
}

// launch starts the unit's reduce-scatter and frees its full parameters
// (backward is done with them).
func (u *Unit) launch(inBackward bool) {
	f := u.f
	// Earlier units whose exchange has finished no longer need their full
	// gradient: free it now rather than at Sync, so that the pass holds
	// the full gradients of the units in flight, not of every unit.
	for _, v := range f.units {
		if v != u && v.work != nil && v.gradFull != nil && v.work.Done() {
			v.gradFull.Free()
			v.gradFull = nil
		}
	}
	u.gradPart = tensor.Empty(u.shard.Device(), u.dt, u.shardLen)
	u.work = f.g.ReduceScatterTensorAsync(context.Background(), u.gradPart, u.gradFull, Avg)
	f.stats.ReduceScatters++
	if inBackward {
		f.stats.ReduceScattersInBackward++
	}
	u.releaseLocked()
}

// Backward runs loss.Backward and Sync.
func (f *FSDP) Backward(ctx context.Context, loss *tensor.Tensor) error {
	f.mu.Lock()
	f.bwdCtx = ctx
	f.mu.Unlock()
	err := tensor.Catch(func() { loss.Backward() })
	f.mu.Lock()
	f.bwdCtx = nil
	f.mu.Unlock()
	if err != nil {
		f.abandon()
		return err
	}
	return f.Sync(ctx)
}

// abandon forgets a failed pass: its exchanges are waited for and dropped
// and every unit is released.
func (f *FSDP) abandon() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, u := range f.units {
		if u.work != nil {
			_ = u.work.Wait(context.Background())
		}
		u.resetLocked()
		u.releaseLocked()
	}
}

func (u *Unit) resetLocked() {
	clear(u.ready)
	u.nready = 0
	u.work = nil
	u.gradFull, u.gradPart = nil, nil
}

// Sync finishes the gradient exchange of the pass that just ran backward
// (loss.Backward called directly): units whose gradients were not all
// produced contribute zeros for the missing ones, every unit's
// reduce-scatter is waited for, each shard's Grad becomes its previous
// value plus the averaged gradient of its part, and the module's
// parameters' own (full) gradients are dropped. Units still gathered are
// released. A unit no rank ran in the pass gets a zero gradient rather
// than none (the ranks cannot know without a collective that nobody did),
// which optimizers with momentum treat differently from a skipped
// parameter.
func (f *FSDP) Sync(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var err error
	for _, u := range f.units {
		if u.work != nil {
			continue
		}
		if e := tensor.Catch(func() {
			for i := range u.params {
				if !u.ready[i] {
					u.fill(i, nil)
				}
			}
			u.launch(false)
		}); e != nil && err == nil {
			err = fmt.Errorf("dist: fsdp: unit %q: %w", u.name, e)
		}
	}
	for _, u := range f.units {
		if u.work == nil {
			continue
		}
		if e := u.work.Wait(ctx); e != nil && err == nil {
			err = fmt.Errorf("dist: fsdp: reduce-scatter of unit %q: %w", u.name, e)
		}
	}
	if err == nil {
		err = tensor.Catch(func() {
			for _, u := range f.units {
				g := u.gradPart
				if prev := u.shard.Grad(); prev != nil {
					g = prev.Add(g)
				}
				u.shard.SetGrad(g)
				if u.gradFull != nil {
					u.gradFull.Free()
				}
			}
		})
	}
	for _, u := range f.units {
		for _, p := range u.params {
			p.SetGrad(nil)
		}
		u.resetLocked()
		u.releaseLocked()
	}
	return err
}

// SummonFullParams gathers every unit's full parameters, runs fn (an
// evaluation, a consolidated state dict) and releases them again
// (torch's summon_full_params with writeback=False: changes fn makes to
// the parameters are discarded). Every rank must call it.
func (f *FSDP) SummonFullParams(ctx context.Context, fn func() error) error {
	defer func() {
		for _, u := range f.units {
			u.release()
		}
	}()
	for _, u := range f.units {
		if err := u.gather(ctx); err != nil {
			return err
		}
	}
	return fn()
}

// Stats returns the unit counts and the collectives and peak gathered
// memory since the previous call.
func (f *FSDP) Stats() FSDPStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.stats
	s.Units = len(f.units)
	for _, u := range f.units {
		s.Params += u.numel
		s.ShardParams += u.shardLen
	}
	f.stats = FSDPStats{PeakGathered: f.held}
	return s
}
