// Package checkpoint saves and loads training state as safetensors files:
// model tensors under their PyTorch state_dict keys (so torch's
// safetensors.torch.load_file reads them), optimizer state under
// "optim." keys, and scalars (step, epoch, RNG state, hyper-parameters) in
// the header's metadata. Writes are atomic: temp file, fsync, rename, fsync
// of the directory — a crash leaves the previous checkpoint intact.
package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/hf/safetensors"
	"github.com/gotpu/gotpu/tensor"
)

// ErrCorrupt is wrapped by Load's errors for truncated or malformed files.
var ErrCorrupt = errors.New("checkpoint is corrupt")

// Named is a tensor with its key.
type Named struct {
	Name   string
	Tensor *tensor.Tensor
}

// Layout of keys in a checkpoint file:
//
//	<state_dict key>                 model parameters and buffers, e.g. "fc1.weight"
//	optim.<param index>.<state name> optimizer state per parameter, e.g. "optim.3.exp_avg"
//
// and metadata (all strings): "format" = "gotpu-checkpoint-v1", plus whatever
// the caller stores (the trainer stores "step", "epoch", "rng_seed",
// "rng_offset" and the optimizer's hyper-parameters as JSON under "optim").
const (
	FormatKey   = "format"
	FormatValue = "gotpu-checkpoint-v1"
	OptimPrefix = "optim."
)

var toST = map[dtype.DType]safetensors.DType{}

func init() {
	for _, d := range dtype.All {
		st, err := safetensors.ParseDType(stName(d))
		if err == nil {
			toST[d] = st
		}
	}
}

func stName(d dtype.DType) string {
	switch d {
	case dtype.Bool:
		return "BOOL"
	case dtype.U8:
		return "U8"
	case dtype.I8:
		return "I8"
	case dtype.I16:
		return "I16"
	case dtype.I32:
		return "I32"
	case dtype.I64:
		return "I64"
	case dtype.F16:
		return "F16"
	case dtype.BF16:
		return "BF16"
	case dtype.F32:
		return "F32"
	case dtype.F64:
		return "F64"
	}
	return ""
}

func fromST(s safetensors.DType) (dtype.DType, error) {
	for d, v := range toST {
		if v == s {
			return d, nil
		}
	}
	return dtype.Invalid, fmt.Errorf("dtype %s has no gotpu equivalent", s)
}

// Save writes tensors and metadata to path atomically.
func Save(path string, tensors []Named, meta map[string]string) error {
	out := make([]safetensors.Tensor, 0, len(tensors))
	seen := map[string]bool{}
	for _, n := range tensors {
		if seen[n.Name] {
			return fmt.Errorf("checkpoint: duplicate key %q", n.Name)
		}
		seen[n.Name] = true
		st, ok := toST[n.Tensor.DType()]
		if !ok {
			return fmt.Errorf("checkpoint: %s: unsupported dtype %s", n.Name, n.Tensor.DType())
		}
		var raw []byte
		if err := tensor.Catch(func() { raw = n.Tensor.Bytes() }); err != nil {
			return fmt.Errorf("checkpoint: reading %s: %w", n.Name, err)
		}
		out = append(out, safetensors.Tensor{Name: n.Name, DType: st, Shape: n.Tensor.Shape(), Data: raw})
	}
	m := map[string]string{FormatKey: FormatValue}
	for k, v := range meta {
		m[k] = v
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := safetensors.Write(path, out, m); err != nil {
		return fmt.Errorf("checkpoint: saving %s: %w", path, err)
	}
	return nil
}

// Load reads a checkpoint onto dev, returning tensors by key and the
// metadata. Truncated or malformed files give errors wrapping ErrCorrupt
// that name the problem.
func Load(path string, dev device.Device) (map[string]*tensor.Tensor, map[string]string, error) {
	out, meta, err := ReadSafetensors(path, dev)
	if err != nil {
		return nil, nil, err
	}
	if meta[FormatKey] != FormatValue {
		return nil, nil, fmt.Errorf("checkpoint: %s: %w: format %q, want %q", path, ErrCorrupt, meta[FormatKey], FormatValue)
	}
	return out, meta, nil
}

// ReadSafetensors reads every tensor of any safetensors file (a PyTorch or
// Hugging Face state dict, say) onto dev, with its metadata.
func ReadSafetensors(path string, dev device.Device) (map[string]*tensor.Tensor, map[string]string, error) {
	f, err := safetensors.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("checkpoint: %w", err)
		}
		return nil, nil, fmt.Errorf("checkpoint: %s: %w: %w", path, ErrCorrupt, err)
	}
	defer f.Close()
	meta := f.Metadata()
	out := map[string]*tensor.Tensor{}
	for _, info := range f.Tensors() {
		dt, err := fromST(info.DType)
		if err != nil {
			return nil, nil, fmt.Errorf("checkpoint: %s: tensor %s: %w", path, info.Name, err)
		}
		raw, err := f.Bytes(info.Name)
		if err != nil {
			return nil, nil, fmt.Errorf("checkpoint: %s: tensor %s: %w: %w", path, info.Name, ErrCorrupt, err)
		}
		var t *tensor.Tensor
		if err := tensor.Catch(func() { t = tensor.FromBytes(dev, dt, info.Shape, raw) }); err != nil {
			return nil, nil, fmt.Errorf("checkpoint: %s: tensor %s: %w", path, info.Name, err)
		}
		out[info.Name] = t
	}
	return out, meta, nil
}
