// Package optim holds optimizers (SGD, Adam, AdamW, RMSprop, Adagrad) with
// PyTorch 1.13's update rules, parameter groups and state dicts, learning-rate
// schedulers, and gradient clipping.
package optim

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

// Group is a parameter group: parameters with their own hyper-parameters
// (any option left zero takes the optimizer's default, as in PyTorch's
// param_groups).
type Group struct {
	Params []*tensor.Tensor
	// Options are the group's hyper-parameters by PyTorch's names ("lr",
	// "momentum", "weight_decay", "betas0", "betas1", "eps", ...).
	Options map[string]float64
}

// Optimizer updates parameters from their gradients.
type Optimizer interface {
	// Step applies one update to every parameter that has a gradient.
	Step()
	// ZeroGrad clears the gradients (set_to_none).
	ZeroGrad()
	// Groups returns the parameter groups; schedulers change Options["lr"].
	Groups() []*Group
	// StateDict returns copies of the per-parameter state tensors ("<param
	// index>.<name>", indices counting parameters across groups in order;
	// copies because the optimizer updates its state in place) and the
	// groups' hyper-parameters and step counts as JSON.
	StateDict() (tensors map[string]*tensor.Tensor, meta string)
	// LoadStateDict restores a StateDict. It copies the tensors onto each
	// parameter's device, floating state converted to the parameter's
	// dtype (as torch.optim's load_state_dict), and rejects state whose
	// shape is not its parameter's.
	LoadStateDict(tensors map[string]*tensor.Tensor, meta string) error
}

// base carries what all optimizers share: groups, defaults and state.
type base struct {
	groups   []*Group
	defaults map[string]float64
	state    []map[string]*tensor.Tensor // per parameter (flattened index)
	steps    []int64                     // per parameter step count
}

func newBase(groups []*Group, defaults map[string]float64) *base {
	b := &base{defaults: defaults}
	for _, g := range groups {
		if g.Options == nil {
			g.Options = map[string]float64{}
		}
		for k, v := range defaults {
			if _, ok := g.Options[k]; !ok {
				g.Options[k] = v
			}
		}
		for k := range g.Options {
			if _, ok := defaults[k]; !ok {
				panic(fmt.Sprintf("optim: unknown option %q (known: %v)", k, keys(defaults)))
			}
		}
		b.groups = append(b.groups, g)
		for range g.Params {
			b.state = append(b.state, map[string]*tensor.Tensor{})
			b.steps = append(b.steps, 0)
		}
	}
	return b
}

func keys(m map[string]float64) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Params makes a single group from params.
func Params(params []*tensor.Tensor) []*Group { return []*Group{{Params: params}} }

func (b *base) Groups() []*Group { return b.groups }

func (b *base) ZeroGrad() {
	for _, g := range b.groups {
		for _, p := range g.Params {
			p.SetGrad(nil)
		}
	}
}

// each calls fn for every parameter with a gradient, with its flat index.
func (b *base) each(fn func(i int, g *Group, p, grad *tensor.Tensor)) {
	tensor.NoGrad(func() {
		i := 0
		for _, g := range b.groups {
			for _, p := range g.Params {
				if gr := p.Grad(); gr != nil {
					fn(i, g, p, gr)
				}
				i++
			}
		}
	})
}

type savedMeta struct {
	Groups []map[string]float64 `json:"param_groups"`
	Sizes  []int                `json:"group_sizes"`
	Steps  []int64              `json:"steps"`
}

func (b *base) StateDict() (map[string]*tensor.Tensor, string) {
	out := map[string]*tensor.Tensor{}
	tensor.NoGrad(func() {
		for i, st := range b.state {
			for k, t := range st {
				out[strconv.Itoa(i)+"."+k] = ap("copy", nil, t)
			}
		}
	})
	m := savedMeta{Steps: append([]int64(nil), b.steps...)}
	for _, g := range b.groups {
		m.Groups = append(m.Groups, g.Options)
		m.Sizes = append(m.Sizes, len(g.Params))
	}
	js, _ := json.Marshal(m)
	return out, string(js)
}

func (b *base) LoadStateDict(tensors map[string]*tensor.Tensor, meta string) error {
	var m savedMeta
	if err := json.Unmarshal([]byte(meta), &m); err != nil {
		return fmt.Errorf("optim: bad state meta: %w", err)
	}
	if len(m.Groups) != len(b.groups) {
		return fmt.Errorf("optim: state has %d parameter groups, optimizer has %d", len(m.Groups), len(b.groups))
	}
	if len(m.Sizes) != len(m.Groups) {
		return fmt.Errorf("optim: bad state meta: %d group sizes for %d groups", len(m.Sizes), len(m.Groups))
	}
	for i, g := range b.groups {
		if m.Sizes[i] != len(g.Params) {
			return fmt.Errorf("optim: group %d has %d parameters in the state, %d in the optimizer", i, m.Sizes[i], len(g.Params))
		}
	}
	if len(m.Steps) != len(b.state) {
		return fmt.Errorf("optim: state has %d parameters, optimizer has %d", len(m.Steps), len(b.state))
	}
	state := make([]map[string]*tensor.Tensor, len(b.state))
	for i := range state {
		state[i] = map[string]*tensor.Tensor{}
	}
	params := b.params()
	for k, t := range tensors {
		idx, name, ok := strings.Cut(k, ".")
		i, err := strconv.Atoi(idx)
		if !ok || err != nil || i < 0 || i >= len(state) {
			return fmt.Errorf("optim: bad state key %q", k)
		}
		own, err := ownState(t, params[i])
		if err != nil {
			return fmt.Errorf("optim: state %q: %w", k, err)
		}
		state[i][name] = own
	}
	for i, g := range b.groups {
		for k, v := range m.Groups[i] {
			g.Options[k] = v
		}
	}
	b.state = state
	copy(b.steps, m.Steps)
	return nil
}

