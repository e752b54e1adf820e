package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gotpu/gotpu"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/models"
	"github.com/gotpu/gotpu/tensor"
)

// modelFlags are the flags every model command shares: which model, on
// which device, in which dtype and execution mode.
type modelFlags struct {
	path, device, dtype, mode string
}

func (f *modelFlags) register(fs *pflag.FlagSet) {
	f.registerSource(fs)
	fs.StringVar(&f.dtype, "dtype", "", "compute dtype: f32, bf16 or f16 (default: the checkpoint's); keep: a GGUF file's linear weights stay in their quantized blocks, computing in f32")
	fs.StringVar(&f.mode, "mode", "strict", "execution mode: strict, debug, fused or compiled")
}

// registerSource registers --model and --device only, for commands that
// take several dtypes or modes (gotpu bench model).
func (f *modelFlags) registerSource(fs *pflag.FlagSet) {
	fs.StringVar(&f.path, "model", "", "model directory (config.json, *.safetensors, tokenizer.json) or GGUF file")
	fs.StringVar(&f.device, "device", "cpu", "device to run on (cpu, xla, ...)")
}

// load loads the model and sets the execution mode; restore puts the
// process's previous tensor mode back.
func (f *modelFlags) load() (m *models.Model, restore func(), err error) {
	dt, err := parseModelDType(f.dtype)
	if err != nil {
		return nil, nil, err
	}
	mode, compiled, err := parseModelMode(f.mode)
	if err != nil {
		return nil, nil, err
	}
	m, err = f.loadAs(dt)
	if err != nil {
		return nil, nil, err
	}
	if m.LM != nil {
		m.LM.Compiled = compiled
	}
	old := tensor.SetMode(mode)
	return m, func() { tensor.SetMode(old) }, nil
}

// loadAs loads --model onto --device in dtype dt (Invalid: the
// checkpoint's; keepQuantized: f32 with quantized weights kept), without
// touching the execution mode.
func (f *modelFlags) loadAs(dt dtype.DType) (*models.Model, error) {
	if f.path == "" {
		return nil, errors.New("--model PATH is required")
	}
	dev, err := gotpu.Device(f.device)
	if err != nil {
		return nil, err
	}
	o := models.Options{Device: dev, DType: dt}
	if dt == keepQuantized {
		o.DType, o.KeepQuantized = dtype.F32, true
	}
	return models.LoadPath(f.path, o)
}

// parseModelMode reads --mode (models.ParseMode).
func parseModelMode(s string) (mode tensor.Mode, compiled bool, err error) {
	mode, compiled, err = models.ParseMode(s)
	if err != nil {
		err = fmt.Errorf("unknown --mode %q (want strict, debug, fused or compiled)", s)
	}
	return mode, compiled, err
}

// keepQuantized is the --dtype value "keep" as parseModelDType returns
// it: f32 compute with a GGUF file's quantized weights kept in their
// blocks (models.Options.KeepQuantized). It is no real dtype.
const keepQuantized = dtype.DType(255)

// parseModelDType reads --dtype ("" keeps the checkpoint's; "keep" gives
// keepQuantized).
func parseModelDType(s string) (dtype.DType, error) {
	switch strings.ToLower(s) {
	case "":
		return dtype.Invalid, nil
	case "keep":
		return keepQuantized, nil
	case "f32", "float32":
		return dtype.F32, nil
	case "bf16", "bfloat16":
		return dtype.BF16, nil
	case "f16", "float16":
		return dtype.F16, nil
	}
	return dtype.Invalid, fmt.Errorf("unknown --dtype %q (want f32, bf16, f16 or keep)", s)
}

// parseIDs reads a comma-separated list of token ids.
func parseIDs(s string) ([]int, error) {
	var ids []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		id, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("--ids: %q is not a token id", f)
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return nil, errors.New("--ids: no token ids")
	}
	return ids, nil
}
