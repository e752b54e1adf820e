//go:build pjrt

package pjrt

/*
#include <stdlib.h>
#include "capi.h"
*/
import "C"

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/stablehlo"
)

// programMagic starts every marshaled program.
const programMagic = "GOTPU-PJRT-PROGRAM\n"

// programVersion is the version of the marshaled layout below.
const programVersion = 2

var _ device.Compiler = (*Backend)(nil)

// ProgramFormat names the serialized program format: the gotpu layout
// version, the device type, the plugin's platform and platform version, its
// PJRT C API version and the size of its library file (a PJRT executable
// only loads into the plugin build that wrote it, and the CPU plugin's
// platform version is just "cpu").
func (b *Backend) ProgramFormat() string {
	return fmt.Sprintf("pjrt/%d:%s:%s:%s:api%d.%d:%d", programVersion, b.p.Name, b.p.Platform, b.p.PlatformVersion, b.p.APIMajor, b.p.APIMinor, b.p.fileSize)
}

// program is a compiled whole graph. Its executable takes flat parameters
// and returns flat outputs (see flatGraph).
type program struct {
	b      *Backend
	params []op.Meta
	outs   []op.Meta
	stats  device.ProgramStats
	exe    *executable

	// For dynamic attributes: the source graph (nil for a loaded program),
	// the compile options, the dynamic values the executable was compiled
	// with, and executables compiled for other values.
	src      *ir.Graph
	opts     device.CompileOptions
	dynKey   string
	mu       sync.Mutex
	variants map[string]*executable
}

// dynamicOf returns the dynamic attributes of g's nodes, in node order.
func dynamicOf(g *ir.Graph) []op.Attrs {
	var out []op.Attrs
	for _, n := range g.Nodes {
		if n.IsConst() {
			continue
		}
		dyn := n.Op.DynamicAttrs()
		if len(dyn) == 0 {
			continue
		}
		a := op.Attrs{}
		for _, k := range dyn {
			if v, ok := n.Attrs[k]; ok {
				a[k] = v
			}
		}
		out = append(out, a)
	}
	return out
}

// maskSlots returns d with the entries of the optimizer steps in slots
// emptied (their values are program inputs, not compile-time constants).
func maskSlots(d []op.Attrs, slots []optimSlot) []op.Attrs {
	if len(slots) == 0 || d == nil {
		return d
	}
	out := slices.Clone(d)
	for _, s := range slots {
		if s.Dyn >= 0 && s.Dyn < len(out) {
			out[s.Dyn] = op.Attrs{}
		}
	}
	return out
}

