package models

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/hf/safetensors"
	"github.com/gotpu/gotpu/tensor"
)

// Source is where a model's tensors come from: a safetensors checkpoint
// (one file, a sharded index or a directory) or, through another
// implementation, a GGUF file. Names are the checkpoint's own.
type Source interface {
	// Names lists every tensor the source holds.
	Names() []string
	// Shape returns the named tensor's dimensions, or ok = false.
	Shape(name string) (shape []int, ok bool)
	// Tensor reads the named tensor onto dev as dt.
	Tensor(name string, dev device.Device, dt dtype.DType) (*tensor.Tensor, error)
	// Weight reads the named [out, in] matrix as a Weight; a source of
	// block-quantized tensors may keep it quantized.
	Weight(name string, dev device.Device, dt dtype.DType) (Weight, error)
	// Close releases the files behind the source (mappings included).
	Close() error
}

// safetensorsSource reads a Hugging Face safetensors checkpoint.
type safetensorsSource struct {
	r safetensors.Reader
}

// OpenSafetensors opens a safetensors checkpoint as a Source: a .safetensors
// file, a model.safetensors.index.json, or a directory holding either.
// Tensors are memory-mapped and read when asked for.
func OpenSafetensors(path string) (Source, error) {
	r, err := safetensors.OpenPath(path)
	if err != nil {
		return nil, err
	}
	return &safetensorsSource{r: r}, nil
}

func (s *safetensorsSource) Names() []string { return s.r.Names() }

func (s *safetensorsSource) Shape(name string) ([]int, bool) {
	info, err := s.r.Info(name)
	if err != nil {
		return nil, false
	}
	return info.Shape, true
}

func (s *safetensorsSource) Close() error { return s.r.Close() }

// stDType maps a safetensors dtype to a tensor dtype the runtime holds.
func stDType(d safetensors.DType) (dtype.DType, bool) {
	switch d {
	case safetensors.F32:
		return dtype.F32, true
	case safetensors.F16:
		return dtype.F16, true
	case safetensors.BF16:
		return dtype.BF16, true
	case safetensors.F64:
		return dtype.F64, true
	case safetensors.I64:
		return dtype.I64, true
	case safetensors.I32:
		return dtype.I32, true
	case safetensors.I16:
		return dtype.I16, true
	case safetensors.I8:
		return dtype.I8, true
	case safetensors.U8:
		return dtype.U8, true
	case safetensors.Bool:
		return dtype.Bool, true
	}
	return dtype.Invalid, false
}

// release lets the checkpoint drop a copied-out tensor's mapped pages
// (safetensors File.Release), where the reader can.
func (s *safetensorsSource) release(name string) {
	if r, ok := s.r.(interface{ Release(string) }); ok {
		r.Release(name)
	}
}

