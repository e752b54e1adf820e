package nn

import (
	"strconv"
	"strings"

	"github.com/gotpu/gotpu/tensor"
)

// Sequential runs its layers in order (torch.nn.Sequential). Layers that
// are modules are registered under their index, so state-dict keys read
// "0.weight", "2.bias", ... as in torch.
type Sequential struct {
	Base
	layers []Layer
}

// NewSequential returns a Sequential of layers.
func NewSequential(layers ...Layer) *Sequential {
	s := &Sequential{}
	for _, l := range layers {
		s.Append(l)
	}
	return s
}

// Append adds l at the end and returns s.
func (s *Sequential) Append(l Layer) *Sequential {
	if l == nil {
		fail("Sequential", nil, "layer %d is nil", len(s.layers))
	}
	if m, ok := l.(Module); ok {
		s.RegisterModule(strconv.Itoa(len(s.layers)), m)
	}
	s.layers = append(s.layers, l)
	return s
}

// Len returns the number of layers.
func (s *Sequential) Len() int { return len(s.layers) }

// At returns layer i (negative counts from the end).
func (s *Sequential) At(i int) Layer {
	if i < 0 {
		i += len(s.layers)
	}
	if i < 0 || i >= len(s.layers) {
		fail("Sequential", nil, "index %d is out of range for %d layers", i, len(s.layers))
	}
	return s.layers[i]
}

// Forward passes x through every layer in order.
func (s *Sequential) Forward(x *tensor.Tensor) *tensor.Tensor {
	for _, l := range s.layers {
		x = l.Forward(x)
	}
	return x
}

// ModuleList holds submodules registered under their index
// (torch.nn.ModuleList): "layers.1.bias" for a ModuleList registered as
// "layers".
type ModuleList struct {
	Base
	mods []Module
}

// NewModuleList returns a ModuleList of ms.
func NewModuleList(ms ...Module) *ModuleList {
	l := &ModuleList{}
	for _, m := range ms {
		l.Append(m)
	}
	return l
}

// Append adds m at the end and returns l.
func (l *ModuleList) Append(m Module) *ModuleList {
	if m == nil {
		fail("ModuleList", nil, "module %d is nil", len(l.mods))
	}
	l.RegisterModule(strconv.Itoa(len(l.mods)), m)
	l.mods = append(l.mods, m)
	return l
}

// Len returns the number of modules.
func (l *ModuleList) Len() int { return len(l.mods) }

// At returns module i (negative counts from the end).
func (l *ModuleList) At(i int) Module {
	if i < 0 {
		i += len(l.mods)
	}
	if i < 0 || i >= len(l.mods) {
		fail("ModuleList", nil, "index %d is out of range for %d modules", i, len(l.mods))
	}
	return l.mods[i]
}

// Modules returns the modules in order.
func (l *ModuleList) Modules() []Module { return append([]Module(nil), l.mods...) }

// ModuleDict holds submodules by key in insertion order
// (torch.nn.ModuleDict): state-dict keys read "key.weight".
type ModuleDict struct {
	Base
}

// NewModuleDict returns an empty ModuleDict.
func NewModuleDict() *ModuleDict { return &ModuleDict{} }

// Set stores m under key; an existing key keeps its position, as in torch's
// ordered dict. A key may not be empty or contain ".".
func (d *ModuleDict) Set(key string, m Module) *ModuleDict {
	if m == nil {
		fail("ModuleDict", nil, "module %q is nil", key)
	}
	if key == "" || strings.Contains(key, ".") {
		fail("ModuleDict", nil, "module name can't be empty or contain \".\", got %q", key)
	}
	for i := range d.children {
		if d.children[i].name == key {
			d.children[i].m = m
			return d
		}
	}
	d.RegisterModule(key, m)
	return d
}

// Get returns the module under key and whether it exists.
func (d *ModuleDict) Get(key string) (Module, bool) {
	for _, c := range d.children {
		if c.name == key {
			return c.m, true
		}
	}
	return nil, false
}

// Delete removes key (torch's pop), reporting whether it existed.
func (d *ModuleDict) Delete(key string) bool {
	for i, c := range d.children {
		if c.name == key {
			d.children = append(d.children[:i], d.children[i+1:]...)
			return true
		}
	}
	return false
}

// Keys returns the keys in insertion order.
func (d *ModuleDict) Keys() []string {
	out := make([]string, len(d.children))
	for i, c := range d.children {
		out[i] = c.name
	}
	return out
}

// Len returns the number of entries.
func (d *ModuleDict) Len() int { return len(d.children) }