// dynKey is a canonical string of dynamic attribute values.
func dynKeyOf(d []op.Attrs) string {
	var sb strings.Builder
	for i, a := range d {
		keys := make([]string, 0, len(a))
		for k := range a {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(&sb, "%d{", i)
		for _, k := range keys {
			fmt.Fprintf(&sb, "%s=%s;", k, attrString(a[k]))
		}
		sb.WriteString("}")
	}
	return sb.String()
}

// attrString prints numbers so that equal values of different Go numeric
// types print alike (an int 3 and a float64 3 from JSON).
func attrString(v any) string {
	switch x := v.(type) {
	case int:
		return fmt.Sprint(float64(x))
	case int64:
		return fmt.Sprint(float64(x))
	case int32:
		return fmt.Sprint(float64(x))
	case float32:
		return fmt.Sprint(float64(x))
	}
	return fmt.Sprint(v)
}

// withDynamic returns a copy of g whose dynamic attributes take the values
// in dyn (one entry per node with dynamic attributes, in node order).
func withDynamic(g *ir.Graph, dynVals []op.Attrs) (*ir.Graph, error) {
	want := len(dynamicOf(g))
	if len(dynVals) != want {
		return nil, fmt.Errorf("pjrt: RunOptions.Dynamic has %d entries, the program has %d nodes with dynamic attributes", len(dynVals), want)
	}
	out := ir.New()
	out.DefaultFloat = g.DefaultFloat
	vmap := map[*ir.Value]*ir.Value{}
	for _, p := range g.Params {
		vmap[p] = out.Param(p.Meta)
	}
	j := 0
	for _, n := range g.Nodes {
		if n.IsConst() {
			vmap[n.Out[0]] = out.AddConst(n.Out[0].Meta, n.Data)
			continue
		}
		a := n.Attrs
		if dyn := n.Op.DynamicAttrs(); len(dyn) > 0 {
			a = maps(n.Attrs)
			for k, v := range dynVals[j] {
				if !slices.Contains(dyn, k) {
					return nil, fmt.Errorf("pjrt: RunOptions.Dynamic[%d]: %s has no dynamic attribute %q", j, n.Op.Name, k)
				}
				a[k] = v
			}
			na, err := n.Op.Normalize(a)
			if err != nil {
				return nil, fmt.Errorf("pjrt: RunOptions.Dynamic[%d]: %s: %w", j, n.Op.Name, err)
			}
			a = na
			j++
		}
		in := make([]*ir.Value, len(n.In))
		for i, v := range n.In {
			if v != nil {
				in[i] = vmap[v]
			}
		}
		metas := make([]op.Meta, len(n.Out))
		for i, o := range n.Out {
			metas[i] = o.Meta
		}
		nn := out.AddNode(n.Op, a, in, metas)
		for i, o := range n.Out {
			vmap[o] = nn.Out[i]
		}
	}
	outs := make([]*ir.Value, len(g.Outputs))
	for i, o := range g.Outputs {
		outs[i] = vmap[o]
	}
	out.SetOutputs(outs...)
	return out, nil
}

func maps(a op.Attrs) op.Attrs {
	out := make(op.Attrs, len(a))
	for k, v := range a {
		out[k] = v
	}
	return out
}

// flatGraph lowers g and rebuilds it over flat (one-dimensional)
// parameters, reshaped to their shapes, with every output flattened and
// made a fresh value (a parameter or repeated output gets a copy). Nodes
// whose "precision" attribute is empty take opts.Precision, and nodes are
// rewritten as eager launches are (see rewrite).
//
// Optimizer steps (paramLowered) become their functional update with their
// per-step scalars read from one extra f64 vector parameter after g's
// parameters; slots describe them and nscalars is the vector's length (no
// extra parameter when it is 0).
func flatGraph(g *ir.Graph, opts device.CompileOptions, pol precisionPolicy) (fg *ir.Graph, nodes int, slots []optimSlot, nscalars int, err error) {
	g, err = normalized(g)
	if err != nil {
		return nil, 0, nil, 0, err
	}
	lg, origin, err := ir.LowerIfOrigin(g, func(*ir.Node) bool { return true })
	if err != nil {
		return nil, 0, nil, 0, fmt.Errorf("pjrt: lowering: %w", err)
	}
	// dynIndex[i] is the RunOptions.Dynamic entry of g.Nodes[i].
	dynIndex := make([]int, len(g.Nodes))
	j := 0
	for i, n := range g.Nodes {
		dynIndex[i] = -1
		if !n.IsConst() && len(n.Op.DynamicAttrs()) > 0 {
			dynIndex[i] = j
			j++
		}
	}
	fg = ir.New()
	fg.DefaultFloat = lg.DefaultFloat
	vmap := map[*ir.Value]*ir.Value{}
	for _, p := range lg.Params {
		n := op.Numel(p.Meta.Shape)
		v, err := flatParam(fg, p.Meta.DType, n, op.Contiguous(slices.Clone(p.Meta.Shape)))
		if err != nil {
			return nil, 0, nil, 0, err
		}
		vmap[p] = v
	}
	for _, n := range lg.Nodes {
		if !n.IsConst() && paramLowered(n.Op) {
			nscalars += optimScalarCount(n.Op.Name)
		}
	}
	var sv *ir.Value
	if nscalars > 0 {
		sv = fg.Param(op.Meta{Shape: []int{nscalars}, DType: dtype.F64})
	}
	off := 0
	for k, n := range lg.Nodes {
		if n.IsConst() {
			vmap[n.Out[0]] = fg.AddConst(n.Out[0].Meta, n.Data)
			continue
		}
		in := make([]*ir.Value, len(n.In))
		for i, v := range n.In {
			if v != nil {
				in[i] = vmap[v]
			}
		}
		a := n.Attrs
		if p, ok := a["precision"]; ok && p == "" && opts.Precision != "" {
			a = maps(a)
			a["precision"] = opts.Precision
		}
		metas := make([]op.Meta, len(n.Out))
		for i, o := range n.Out {
			metas[i] = o.Meta
			metas[i].Wrapped = false
		}
		var res []*ir.Value
		var handled bool
		if paramLowered(n.Op) {
			dyn := -1
			if o := origin[k]; o >= 0 && o < len(dynIndex) {
				dyn = dynIndex[o]
			}
			if len(in) == 0 || in[0] == nil {
				return nil, 0, nil, 0, fmt.Errorf("pjrt: %s without a parameter", n.Op.Name)
			}
			if res, err = optimGraph(fg, n.Op, a, in, sv, off); err != nil {
				return nil, 0, nil, 0, err
			}
			slots = append(slots, newOptimSlot(n.Op, a, in[0].Meta.DType, dyn, off))
			off += optimScalarCount(n.Op.Name)
			handled = true
		} else if len(n.Op.Inplace) > 0 {
			// An in-place op in functional form: its outputs are the new
			// values of its in-place inputs.
			if res, err = functionalInplace(fg, n.Op, in, metas); err != nil {
				return nil, 0, nil, 0, err
			}
			handled = true
		} else if res, handled, err = rewrite(fg, n.Op, a, in, metas, pol); err != nil {
			return nil, 0, nil, 0, err
		}
		if !handled {
			res = fg.AddNode(n.Op, a, in, metas).Out
		}
		for i, o := range n.Out {
			vmap[o] = res[i]
		}
	}
	cp := op.Copy
	seen := map[*ir.Value]bool{}
	var outs []*ir.Value
	for _, o := range lg.Outputs {
		v := vmap[o]
		f, err := flatten(fg, v)
		if err != nil {
			return nil, 0, nil, 0, err
		}
		if f.IsParam() || seen[f] || (f.Def != nil && f.Def.IsConst()) {
			f = fg.AddNode(cp, op.Attrs{}, []*ir.Value{f}, []op.Meta{f.Meta}).Out[0]
		}
		seen[f] = true
		outs = append(outs, f)
	}
	fg.SetOutputs(outs...)
	return fg, len(lg.Nodes), slots, nscalars, nil
}

// functionalInplace returns the new values of an in-place op's inputs as
// functional graph values: copy_(self, src) is src converted to self's
// dtype and broadcast to its shape. Other in-place ops (the optimizer
// steps) have no functional form here: the backend does not support them,
// so graphs recorded for it do not contain them.
func functionalInplace(g *ir.Graph, d *op.Def, in []*ir.Value, outs []op.Meta) ([]*ir.Value, error) {
	if d != op.CopyInPlace || len(in) != 2 || in[0] == nil || in[1] == nil || len(outs) != 1 {
		return nil, fmt.Errorf("pjrt: %w: in-place %s in a program", device.ErrUnsupported, d.Name)
	}
	self, v := in[0].Meta, in[1]
	var err error
	if v.Meta.DType != self.DType {
		if v, err = convertTo(g, v, self.DType); err != nil {
			return nil, err
		}
	}
	if !slices.Equal(v.Meta.Shape, self.Shape) {
		if v, err = addView(g, "expand", op.Attrs{"shape": slices.Clone(self.Shape)}, v, op.Meta{Shape: slices.Clone(self.Shape), DType: self.DType}); err != nil {
			return nil, err
		}
	}
	return []*ir.Value{v}, nil
}

// CompileProgram lowers g, exports it to StableHLO and compiles it with the
// plugin (format "mlir").
func (b *Backend) CompileProgram(ctx context.Context, index int, g *ir.Graph, opts device.CompileOptions) (device.Program, error) {
	if err := b.checkIndex(index); err != nil {
		return nil, err
	}
	if g == nil {
		return nil, fmt.Errorf("%s: nil graph", b.p.Name)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	exe, nodes, err := b.compileGraph(g, opts)
	if err != nil {
		return nil, err
	}
	p := &program{b: b, params: exe.params, outs: exe.outs, exe: exe, src: g, opts: opts,
		dynKey:   dynKeyOf(maskSlots(dynamicOf(g), exe.slots)),
		variants: map[string]*executable{},
		stats:    device.ProgramStats{Nodes: nodes, Kernels: 1}}
	runtime.SetFinalizer(p, (*program).release)
	return p, nil
}

// release destroys the program's executables (a finalizer: programs have
// no Close in the device.Program interface).
func (p *program) release() {
	api := p.b.p.api
	_ = perr(api, "PJRT_LoadedExecutable_Destroy", C.gp_loaded_destroy(api, p.exe.exe))
	for _, x := range p.variants {
		_ = perr(api, "PJRT_LoadedExecutable_Destroy", C.gp_loaded_destroy(api, x.exe))
	}
}

func (b *Backend) compileGraph(g *ir.Graph, opts device.CompileOptions) (exe *executable, nodes int, err error) {
	// g is not verified as given: it may hold in-place ops in functional
	// form (which ir.Verify rejects) and attributes recorded without
	// normalization; flatGraph normalizes every node and the export
	// verifies the graph it builds. A malformed graph that makes the
	// rebuild panic is an error.
	defer func() {
		if r := recover(); r != nil {
			exe, nodes, err = nil, 0, fmt.Errorf("%s: malformed graph: %v", b.p.Name, r)
		}
	}()
	fg, nodes, slots, nscalars, err := flatGraph(g, opts, b.precision())
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", b.p.Name, err)
	}
	params := make([]op.Meta, len(g.Params))
	for i, p := range g.Params {
		params[i] = op.Meta{Shape: slices.Clone(p.Meta.Shape), DType: p.Meta.DType}
	}
	outs := make([]op.Meta, len(g.Outputs))
	for i, o := range g.Outputs {
		outs[i] = op.Meta{Shape: slices.Clone(o.Meta.Shape), DType: o.Meta.DType}
	}
	text, err := stablehlo.Export(fg, "main")
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", b.p.Name, err)
	}
	lexe, err := b.compileMLIR(text)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: compiling program: %w", b.p.Name, err)
	}
	b.progCompiles.Add(1)
	return &executable{exe: lexe, params: params, outs: outs, mlirLen: len(text), slots: slots, nscalars: nscalars}, nodes, nil
}

