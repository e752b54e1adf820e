//go:build pjrt

package pjrt

/*
#include <stdlib.h>
#include "capi.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"slices"
	"sort"
	"time"
	"unsafe"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/stablehlo"
)

// compileOptions is a serialized xla.CompileOptionsProto:
// executable_build_options (field 3) = {num_replicas (4): 1,
// num_partitions (5): 1}, compile_portable_executable (4): true, so one
// executable runs on any device of the client (chosen at execute time),
// and env_option_overrides (7) = {xla_allow_excess_precision: false}.
// Without the override XLA:GPU deletes f32 -> bf16 -> f32 round trips
// (its default allows "excess precision"), which would turn the bf16
// rounding that precision "medium" and "high" are made of (see rewrite)
// back into full f32 products.
var compileOptions = buildCompileOptions()

func buildCompileOptions() []byte {
	out := pbBytes(nil, 3, []byte{0x20, 0x01, 0x28, 0x01}) // num_replicas 1, num_partitions 1
	out = pbVarint(out, 4, 1)                              // compile_portable_executable
	return appendOptionOverrides(out)
}

// appendOptionOverrides appends the CompileOptionsProto env_option_overrides
// (field 7, map<string, OptionOverrideProto>) every compile sets:
// xla_allow_excess_precision false (see compileOptions).
func appendOptionOverrides(b []byte) []byte {
	val := pbVarint(nil, 2, 0) // OptionOverrideProto.bool_field = false
	entry := pbBytes(pbBytes(nil, 1, []byte("xla_allow_excess_precision")), 2, val)
	return pbBytes(b, 7, entry)
}

// executable is a loaded PJRT executable whose parameters and outputs are
// all flat (one-dimensional) arrays.
type executable struct {
	exe     *C.PJRT_LoadedExecutable
	outs    []op.Meta // logical output metas (flattened in the executable)
	params  []op.Meta // logical parameter metas
	mlirLen int
	// Optimizer steps whose per-step scalars the executable takes as one
	// f64 vector of nscalars after params (flatGraph).
	slots    []optimSlot
	nscalars int
}

// compileMLIR compiles StableHLO text.
func (b *Backend) compileMLIR(text string) (*C.PJRT_LoadedExecutable, error) {
	code := C.CString(text)
	defer C.free(unsafe.Pointer(code))
	format := C.CString("mlir")
	defer C.free(unsafe.Pointer(format))
	opts := C.CBytes(compileOptions)
	defer C.free(opts)
	var exe *C.PJRT_LoadedExecutable
	e := C.gp_compile(b.p.api, b.p.client, code, C.size_t(len(text)), format, (*C.char)(opts), C.size_t(len(compileOptions)), &exe)
	if err := perr(b.p.api, "PJRT_Client_Compile", e); err != nil {
		return nil, err
	}
	var n C.size_t
	if err := perr(b.p.api, "PJRT_Executable_NumOutputs", C.gp_num_outputs(b.p.api, exe, &n)); err != nil {
		_ = perr(b.p.api, "destroy", C.gp_loaded_destroy(b.p.api, exe))
		return nil, err
	}
	return exe, nil
}

// newExecutable exports g (flat parameters and outputs) and compiles it.
func (b *Backend) newExecutable(g *ir.Graph, name string, params, outs []op.Meta) (*executable, error) {
	text, err := stablehlo.Export(g, name)
	if err != nil {
		return nil, err
	}
	exe, err := b.compileMLIR(text)
	if err != nil {
		return nil, fmt.Errorf("%s: compiling %s: %w", b.p.Name, name, err)
	}
	x := &executable{exe: exe, outs: outs, params: params, mlirLen: len(text)}
	return x, nil
}

// run executes x on device index with flat PJRT argument buffers and
// returns its flat output buffers (owned by the caller).
func (b *Backend) run(index int, x *executable, args []*C.PJRT_Buffer) ([]*C.PJRT_Buffer, error) {
	cargs := (**C.PJRT_Buffer)(C.malloc(C.size_t(len(args)+1) * C.size_t(unsafe.Sizeof(uintptr(0)))))
	defer C.free(unsafe.Pointer(cargs))
	as := unsafe.Slice(cargs, len(args)+1)
	copy(as, args)
	couts := (**C.PJRT_Buffer)(C.malloc(C.size_t(len(x.outs)+1) * C.size_t(unsafe.Sizeof(uintptr(0)))))
	defer C.free(unsafe.Pointer(couts))
	os := unsafe.Slice(couts, len(x.outs)+1)
	for i := range os {
		os[i] = nil
	}
	e := C.gp_execute(b.p.api, x.exe, b.p.devices[index], cargs, C.size_t(len(args)), couts)
	if err := perr(b.p.api, "PJRT_LoadedExecutable_Execute", e); err != nil {
		for _, o := range os {
			if o != nil {
				_ = perr(b.p.api, "destroy", C.gp_buffer_destroy(b.p.api, o))
			}
		}
		return nil, err
	}
	return slices.Clone(os[:len(x.outs)]), nil
}

// flatParam adds a flat parameter of n elements of dt to g and returns the
// value of layout l viewed from it (a reshape when l is the whole buffer
// in order, else as_strided).
func flatParam(g *ir.Graph, dt dtype.DType, n int, l op.Layout) (*ir.Value, error) {
	p := g.Param(op.Meta{Shape: []int{n}, DType: dt})
	return viewOf(g, p, n, l)
}

// viewOf returns the value of layout l over the flat value p of n elements.
func viewOf(g *ir.Graph, p *ir.Value, n int, l op.Layout) (*ir.Value, error) {
	m := op.Meta{Shape: slices.Clone(l.Shape), DType: p.Meta.DType}
	if m.Shape == nil {
		m.Shape = []int{}
	}
	numel := op.Numel(l.Shape)
	if l.IsContiguous() && (l.Offset == 0 || numel == 0) && numel == n {
		if len(l.Shape) == 1 {
			return p, nil
		}
		return addView(g, "reshape", op.Attrs{"shape": slices.Clone(m.Shape)}, p, m)
	}
	for _, s := range l.Strides {
		if s < 0 {
			return nil, fmt.Errorf("pjrt: negative strides %v are not supported", l.Strides)
		}
	}
	if v, ok, err := structuredView(g, p, n, l); ok || err != nil {
		return v, err
	}
	lo, hi := l.Span()
	if numel > 0 && (lo < 0 || hi > n) {
		return nil, fmt.Errorf("pjrt: layout %+v reaches outside its %d-element buffer", l, n)
	}
	return addView(g, "as_strided", op.Attrs{"shape": slices.Clone(m.Shape), "strides": slices.Clone(l.Strides), "offset": l.Offset}, p, m)
}

func addView(g *ir.Graph, name string, a op.Attrs, in *ir.Value, out op.Meta) (*ir.Value, error) {
	d, ok := op.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("pjrt: op %s missing from the op table", name)
	}
	na, err := d.Normalize(a)
	if err != nil {
		return nil, fmt.Errorf("pjrt: %s: %w", name, err)
	}
	return g.AddNode(d, na, []*ir.Value{in}, []op.Meta{out}).Out[0], nil
}

// flatten returns v reshaped to one dimension.
func flatten(g *ir.Graph, v *ir.Value) (*ir.Value, error) {
	n := op.Numel(v.Meta.Shape)
	if len(v.Meta.Shape) == 1 {
		return v, nil
	}
	return addView(g, "reshape", op.Attrs{"shape": []int{n}}, v, op.Meta{Shape: []int{n}, DType: v.Meta.DType})
}

// cached returns the eager executable for g, compiling it on a miss.
// Called with b.mu held.
func (b *Backend) cached(g *ir.Graph, name string, params, outs []op.Meta) (*executable, string, error) {
	// The fingerprint leaves out dynamic attribute values (seeds, learning
	// rates), which XLA bakes into the executable: they join the key.
	key := g.Fingerprint() + dynKeyOf(dynamicOf(g))
	if x, ok := b.execs[key]; ok {
		return x, key, nil
	}
	t0 := time.Now()
	x, err := b.newExecutable(g, name, params, outs)
	if err != nil {
		return nil, "", err
	}
	b.compileTime += time.Since(t0)
	b.compiles++
	// Bounded, oldest first out: a run with many shapes, or random ops
	// whose seeds differ at every call, must not grow without limit.
	for len(b.order) >= MaxEagerExecutables {
		old := b.order[0]
		b.order = b.order[1:]
		if ox, ok := b.execs[old]; ok {
			_ = perr(b.p.api, "PJRT_LoadedExecutable_Destroy", C.gp_loaded_destroy(b.p.api, ox.exe))
			delete(b.execs, old)
		}
	}
	b.execs[key] = x
	b.order = append(b.order, key)
	return x, key, nil
}

// MaxEagerExecutables bounds the eager executable cache of each backend.
var MaxEagerExecutables = 4096

// CacheStats reports the eager executable cache: entries, compiles (cache
// misses) and launches so far.
func (b *Backend) CacheStats() (entries, compiles, launches int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.execs), b.compiles, b.launches
}

// CompileTime returns the total time spent compiling eager executables.
func (b *Backend) CompileTime() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.compileTime
}

// scatterHost writes the contiguous values src (elements of es bytes, in
// row-major order of l.Shape) into dst at layout l.
func scatterHost(dst []byte, l op.Layout, es int, src []byte) {
	layoutIndex(l, func(k, off int) {
		copy(dst[off*es:(off+1)*es], src[k*es:(k+1)*es])
	})
}

// store makes the flat result pj (dtype dt) the contents of output operand
// buffer pb at layout l: directly when l covers pb in order, else through
// the host.
func (b *Backend) store(pb *buffer, l op.Layout, dt dtype.DType, pj *C.PJRT_Buffer) error {
	numel := op.Numel(l.Shape)
	if l.IsContiguous() && (l.Offset == 0 || numel == 0) && numel*dt.Size() == pb.size {
		b.setResult(pb, pj, dt)
		return nil
	}
	defer func() { _ = perr(b.p.api, "destroy", C.gp_buffer_destroy(b.p.api, pj)) }()
	vals := make([]byte, numel*dt.Size())
	if len(vals) > 0 {
		e := C.gp_buffer_to_host(b.p.api, pj, unsafe.Pointer(&vals[0]), C.size_t(len(vals)))
		runtime.KeepAlive(vals)
		if err := perr(b.p.api, "PJRT_Buffer_ToHostBuffer", e); err != nil {
			return err
		}
	}
	if err := b.ensureHost(pb); err != nil {
		return err
	}
	lo, hi := l.Span()
	if numel > 0 && (lo < 0 || hi*dt.Size() > pb.size) {
		return fmt.Errorf("%s: output layout %+v reaches outside its %d-byte buffer", b.p.Name, l, pb.size)
	}
	for _, s := range l.Strides {
		if s < 0 {
			return fmt.Errorf("%s: negative output strides %v", b.p.Name, l.Strides)
		}
	}
	scatterHost(pb.host, l, dt.Size(), vals)
	b.dropDevice(pb)
	return nil
}

// structuredView expresses l over the flat value p of n elements as
// reshape, permute, reshape and expand when l is a permutation of the whole
// buffer with broadcast (stride 0) dimensions, the layouts broadcasting
// and transposes give; XLA compiles these into copies, where as_strided's
// general gather is slower. ok is false for other layouts.
func structuredView(g *ir.Graph, p *ir.Value, n int, l op.Layout) (*ir.Value, bool, error) {
	if l.Offset != 0 || op.Numel(l.Shape) == 0 {
		return nil, false, nil
	}
	type dim struct{ i, size, stride int }
	var ds []dim
	for i, s := range l.Shape {
		if s > 1 && l.Strides[i] != 0 {
			ds = append(ds, dim{i, s, l.Strides[i]})
		}
	}
	sorted := slices.Clone(ds)
	sort.SliceStable(sorted, func(a, b int) bool { return sorted[a].stride > sorted[b].stride })
	exp := 1
	for k := len(sorted) - 1; k >= 0; k-- {
		if sorted[k].stride != exp {
			return nil, false, nil
		}
		exp *= sorted[k].size
	}
	if exp != n {
		return nil, false, nil
	}
	dt := p.Meta.DType
	v := p
	sizes := make([]int, len(sorted))
	for k, d := range sorted {
		sizes[k] = d.size
	}
	var err error
	if !slices.Equal(sizes, v.Meta.Shape) {
		if v, err = addView(g, "reshape", op.Attrs{"shape": slices.Clone(sizes)}, v, op.Meta{Shape: slices.Clone(sizes), DType: dt}); err != nil {
			return nil, false, err
		}
	}
	perm := make([]int, len(ds))
	identity := true
	for j, d := range ds {
		for k, s := range sorted {
			if s.i == d.i {
				perm[j] = k
			}
		}
		identity = identity && perm[j] == j
	}
	if !identity {
		ps := make([]int, len(perm))
		for j, k := range perm {
			ps[j] = sizes[k]
		}
		if v, err = addView(g, "permute", op.Attrs{"dims": perm}, v, op.Meta{Shape: ps, DType: dt}); err != nil {
			return nil, false, err
		}
	}
	shape2 := make([]int, len(l.Shape))
	for i, s := range l.Shape {
		shape2[i] = 1
		if s > 1 && l.Strides[i] != 0 {
			shape2[i] = s
		}
	}
	if !slices.Equal(shape2, v.Meta.Shape) {
		if v, err = addView(g, "reshape", op.Attrs{"shape": slices.Clone(shape2)}, v, op.Meta{Shape: slices.Clone(shape2), DType: dt}); err != nil {
			return nil, false, err
		}
	}
	if !slices.Equal(shape2, l.Shape) {
		if v, err = addView(g, "expand", op.Attrs{"shape": slices.Clone(l.Shape)}, v, op.Meta{Shape: slices.Clone(l.Shape), DType: dt}); err != nil {
			return nil, false, err
		}
	}
	return v, true, nil
}
