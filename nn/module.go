// Package nn holds neural-network modules with PyTorch's names, defaults and
// state-dict keys, so checkpoints interoperate with torch.nn and Hugging Face.
//
// A module is a Go struct that embeds Base and registers its parameters,
// buffers and submodules in its constructor, in PyTorch's order:
//
//	type MLP struct {
//		nn.Base
//		FC1, FC2 *nn.Linear
//	}
//	func NewMLP(dev device.Device) *MLP {
//		m := &MLP{FC1: nn.NewLinear(dev, 784, 128, true), FC2: nn.NewLinear(dev, 128, 10, true)}
//		m.RegisterModule("fc1", m.FC1)
//		m.RegisterModule("fc2", m.FC2)
//		return m
//	}
//
// NamedParameters(m) then yields "fc1.weight", "fc1.bias", ... exactly as
// torch.nn.Module.named_parameters.
package nn

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gotpu/gotpu/tensor"
)

// Module is anything that embeds Base.
type Module interface {
	base() *Base
}

type namedTensor struct {
	name string
	t    *tensor.Tensor
}

type namedModule struct {
	name string
	m    Module
}

// Base holds a module's registered parameters, buffers and children, and its
// training flag. Embed it in every module.
type Base struct {
	params   []namedTensor
	buffers  []namedTensor
	children []namedModule
	eval     bool // PyTorch modules start in training mode
	// nonPersistent names buffers left out of the state dict.
	nonPersistent map[string]bool
}

func (b *Base) base() *Base { return b }

// RegisterParameter adds a parameter (a leaf that requires grad; nil is
// allowed for an absent optional parameter such as a disabled bias) and
// returns it.
func (b *Base) RegisterParameter(name string, t *tensor.Tensor) *tensor.Tensor {
	b.checkName(name)
	if t != nil && !t.RequiresGrad() {
		t.SetRequiresGrad(true)
	}
	b.params = append(b.params, namedTensor{name, t})
	return t
}

// RegisterBuffer adds a buffer (state that is not trained, such as batch
// norm's running mean); persistent buffers are part of the state dict.
func (b *Base) RegisterBuffer(name string, t *tensor.Tensor, persistent bool) *tensor.Tensor {
	b.checkName(name)
	b.buffers = append(b.buffers, namedTensor{name, t})
	if !persistent {
		if b.nonPersistent == nil {
			b.nonPersistent = map[string]bool{}
		}
		b.nonPersistent[name] = true
	}
	return t
}

// RegisterModule adds a child module under name.
func (b *Base) RegisterModule(name string, m Module) {
	b.checkName(name)
	b.children = append(b.children, namedModule{name, m})
}

func (b *Base) checkName(name string) {
	if name == "" || strings.Contains(name, ".") {
		panic(fmt.Sprintf("nn: invalid attribute name %q", name))
	}
	for _, p := range b.params {
		if p.name == name {
			panic("nn: attribute " + name + " already registered")
		}
	}
	for _, p := range b.buffers {
		if p.name == name {
			panic("nn: attribute " + name + " already registered")
		}
	}
	for _, c := range b.children {
		if c.name == name {
			panic("nn: attribute " + name + " already registered")
		}
	}
}

// SetParameter replaces a registered parameter (used when loading weights
// that cannot be copied in place, e.g. onto another device).
func (b *Base) SetParameter(name string, t *tensor.Tensor) {
	for i := range b.params {
		if b.params[i].name == name {
			b.params[i].t = t
			return
		}
	}
	panic("nn: no parameter " + name)
}

// Training reports whether the module is in training mode.
func (b *Base) Training() bool { return !b.eval }

// Named is a tensor with its dotted state-dict name.
type Named struct {
	Name   string
	Tensor *tensor.Tensor
}

func walk(prefix string, m Module, fn func(prefix string, b *Base)) {
	b := m.base()
	fn(prefix, b)
	for _, c := range b.children {
		if c.m == nil {
			continue
		}
		walk(prefix+c.name+".", c.m, fn)
	}
}