// ProgramCompiles returns the number of whole programs compiled so far
// (CompileProgram, and the executables compiled for new values of a
// program's dynamic attributes that are not program inputs, such as seeds).
func (b *Backend) ProgramCompiles() int { return int(b.progCompiles.Load()) }

// Stats describes the program: one XLA executable.
func (p *program) Stats() device.ProgramStats { return p.stats }

// executableFor returns the executable for this run's dynamic values.
func (p *program) executableFor(opts device.RunOptions) (*executable, error) {
	if opts.Dynamic == nil {
		return p.exe, nil
	}
	// Optimizer steps take their dynamic values as program inputs: only
	// the others (seeds) select an executable.
	key := dynKeyOf(maskSlots(opts.Dynamic, p.exe.slots))
	if key == p.dynKey {
		return p.exe, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if x, ok := p.variants[key]; ok {
		return x, nil
	}
	if p.src == nil {
		return nil, fmt.Errorf("%s: %w: a loaded program runs only with the dynamic attribute values it was compiled with (recompile it for new seeds or learning rates)", p.b.p.Name, device.ErrUnsupported)
	}
	g, err := withDynamic(p.src, opts.Dynamic)
	if err != nil {
		return nil, err
	}
	// XLA bakes attribute values into the executable: new values are a new
	// compile (cached here per distinct values).
	x, _, err := p.b.compileGraph(g, p.opts)
	if err != nil {
		return nil, err
	}
	p.variants[key] = x
	return x, nil
}

// Run executes the program. Strided operands are gathered into contiguous
// device buffers first (with a cached gather executable).
func (p *program) Run(ctx context.Context, index int, in []device.Operand, opts device.RunOptions) ([]device.Buffer, error) {
	b := p.b
	if err := b.checkIndex(index); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(in) != len(p.params) {
		return nil, fmt.Errorf("%s: program takes %d operands, got %d", b.p.Name, len(p.params), len(in))
	}
	x, err := p.executableFor(opts)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	args := make([]*C.PJRT_Buffer, len(in))
	var temps []*C.PJRT_Buffer
	defer func() {
		for _, t := range temps {
			_ = perr(b.p.api, "destroy", C.gp_buffer_destroy(b.p.api, t))
		}
	}()
	for i, o := range in {
		m := p.params[i]
		if o.Buf == nil || o.DType != m.DType || !slices.Equal(o.Shape, m.Shape) {
			return nil, fmt.Errorf("%s: operand %d is %s%v, the program's parameter is %s%v", b.p.Name, i, o.DType, o.Shape, m.DType, m.Shape)
		}
		pb, err := b.buf(index, o.Buf)
		if err != nil {
			return nil, fmt.Errorf("%s: operand %d: %w", b.p.Name, i, err)
		}
		pj, n, err := b.flat(pb, o.DType)
		if err != nil {
			return nil, fmt.Errorf("%s: operand %d: %w", b.p.Name, i, err)
		}
		numel := op.Numel(o.Shape)
		if o.Layout.IsContiguous() && (o.Offset == 0 || numel == 0) && numel == n {
			args[i] = pj
			continue
		}
		g, err := b.gatherGraph(o.DType, n, o.Layout)
		if err != nil {
			return nil, fmt.Errorf("%s: operand %d: %w", b.p.Name, i, err)
		}
		gx, _, err := b.cached(g, "gather", []op.Meta{{Shape: []int{n}, DType: o.DType}}, []op.Meta{{Shape: []int{numel}, DType: o.DType}})
		if err != nil {
			return nil, fmt.Errorf("%s: operand %d: %w", b.p.Name, i, err)
		}
		res, err := b.run(index, gx, []*C.PJRT_Buffer{pj})
		if err != nil {
			return nil, fmt.Errorf("%s: operand %d: %w", b.p.Name, i, err)
		}
		temps = append(temps, res[0])
		args[i] = res[0]
	}
	if x.nscalars > 0 {
		raw, err := optimScalarValues(x.slots, x.nscalars, opts.Dynamic)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.p.Name, err)
		}
		sv, err := b.upload(index, raw, dtype.F64, []int{x.nscalars})
		if err != nil {
			return nil, fmt.Errorf("%s: optimizer scalars: %w", b.p.Name, err)
		}
		temps = append(temps, sv)
		args = append(args, sv)
	}
	res, err := b.run(index, x, args)
	if err != nil {
		return nil, err
	}
	out := make([]device.Buffer, len(res))
	for i, pj := range res {
		size := op.Numel(x.outs[i].Shape) * x.outs[i].DType.Size()
		pb := &buffer{dev: index, size: size}
		b.setResult(pb, pj, x.outs[i].DType)
		b.noteAlloc(index, size)
		out[i] = pb
	}
	return out, nil
}