// params returns the parameters in flat-index order.
func (b *base) params() []*tensor.Tensor {
	var out []*tensor.Tensor
	for _, g := range b.groups {
		out = append(out, g.Params...)
	}
	return out
}

// ownState returns a private copy of loaded state t for parameter p: on p's
// device, in p's dtype if both are floating, with p's shape.
func ownState(t, p *tensor.Tensor) (own *tensor.Tensor, err error) {
	if t == nil {
		return nil, fmt.Errorf("%w: nil tensor", ErrBadState)
	}
	if !slices.Equal(t.Shape(), p.Shape()) {
		return nil, fmt.Errorf("%w: shape %v, parameter %v", ErrBadState, t.Shape(), p.Shape())
	}
	err = tensor.Catch(func() {
		tensor.NoGrad(func() {
			if t.Device() != p.Device() {
				t = t.To(p.Device())
			}
			if t.DType() != p.DType() && t.DType().IsFloat() && p.DType().IsFloat() {
				own = ap("convert", op.Attrs{"dtype": p.DType()}, t)
			} else {
				own = ap("copy", nil, t)
			}
		})
	})
	return own, err
}

// ErrBadState is returned (wrapped) by LoadStateDict for state that does
// not fit the optimizer's parameters.
var ErrBadState = errors.New("optimizer state does not fit the parameters")

// Helpers over the op table.

func ap(name string, a op.Attrs, in ...*tensor.Tensor) *tensor.Tensor {
	return tensor.Apply1(name, in, a)
}

func add(x, y *tensor.Tensor, alpha float64) *tensor.Tensor {
	if alpha == 1 {
		return ap("add", nil, x, y)
	}
	return ap("add", nil, x, ap("mul", nil, y, tensor.Scalar(alpha)))
}

func scale(x *tensor.Tensor, s float64) *tensor.Tensor { return ap("mul", nil, x, tensor.Scalar(s)) }

func mul(x, y *tensor.Tensor) *tensor.Tensor { return ap("mul", nil, x, y) }

func div(x, y *tensor.Tensor) *tensor.Tensor { return ap("div", nil, x, y) }

func sqrt(x *tensor.Tensor) *tensor.Tensor { return ap("sqrt", nil, x) }

func addScalar(x *tensor.Tensor, s float64) *tensor.Tensor {
	return ap("add", nil, x, tensor.Scalar(s))
}

// zerosLike returns fresh zeros shaped like x (x*0 would carry x's NaNs
// and infinities into the state).
func zerosLike(x *tensor.Tensor) *tensor.Tensor { return tensor.ZerosLike(x) }

// update writes v into parameter p in place.
func update(p, v *tensor.Tensor) { tensor.Apply("copy_", []*tensor.Tensor{p, v}, nil) }

// ClipGradNorm scales the gradients of params so their total p-norm is at
// most maxNorm (torch.nn.utils.clip_grad_norm_) and returns the total norm
// before clipping. normType may be math.Inf(1).
func ClipGradNorm(params []*tensor.Tensor, maxNorm, normType float64) float64 {
	var total float64
	var grads []*tensor.Tensor
	tensor.NoGrad(func() {
		for _, p := range params {
			if g := p.Grad(); g != nil {
				grads = append(grads, g)
			}
		}
		if len(grads) == 0 {
			return
		}
		if math.IsInf(normType, 1) {
			for _, g := range grads {
				total = math.Max(total, ap("amax", nil, ap("abs", nil, g)).Item())
			}
		} else {
			s := 0.0
			for _, g := range grads {
				n := ap("norm", op.Attrs{"p": normType}, g).Item()
				s += math.Pow(n, normType)
			}
			total = math.Pow(s, 1/normType)
		}
		coef := maxNorm / (total + 1e-6)
		if coef < 1 {
			for _, p := range params {
				if g := p.Grad(); g != nil {
					p.SetGrad(scale(g, coef))
				}
			}
		}
	})
	return total
}

// ClipGradValue clamps every gradient element to [-clip, clip]
// (torch.nn.utils.clip_grad_value_).
func ClipGradValue(params []*tensor.Tensor, clip float64) {
	tensor.NoGrad(func() {
		for _, p := range params {
			if g := p.Grad(); g != nil {
				p.SetGrad(ap("clamp", op.Attrs{"min": -clip, "max": clip}, g))
			}
		}
	})
}
