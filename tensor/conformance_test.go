package tensor_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	_ "github.com/gotpu/gotpu/backend/cpu"
	_ "github.com/gotpu/gotpu/backend/meta"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

// The conformance suite: every golden case (tools/golden, produced by
// PyTorch) runs on every device (cpu, meta, the test backend) in every mode
// (Strict, Debug), plus cpu with composites forced through their
// decompositions (which checks every direct kernel against its
// decomposition). Results on the test backend must be bit-identical to cpu.

type goldenTensor struct {
	DType  string `json:"dtype"`
	Shape  []int  `json:"shape"`
	Data   string `json:"data"`
	Layout string `json:"layout"`
}

type goldenInput struct {
	goldenTensor
	Scalar any    `json:"scalar"`
	Kind   string `json:"kind"`
}

type goldenCase struct {
	ID      string         `json:"id"`
	Op      string         `json:"op"`
	Attrs   map[string]any `json:"attrs"`
	Inputs  []*goldenInput `json:"inputs"`
	Outputs []goldenTensor `json:"outputs"`
	Compare string         `json:"compare"`
	RTol    *float64       `json:"rtol"`
	ATol    *float64       `json:"atol"`
	Error   *string        `json:"error"`

	Cotangents []*goldenTensor `json:"cotangents"`
	Grads      []*goldenTensor `json:"grads"`
}

type goldenFile struct {
	Version int          `json:"version"`
	Torch   string       `json:"torch"`
	Group   string       `json:"group"`
	Cases   []goldenCase `json:"cases"`
}

func loadGolden(t testing.TB) []goldenFile {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "testdata", "golden", "*.json.gz"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	var out []goldenFile
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		dec := json.NewDecoder(zr)
		dec.UseNumber()
		var g goldenFile
		if err := dec.Decode(&g); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		f.Close()
		if g.Version != 1 {
			t.Fatalf("%s: golden version %d", p, g.Version)
		}
		out = append(out, g)
	}
	return out
}

func decodeRaw(t goldenTensor) ([]byte, dtype.DType, error) {
	dt, err := dtype.Parse(t.DType)
	if err != nil {
		return nil, 0, err
	}
	raw, err := base64.StdEncoding.DecodeString(t.Data)
	return raw, dt, err
}

// buildInput places a golden input on dev with its layout.
func buildInput(in *goldenInput, dev device.Device) (*tensor.Tensor, error) {
	if in == nil {
		return nil, nil
	}
	if in.DType == "" {
		switch in.Kind {
		case "bool":
			return tensor.Scalar(in.Scalar.(bool)), nil
		case "int":
			n, err := in.Scalar.(json.Number).Int64()
			return tensor.Scalar(n), err
		default:
			f, err := parseFloat(in.Scalar)
			return tensor.Scalar(f), err
		}
	}
	raw, dt, err := decodeRaw(in.goldenTensor)
	if err != nil {
		return nil, err
	}
	shape := in.Shape
	es := dt.Size()
	switch in.Layout {
	case "", "contiguous":
		return tensor.FromBytes(dev, dt, shape, raw), nil
	case "transposed":
		r := len(shape)
		if r < 2 {
			return tensor.FromBytes(dev, dt, shape, raw), nil
		}
		a, b := shape[r-2], shape[r-1]
		batch := op.Numel(shape[:r-2])
		phys := make([]byte, len(raw))
		for n := 0; n < batch; n++ {
			for i := 0; i < a; i++ {
				for j := 0; j < b; j++ {
					src := ((n*a+i)*b + j) * es
					dst := ((n*b+j)*a + i) * es
					copy(phys[dst:dst+es], raw[src:src+es])
				}
			}
		}
		ps := slices.Clone(shape)
		ps[r-2], ps[r-1] = b, a
		perm := make([]int, r)
		for i := range perm {
			perm[i] = i
		}
		perm[r-2], perm[r-1] = r-1, r-2
		x := tensor.FromBytes(dev, dt, ps, phys)
		return tensor.Apply1("permute", []*tensor.Tensor{x}, op.Attrs{"dims": perm}), nil
	case "strided":
		r := len(shape)
		if r == 0 {
			return tensor.FromBytes(dev, dt, shape, raw), nil
		}
		last := shape[r-1]
		ps := slices.Clone(shape)
		ps[r-1] = 2 * last
		phys := make([]byte, 2*len(raw))
		for i := range phys {
			phys[i] = 0xA5 // garbage in the gaps
		}
		for k := 0; k < op.Numel(shape); k++ {
			copy(phys[2*k*es:2*k*es+es], raw[k*es:k*es+es])
		}
		x := tensor.FromBytes(dev, dt, ps, phys)
		return tensor.Apply1("slice", []*tensor.Tensor{x}, op.Attrs{"dim": r - 1, "step": 2}), nil
	}
	return nil, fmt.Errorf("unknown layout %q", in.Layout)
}