// NamedParameters returns the parameters of m and its descendants with
// dotted names, in registration order, each tensor once (shared parameters
// are reported under their first name, as PyTorch does).
func NamedParameters(m Module) []Named {
	var out []Named
	seen := map[*tensor.Tensor]bool{}
	walk("", m, func(prefix string, b *Base) {
		for _, p := range b.params {
			if p.t == nil || seen[p.t] {
				continue
			}
			seen[p.t] = true
			out = append(out, Named{prefix + p.name, p.t})
		}
	})
	return out
}

// Parameters returns the tensors of NamedParameters.
func Parameters(m Module) []*tensor.Tensor {
	np := NamedParameters(m)
	out := make([]*tensor.Tensor, len(np))
	for i, p := range np {
		out[i] = p.Tensor
	}
	return out
}

// NamedBuffers returns the buffers of m and its descendants.
func NamedBuffers(m Module) []Named {
	var out []Named
	walk("", m, func(prefix string, b *Base) {
		for _, p := range b.buffers {
			if p.t != nil {
				out = append(out, Named{prefix + p.name, p.t})
			}
		}
	})
	return out
}

// StateDict returns the parameters and persistent buffers with PyTorch's
// state_dict keys, in PyTorch's order (per module: parameters, then
// buffers, then children). Tensors are shared, not copied; tied weights
// appear under every name, as in PyTorch.
func StateDict(m Module) []Named {
	var out []Named
	var rec func(prefix string, m Module)
	rec = func(prefix string, m Module) {
		b := m.base()
		for _, p := range b.params {
			if p.t != nil {
				out = append(out, Named{prefix + p.name, p.t})
			}
		}
		for _, p := range b.buffers {
			if p.t != nil && !b.nonPersistent[p.name] {
				out = append(out, Named{prefix + p.name, p.t})
			}
		}
		for _, c := range b.children {
			if c.m != nil {
				rec(prefix+c.name+".", c.m)
			}
		}
	}
	rec("", m)
	return out
}

// ErrStateDict is wrapped by LoadStateDict's errors.
var ErrStateDict = errors.New("state dict mismatch")

// LoadStateDict copies tensors from sd into m's parameters and buffers by
// name (in place, converting dtype and device). With strict, missing and
// unexpected keys are an error listing them; a shape mismatch is always an
// error naming the key and both shapes.
func LoadStateDict(m Module, sd map[string]*tensor.Tensor, strict bool) error {
	own := StateDict(m)
	var missing, shapeErrs []string
	used := map[string]bool{}
	for _, p := range own {
		src, ok := sd[p.Name]
		if !ok {
			missing = append(missing, p.Name)
			continue
		}
		used[p.Name] = true
		if !slices.Equal(src.Shape(), p.Tensor.Shape()) {
			shapeErrs = append(shapeErrs, fmt.Sprintf("%s: checkpoint shape %v, model shape %v", p.Name, src.Shape(), p.Tensor.Shape()))
		}
	}
	var unexpected []string
	for k := range sd {
		if !used[k] {
			unexpected = append(unexpected, k)
		}
	}
	sort.Strings(unexpected)
	if len(shapeErrs) > 0 {
		return fmt.Errorf("nn: %w: size mismatch: %s", ErrStateDict, strings.Join(shapeErrs, "; "))
	}
	if strict && (len(missing) > 0 || len(unexpected) > 0) {
		return fmt.Errorf("nn: %w: missing keys %v, unexpected keys %v", ErrStateDict, missing, unexpected)
	}
	err := tensor.Catch(func() {
		tensor.NoGrad(func() {
			for _, p := range own {
				if src, ok := sd[p.Name]; ok {
					tensor.Apply("copy_", []*tensor.Tensor{p.Tensor, src.To(p.Tensor.Device())}, nil)
				}
			}
		})
	})
	if err != nil {
		return fmt.Errorf("nn: loading state dict: %w", err)
	}
	return nil
}

// SetTraining puts m and its descendants in training (true) or evaluation
// mode (Module.train / Module.eval).
func SetTraining(m Module, on bool) {
	walk("", m, func(_ string, b *Base) { b.eval = !on })
}

// ZeroGrad clears the gradients of m's parameters (set_to_none, PyTorch's
// default).
func ZeroGrad(m Module) {
	for _, p := range Parameters(m) {
		p.SetGrad(nil)
	}
}