// gatherGraph returns the graph that copies layout l of a flat n-element
// buffer into a flat contiguous value.
func (b *Backend) gatherGraph(dt dtype.DType, n int, l op.Layout) (*ir.Graph, error) {
	g := ir.New()
	v, err := flatParam(g, dt, n, l)
	if err != nil {
		return nil, err
	}
	if v.IsParam() {
		v = g.AddNode(op.Copy, op.Attrs{}, []*ir.Value{v}, []op.Meta{v.Meta}).Out[0]
	}
	f, err := flatten(g, v)
	if err != nil {
		return nil, err
	}
	g.SetOutputs(f)
	return g, nil
}

// marshaledHeader is the JSON header of a marshaled program.
type marshaledHeader struct {
	Format  string              `json:"format"`
	Params  []op.Meta           `json:"params"`
	Outputs []op.Meta           `json:"outputs"`
	Stats   device.ProgramStats `json:"stats"`
	Dynamic string              `json:"dynamic"`
	// Optimizer steps whose scalars the executable takes as inputs.
	Slots    []optimSlot `json:"optim_slots,omitempty"`
	NScalars int         `json:"optim_scalars,omitempty"`
}

// Marshal writes the magic, a length-prefixed JSON header (format,
// parameter and output metas, stats, dynamic attribute values) and the
// plugin's serialized executable (PJRT_Executable_Serialize).
func (p *program) Marshal() ([]byte, error) {
	b := p.b
	if C.gp_has_serialize(b.p.api) == 0 {
		return nil, fmt.Errorf("%s: %w: the plugin cannot serialize executables", b.p.Name, device.ErrUnsupported)
	}
	var data *C.char
	var size C.size_t
	if err := perr(b.p.api, "PJRT_Executable_Serialize", C.gp_serialize(b.p.api, p.exe.exe, &data, &size)); err != nil {
		return nil, fmt.Errorf("%s: %w", b.p.Name, err)
	}
	defer C.free(unsafe.Pointer(data))
	exe := C.GoBytes(unsafe.Pointer(data), C.int(size))
	h, err := json.Marshal(marshaledHeader{Format: b.ProgramFormat(), Params: p.params, Outputs: p.outs, Stats: p.stats, Dynamic: p.dynKey, Slots: p.exe.slots, NScalars: p.exe.nscalars})
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.WriteString(programMagic)
	_ = binary.Write(&buf, binary.LittleEndian, uint32(len(h)))
	buf.Write(h)
	buf.Write(exe)
	return buf.Bytes(), nil
}