func parseFloat(v any) (float64, error) {
	switch x := v.(type) {
	case json.Number:
		return x.Float64()
	case string:
		switch x {
		case "inf":
			return math.Inf(1), nil
		case "-inf":
			return math.Inf(-1), nil
		case "nan":
			return math.NaN(), nil
		}
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	}
	return 0, fmt.Errorf("not a float: %v", v)
}

// convertAttrs maps JSON attribute values to op attribute values using the
// op's specs.
func convertAttrs(d *op.Def, in map[string]any) (op.Attrs, error) {
	out := op.Attrs{}
	for k, v := range in {
		var spec *op.AttrSpec
		for i := range d.Attrs {
			if d.Attrs[i].Name == k {
				spec = &d.Attrs[i]
			}
		}
		if spec == nil {
			out[k] = v // let Normalize report it
			continue
		}
		cv, err := convertAttr(spec.Type, v)
		if err != nil {
			return nil, fmt.Errorf("attr %s: %w", k, err)
		}
		out[k] = cv
	}
	return out, nil
}

func convertAttr(t op.AttrType, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch t {
	case op.AttrInt:
		n, ok := v.(json.Number)
		if !ok {
			return v, nil
		}
		i, err := n.Int64()
		return int(i), err
	case op.AttrInts:
		l, ok := v.([]any)
		if !ok {
			if n, ok := v.(json.Number); ok {
				i, err := n.Int64()
				return []int{int(i)}, err
			}
			return v, nil
		}
		out := make([]int, len(l))
		for i, x := range l {
			n, err := x.(json.Number).Int64()
			if err != nil {
				return nil, err
			}
			out[i] = int(n)
		}
		return out, nil
	case op.AttrFloat:
		return parseFloat(v)
	case op.AttrFloats:
		l, ok := v.([]any)
		if !ok {
			f, err := parseFloat(v)
			return []float64{f}, err
		}
		out := make([]float64, len(l))
		for i, x := range l {
			f, err := parseFloat(x)
			if err != nil {
				return nil, err
			}
			out[i] = f
		}
		return out, nil
	case op.AttrScalar:
		switch x := v.(type) {
		case bool:
			return x, nil
		case json.Number:
			s := x.String()
			if strings.ContainsAny(s, ".eE") {
				return x.Float64()
			}
			return x.Int64()
		case string:
			return parseFloat(x)
		}
	}
	return v, nil
}

// defaultTol returns torch.testing.assert_close's default rtol, atol.
func defaultTol(dt dtype.DType) (float64, float64) {
	switch dt {
	case dtype.F16:
		return 1e-3, 1e-5
	case dtype.BF16:
		return 1.6e-2, 1e-5
	case dtype.F32:
		return 1.3e-6, 1e-5
	case dtype.F64:
		return 1e-7, 1e-7
	}
	return 0, 0
}