func (s *safetensorsSource) Tensor(name string, dev device.Device, dt dtype.DType) (t *tensor.Tensor, err error) {
	info, err := s.r.Info(name)
	if err != nil {
		return nil, err
	}
	if dev.Type == "meta" {
		// Shapes only: the bytes are never read.
		if dt == dtype.Invalid {
			if dt, _ = stDType(info.DType); dt == dtype.Invalid {
				dt = dtype.F32
			}
		}
		err = tensor.Catch(func() { t = tensor.Empty(dev, dt, info.Shape...) })
		return t, err
	}
	raw, err := s.r.Bytes(name)
	if err != nil {
		return nil, err
	}
	src, ok := stDType(info.DType)
	if !ok || src != dt && dt != dtype.Invalid && src.IsFloat() && dt.IsFloat() {
		// F8 and other storage types, and float conversions: decode to
		// f32 on the host and convert there, so that the device never
		// holds a second, wider copy of the tensor.
		vals, derr := safetensors.DecodeFloat32(info.DType, raw)
		if derr != nil {
			return nil, fmt.Errorf("tensor %s: %w", name, derr)
		}
		if dt == dtype.Invalid {
			dt = dtype.F32
		}
		err = tensor.Catch(func() { t = uploadFloats(dev, vals, info.Shape, dt) })
		s.release(name)
		return t, err
	}
	err = tensor.Catch(func() {
		t = tensor.FromBytes(dev, src, info.Shape, raw)
		if dt != dtype.Invalid {
			t = t.ToDType(dt)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("tensor %s: %w", name, err)
	}
	s.release(name)
	return t, nil
}

// uploadFloats puts host f32 values on dev as dt (f32, bf16, f16 or f64),
// rounding on the host as the runtime's convert does (round to nearest
// even), so that loading a narrow model never allocates its f32 copy on
// the device (the caching allocator would keep that memory).
func uploadFloats(dev device.Device, vals []float32, shape []int, dt dtype.DType) *tensor.Tensor {
	switch dt {
	case dtype.BF16:
		h := make([]dtype.BFloat16, len(vals))
		for i, v := range vals {
			h[i] = dtype.BF16FromF32(v)
		}
		return tensor.FromSlice(dev, h, shape...)
	case dtype.F16:
		h := make([]dtype.Float16, len(vals))
		for i, v := range vals {
			h[i] = dtype.F16FromF32(v)
		}
		return tensor.FromSlice(dev, h, shape...)
	case dtype.F32:
		return tensor.FromSlice(dev, vals, shape...)
	}
	return tensor.FromSlice(dev, vals, shape...).ToDType(dt)
}

func (s *safetensorsSource) Weight(name string, dev device.Device, dt dtype.DType) (Weight, error) {
	t, err := s.Tensor(name, dev, dt)
	if err != nil {
		return nil, err
	}
	if t.Dim() != 2 {
		return nil, fmt.Errorf("%w: %s is %v, want a matrix", ErrWeights, name, t.Shape())
	}
	return Dense{W: t}, nil
}

// loader reads a model's parameters from a Source by their canonical
// (transformers *ForCausalLM / *Model) names, finding them under the
// prefixes checkpoints are saved with, and records which names it used.
type loader struct {
	src  Source
	dev  device.Device
	dt   dtype.DType
	used map[string]bool
	// prefixes are the leading components a checkpoint may add to or drop
	// from the canonical names ("model.", "transformer.", ...).
	prefixes []string
	// rename maps a canonical name to the checkpoint's (GGUF), or nil.
	rename func(string) string
	err    error
}

func newLoader(src Source, dev device.Device, dt dtype.DType, prefixes ...string) *loader {
	return &loader{src: src, dev: dev, dt: dt, used: map[string]bool{}, prefixes: prefixes}
}

// resolve returns the checkpoint's name for a canonical name.
func (l *loader) resolve(name string) (string, bool) {
	if l.rename != nil {
		name = l.rename(name)
	}
	if _, ok := l.src.Shape(name); ok {
		return name, true
	}
	for _, p := range l.prefixes {
		if rest, ok := strings.CutPrefix(name, p); ok {
			if _, ok := l.src.Shape(rest); ok {
				return rest, true
			}
		} else if _, ok := l.src.Shape(p + name); ok {
			return p + name, true
		}
	}
	return "", false
}

func (l *loader) has(name string) bool {
	_, ok := l.resolve(name)
	return ok
}

// fail records the first error; later reads return nil.
func (l *loader) fail(err error) {
	if l.err == nil {
		l.err = err
	}
}

// check resolves name and verifies its shape.
func (l *loader) check(name string, shape []int) (string, bool) {
	if l.err != nil {
		return "", false
	}
	real, ok := l.resolve(name)
	if !ok {
		l.fail(fmt.Errorf("%w: %s", ErrMissingWeight, name))
		return "", false
	}
	got, _ := l.src.Shape(real)
	if shape != nil && !slices.Equal(got, shape) {
		l.fail(fmt.Errorf("%w: %s is %v in the checkpoint, the config implies %v", ErrWeights, real, got, shape))
		return "", false
	}
	l.used[real] = true
	return real, true
}

// tensor reads a parameter of the given shape (nil: any) in the load dtype.
func (l *loader) tensor(name string, shape ...int) *tensor.Tensor {
	return l.tensorAs(name, l.dt, shape...)
}

// tensorAs reads a parameter as dt.
func (l *loader) tensorAs(name string, dt dtype.DType, shape ...int) *tensor.Tensor {
	real, ok := l.check(name, shape)
	if !ok {
		return nil
	}
	t, err := l.src.Tensor(real, l.dev, dt)
	if err != nil {
		l.fail(err)
		return nil
	}
	return t
}

// optional reads a parameter when the checkpoint has it, else returns nil.
func (l *loader) optional(name string, shape ...int) *tensor.Tensor {
	if !l.has(name) {
		return nil
	}
	return l.tensor(name, shape...)
}

// weight reads an [out, in] matrix.
func (l *loader) weight(name string, out, in int) Weight {
	real, ok := l.check(name, []int{out, in})
	if !ok {
		return nil
	}
	w, err := l.src.Weight(real, l.dev, l.dt)
	if err != nil {
		l.fail(err)
		return nil
	}
	return w
}

// keepsQuantized reports whether the source returns name (a canonical
// name) as a Quantized weight (a GGUF source with Options.KeepQuantized).
func (l *loader) keepsQuantized(name string) bool {
	ks, ok := l.src.(interface{ KeepsQuantized(string) bool })
	if !ok {
		return false
	}
	real, ok := l.resolve(name)
	return ok && ks.KeepsQuantized(real)
}

// unused lists the checkpoint's names that no parameter took, except
// buffers transformers itself ignores.
func (l *loader) unused() []string {
	var out []string
	for _, n := range l.src.Names() {
		if l.used[n] || ignoredBuffer(n) {
			continue
		}
		out = append(out, n)
	}
	return out
}

// ignoredBuffer reports names of buffers that checkpoints carry and
// transformers recomputes: GPT-2's causal masks, rotary inv_freq, BERT's
// position_ids and token_type_ids buffers.
func ignoredBuffer(name string) bool {
	for _, suf := range []string{".attn.bias", ".attn.masked_bias", "rotary_emb.inv_freq", "embeddings.position_ids", "embeddings.token_type_ids"} {
		if strings.HasSuffix(name, suf) {
			return true
		}
	}
	return false
}

// Errors of loading. All wrap ErrModel.
var (
	// ErrModel is the root of the errors this package returns for bad
	// model files.
	ErrModel = errors.New("models")
	// ErrUnsupported reports an architecture or feature the package does
	// not implement.
	ErrUnsupported = fmt.Errorf("%w: unsupported", ErrModel)
	// ErrMissingWeight reports a parameter the checkpoint lacks.
	ErrMissingWeight = fmt.Errorf("%w: missing weight", ErrModel)
	// ErrWeights reports a weight whose shape or type does not fit the config.
	ErrWeights = fmt.Errorf("%w: bad weight", ErrModel)
)