// LoadProgram rebuilds a program from Marshal's bytes
// (PJRT_Executable_DeserializeAndLoad). Bytes from another format, plugin
// or version wrap device.ErrProgramFormat.
func (b *Backend) LoadProgram(index int, data []byte) (device.Program, error) {
	if err := b.checkIndex(index); err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(data, []byte(programMagic)) || len(data) < len(programMagic)+4 {
		return nil, fmt.Errorf("%s: %w: not a pjrt program", b.p.Name, device.ErrProgramFormat)
	}
	rest := data[len(programMagic):]
	n := binary.LittleEndian.Uint32(rest)
	rest = rest[4:]
	if uint64(n) > uint64(len(rest)) {
		return nil, fmt.Errorf("%s: %w: truncated header", b.p.Name, device.ErrProgramFormat)
	}
	var h marshaledHeader
	if err := json.Unmarshal(rest[:n], &h); err != nil {
		return nil, fmt.Errorf("%s: %w: header: %v", b.p.Name, device.ErrProgramFormat, err)
	}
	if h.Format != b.ProgramFormat() {
		return nil, fmt.Errorf("%s: %w: program format %q, this plugin is %q", b.p.Name, device.ErrProgramFormat, h.Format, b.ProgramFormat())
	}
	for _, m := range append(slices.Clone(h.Params), h.Outputs...) {
		if !m.DType.Valid() || slices.ContainsFunc(m.Shape, func(d int) bool { return d < 0 }) {
			return nil, fmt.Errorf("%s: %w: bad meta %v", b.p.Name, device.ErrProgramFormat, m)
		}
	}
	for _, sl := range h.Slots {
		if d, ok := op.Lookup(sl.Op); !ok || !paramLowered(d) || sl.Off < 0 || sl.Off+optimScalarCount(sl.Op) > h.NScalars {
			return nil, fmt.Errorf("%s: %w: bad optimizer slot %+v", b.p.Name, device.ErrProgramFormat, sl)
		}
	}
	exeBytes := rest[n:]
	if len(exeBytes) == 0 {
		return nil, fmt.Errorf("%s: %w: no executable", b.p.Name, device.ErrProgramFormat)
	}
	if C.gp_has_serialize(b.p.api) == 0 {
		return nil, fmt.Errorf("%s: %w: the plugin cannot deserialize executables", b.p.Name, device.ErrUnsupported)
	}
	cdata := C.CBytes(exeBytes)
	defer C.free(cdata)
	var exe *C.PJRT_LoadedExecutable
	if err := perr(b.p.api, "PJRT_Executable_DeserializeAndLoad", C.gp_deserialize(b.p.api, b.p.client, (*C.char)(cdata), C.size_t(len(exeBytes)), &exe)); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", b.p.Name, device.ErrProgramFormat, err)
	}
	var nout C.size_t
	if err := perr(b.p.api, "PJRT_Executable_NumOutputs", C.gp_num_outputs(b.p.api, exe, &nout)); err != nil || int(nout) != len(h.Outputs) {
		_ = perr(b.p.api, "destroy", C.gp_loaded_destroy(b.p.api, exe))
		return nil, fmt.Errorf("%s: %w: executable has %d outputs, header says %d (%v)", b.p.Name, device.ErrProgramFormat, int(nout), len(h.Outputs), err)
	}
	x := &executable{exe: exe, params: h.Params, outs: h.Outputs, slots: h.Slots, nscalars: h.NScalars}
	p := &program{b: b, params: h.Params, outs: h.Outputs, exe: x, stats: h.Stats, dynKey: h.Dynamic, variants: map[string]*executable{}}
	runtime.SetFinalizer(p, (*program).release)
	return p, nil
}