// closeEnough compares like torch.testing.assert_close with equal_nan.
func closeEnough(got, want []float64, rtol, atol float64) (int, bool) {
	for i := range want {
		g, w := got[i], want[i]
		if math.IsNaN(w) || math.IsNaN(g) {
			if math.IsNaN(w) && math.IsNaN(g) {
				continue
			}
			return i, false
		}
		if math.IsInf(w, 0) || math.IsInf(g, 0) {
			if g == w {
				continue
			}
			return i, false
		}
		if math.Abs(g-w) > atol+rtol*math.Abs(w) {
			return i, false
		}
	}
	return -1, true
}

type runConfig struct {
	name      string
	dev       device.Device
	mode      tensor.Mode
	decompose bool
	// compiled runs each case as a traced program (the compile.Fn path):
	// the op is recorded with symbolic inputs, compiled and run.
	compiled bool
}

func configs() []runConfig {
	return []runConfig{
		{"cpu/strict", device.Device{Type: "cpu"}, tensor.Strict, false, false},
		{"cpu/debug", device.Device{Type: "cpu"}, tensor.Debug, false, false},
		{"cpu/decomposed", device.Device{Type: "cpu"}, tensor.Strict, true, false},
		{"meta/strict", device.Device{Type: "meta"}, tensor.Strict, false, false},
		{"meta/debug", device.Device{Type: "meta"}, tensor.Debug, false, false},
		{"testdev/strict", device.Device{Type: "testdev"}, tensor.Strict, false, false},
		{"testdev/debug", device.Device{Type: "testdev"}, tensor.Debug, false, false},
		{"cpu/fused", device.Device{Type: "cpu"}, tensor.Fused, false, false},
		{"testdev/fused", device.Device{Type: "testdev"}, tensor.Fused, false, false},
		{"cpu/compiled", device.Device{Type: "cpu"}, tensor.Strict, false, true},
		{"testdev/compiled", device.Device{Type: "testdev"}, tensor.Strict, false, true},
	}
}

// runCase runs one case on cfg and returns nil on success; cpuOut receives
// (or is checked against) the cpu/strict raw results.
func runCase(c *goldenCase, cfg runConfig, cpuOut map[string][][]byte) (err error) {
	d, ok := op.Lookup(c.Op)
	if !ok {
		return fmt.Errorf("op %q is not in the op table", c.Op)
	}
	attrs, err := convertAttrs(d, c.Attrs)
	if err != nil {
		return err
	}
	var outs []*tensor.Tensor
	perr := tensor.Catch(func() {
		ins := make([]*tensor.Tensor, len(c.Inputs))
		for i, in := range c.Inputs {
			x, err := buildInput(in, cfg.dev)
			if err != nil {
				panic(err)
			}
			ins[i] = x
		}
		if cfg.compiled {
			outs = runTraced(cfg.dev, c.Op, ins, attrs)
		} else {
			outs = tensor.Apply(c.Op, ins, attrs)
		}
		if cfg.dev.Type != "meta" {
			for _, o := range outs {
				_ = o.Bytes() // surface asynchronous errors here
			}
		}
	})
	isMeta := cfg.dev.Type == "meta"
	if c.Error != nil && cfg.compiled && strings.Contains(*c.Error, "view size is not compatible") {
		// A compiled function's inputs are values: a view of one never
		// depends on the caller's strides.
		return nil
	}
	if c.Error != nil {
		if perr == nil {
			if isMeta {
				return nil // value-dependent errors cannot show on meta
			}
			return fmt.Errorf("expected an error containing %q, got none", *c.Error)
		}
		if !strings.Contains(perr.Error(), *c.Error) {
			return fmt.Errorf("error %q does not contain %q", perr.Error(), *c.Error)
		}
		return nil
	}
	if perr != nil {
		return fmt.Errorf("unexpected error: %v", perr)
	}
	if len(outs) != len(c.Outputs) {
		return fmt.Errorf("%d outputs, want %d", len(outs), len(c.Outputs))
	}
	for i, w := range c.Outputs {
		g := outs[i]
		wraw, wdt, err := decodeRaw(w)
		if err != nil {
			return err
		}
		if g.DType() != wdt || !slices.Equal(g.Shape(), w.Shape) {
			return fmt.Errorf("output %d: got %s%v, want %s%v", i, g.DType(), g.Shape(), wdt, w.Shape)
		}
		if isMeta || c.Compare == "shape" {
			if !isMeta && c.Compare == "shape" {
				// Random ops: every device and mode draws the same numbers.
				graw := g.Bytes()
				key := fmt.Sprintf("%s#%d", c.ID, i)
				if cfg.name == "cpu/strict" {
					cpuOut[key] = append(cpuOut[key], graw)
				}
			}
			continue
		}
		graw := g.Bytes()
		key := fmt.Sprintf("%s#%d", c.ID, i)
		if cfg.name == "cpu/strict" {
			cpuOut[key] = [][]byte{graw}
		} else if strings.HasPrefix(cfg.name, "testdev") && len(cpuOut[key]) > 0 && !bytes.Equal(cpuOut[key][0], graw) && !matVecShape(d.Group, w.Shape) {
			return fmt.Errorf("output %d differs from cpu bit-for-bit", i)
		}
		n := op.Numel(w.Shape)
		gv, wv := make([]float64, n), make([]float64, n)
		for k := 0; k < n; k++ {
			gv[k] = dtype.Float64At(wdt, graw, k)
			wv[k] = dtype.Float64At(wdt, wraw, k)
		}
		rtol, atol := defaultTol(wdt)
		if c.RTol != nil {
			rtol = *c.RTol
		}
		if c.ATol != nil {
			atol = *c.ATol
		}
		switch c.Compare {
		case "exact":
			if wdt == dtype.I64 {
				for k := 0; k < n; k++ {
					if dtype.Int64At(wdt, graw, k) != dtype.Int64At(wdt, wraw, k) {
						return fmt.Errorf("output %d[%d]: got %d, want %d", i, k, dtype.Int64At(wdt, graw, k), dtype.Int64At(wdt, wraw, k))
					}
				}
				continue
			}
			rtol, atol = 0, 0
		case "set":
			sort.Float64s(gv)
			sort.Float64s(wv)
		}
		if k, ok := closeEnough(gv, wv, rtol, atol); !ok {
			return fmt.Errorf("output %d[%d] (flat): got %v, want %v (rtol %g atol %g)\n  got  %v\n  want %v", i, k, gv[k], wv[k], rtol, atol, trunc(gv), trunc(wv))
		}
	}
	return nil
}

// runTraced applies op name to in as a traced, compiled program: tensor
// inputs become the trace's symbolic inputs (Go scalars stay scalars).
func runTraced(dev device.Device, name string, in []*tensor.Tensor, a op.Attrs) []*tensor.Tensor {
	var tin []*tensor.Tensor
	var pos []int
	for i, x := range in {
		if x != nil && !x.IsWrappedScalar() {
			tin = append(tin, x)
			pos = append(pos, i)
		}
	}
	tr, syms := tensor.BeginTrace(dev, tin)
	var tg *tensor.TracedGraph
	func() {
		defer func() {
			if r := recover(); r != nil {
				tr.Abort()
				panic(r)
			}
		}()
		args := slices.Clone(in)
		for k, i := range pos {
			args[i] = syms[k]
		}
		outs := tensor.Apply(name, args, a)
		tg = tr.End(outs)
	}()
	be, err := device.Lookup(dev.Type)
	if err != nil {
		panic(err)
	}
	prog, err := tensor.CompileGraph(context.Background(), dev, be, tg.Graph, device.CompileOptions{})
	if err != nil {
		panic(&tensor.Error{Op: name, Msg: "compiling the traced program: " + err.Error(), Err: err})
	}
	return tg.Run(prog, tensor.ProgramInfo{Tier: "compiled"})
}