// RunStableHLO compiles a StableHLO module (MLIR text whose @main takes
// and returns tensors of the given metas) and runs it once on device index
// with host inputs (little-endian, row-major bytes), returning the outputs'
// bytes. It is for tools and tests (checking exported programs); nothing is
// cached.
func (b *Backend) RunStableHLO(index int, text string, params []op.Meta, in [][]byte, outs []op.Meta) ([][]byte, error) {
	if err := b.checkIndex(index); err != nil {
		return nil, err
	}
	if len(in) != len(params) {
		return nil, fmt.Errorf("%s: %d inputs for %d parameters", b.p.Name, len(in), len(params))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	exe, err := b.compileMLIR(text)
	if err != nil {
		return nil, err
	}
	defer func() { _ = perr(b.p.api, "destroy", C.gp_loaded_destroy(b.p.api, exe)) }()
	var nout C.size_t
	if err := perr(b.p.api, "PJRT_Executable_NumOutputs", C.gp_num_outputs(b.p.api, exe, &nout)); err != nil {
		return nil, err
	}
	if int(nout) != len(outs) {
		return nil, fmt.Errorf("%s: the module has %d outputs, %d expected", b.p.Name, int(nout), len(outs))
	}
	args := make([]*C.PJRT_Buffer, len(in))
	defer func() {
		for _, a := range args {
			if a != nil {
				_ = perr(b.p.api, "destroy", C.gp_buffer_destroy(b.p.api, a))
			}
		}
	}()
	for i, m := range params {
		if len(in[i]) != op.Numel(m.Shape)*m.DType.Size() {
			return nil, fmt.Errorf("%s: input %d has %d bytes, %v needs %d", b.p.Name, i, len(in[i]), m, op.Numel(m.Shape)*m.DType.Size())
		}
		if args[i], err = b.upload(index, in[i], m.DType, m.Shape); err != nil {
			return nil, err
		}
	}
	res, err := b.run(index, &executable{exe: exe, params: params, outs: outs}, args)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(res))
	var first error
	for i, pj := range res {
		out[i] = make([]byte, op.Numel(outs[i].Shape)*outs[i].DType.Size())
		if len(out[i]) > 0 && first == nil {
			e := C.gp_buffer_to_host(b.p.api, pj, unsafe.Pointer(&out[i][0]), C.size_t(len(out[i])))
			first = perr(b.p.api, "PJRT_Buffer_ToHostBuffer", e)
		}
		_ = perr(b.p.api, "destroy", C.gp_buffer_destroy(b.p.api, pj))
	}
	if first != nil {
		return nil, first
	}
	return out, nil
}

// normalized returns g with every node's attributes normalized (graphs
// recorded by the runtime may hold, say, an int64 where the op's
// normalized form is an int; ir.Verify and the export insist on it).
func normalized(g *ir.Graph) (*ir.Graph, error) {
	out := ir.New()
	out.DefaultFloat = g.DefaultFloat
	vmap := map[*ir.Value]*ir.Value{}
	for _, p := range g.Params {
		vmap[p] = out.Param(p.Meta)
	}
	for _, n := range g.Nodes {
		if n.IsConst() {
			vmap[n.Out[0]] = out.AddConst(n.Out[0].Meta, n.Data)
			continue
		}
		a, err := n.Op.Normalize(n.Attrs)
		if err != nil {
			return nil, fmt.Errorf("pjrt: %s: %w", n.Op.Name, err)
		}
		in := make([]*ir.Value, len(n.In))
		for i, v := range n.In {
			if v != nil {
				in[i] = vmap[v]
			}
		}
		metas := make([]op.Meta, len(n.Out))
		for i, o := range n.Out {
			metas[i] = o.Meta
		}
		nn := out.AddNode(n.Op, a, in, metas)
		for i, o := range n.Out {
			vmap[o] = nn.Out[i]
		}
	}
	outs := make([]*ir.Value, len(g.Outputs))
	for i, o := range g.Outputs {
		outs[i] = vmap[o]
	}
	out.SetOutputs(outs...)
	return out, nil
}