func trunc(v []float64) []float64 {
	if len(v) > 16 {
		return v[:16]
	}
	return v
}

func TestConformance(t *testing.T) {
	files := loadGolden(t)
	cpuOut := map[string][][]byte{}
	type stat struct{ pass, fail int }
	cov := map[string]map[string]*stat{} // op -> config -> stat
	failures := 0
	for _, cfg := range configs() {
		t.Run(cfg.name, func(t *testing.T) {
			prev := tensor.SetMode(cfg.mode)
			prevD := tensor.SetForceDecompose(cfg.decompose)
			defer tensor.SetMode(prev)
			defer tensor.SetForceDecompose(prevD)
			perOp := map[string]int{}
			for _, g := range files {
				for i := range g.Cases {
					c := &g.Cases[i]
					if cov[c.Op] == nil {
						cov[c.Op] = map[string]*stat{}
					}
					s := cov[c.Op][cfg.name]
					if s == nil {
						s = &stat{}
						cov[c.Op][cfg.name] = s
					}
					if err := runCase(c, cfg, cpuOut); err != nil {
						s.fail++
						failures++
						if perOp[c.Op] < 3 {
							t.Errorf("%s [%s]: %v", c.ID, g.Group, err)
						}
						perOp[c.Op]++
					} else {
						s.pass++
					}
				}
			}
		})
	}
	// Coverage table.
	ops := make([]string, 0, len(cov))
	for o := range cov {
		ops = append(ops, o)
	}
	sort.Strings(ops)
	var sb strings.Builder
	fmt.Fprintf(&sb, "conformance coverage: %d ops x %d configs\n", len(ops), len(configs()))
	fmt.Fprintf(&sb, "%-34s", "op")
	for _, cfg := range configs() {
		fmt.Fprintf(&sb, " %14s", cfg.name)
	}
	sb.WriteString("\n")
	for _, o := range ops {
		fmt.Fprintf(&sb, "%-34s", o)
		for _, cfg := range configs() {
			s := cov[o][cfg.name]
			if s == nil { // config filtered out with -run
				fmt.Fprintf(&sb, " %14s", "-")
				continue
			}
			fmt.Fprintf(&sb, " %14s", fmt.Sprintf("%d/%d", s.pass, s.pass+s.fail))
		}
		sb.WriteString("\n")
	}
	if testing.Verbose() || os.Getenv("GOTPU_COVERAGE") != "" {
		fmt.Print(sb.String())
	} else {
		fmt.Printf("conformance: %d ops with golden cases, %d configs (cpu, meta, testdev x strict, debug; cpu, testdev x fused, compiled; cpu decomposed), %d failures; -v prints the table\n", len(ops), len(configs()), failures)
	}
}

// TestEveryOpHasGolden fails for any op in the table that no golden case
// exercises: an op without PyTorch parity data is not done.
func TestEveryOpHasGolden(t *testing.T) {
	files := loadGolden(t)
	seen := map[string]bool{}
	for _, g := range files {
		for _, c := range g.Cases {
			seen[c.Op] = true
		}
	}
	var missing []string
	for _, d := range op.All() {
		if !seen[d.Name] {
			missing = append(missing, d.Name)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d ops have no golden cases: %s", len(missing), strings.Join(missing, " "))
	}
}

// matVecShape reports whether a linalg output is a matrix-vector product's
// (a vector, or a matrix with a single row or column). The CPU's
// matrix-vector dot form sums in its own documented order (32 k-strided
// lanes, then a fixed tree; backend/cpu/gemm_gemv.go), so such a product
// is deterministic on each path but not bitwise equal across paths that
// lay the operands out differently (a transposed copy takes the axpy form,
// one FMA chain in k order); the golden tolerance still applies.
func matVecShape(group string, shape []int) bool {
	if group != "linalg" {
		return false
	}
	n := len(shape)
	return n <= 1 || shape[n-1] == 1 || shape[n-2] == 1
}
