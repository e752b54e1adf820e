//go:build pjrt

package pjrt

/*
#include "capi.h"
*/
import "C"

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

// unsupportedOps are primitives with a StableHLO emitter that this backend
// still does not run, with the reason (found by the conformance suite).
var unsupportedOps = map[*op.Def]string{}

// Unsupported returns every primitive the backend does not run, with the
// reason, sorted by op name. Composites are not listed: they run through
// their decompositions.
func Unsupported() map[string]string {
	out := map[string]string{}
	for _, d := range op.All() {
		if d.Kind != op.Primitive {
			continue
		}
		if r := unsupportedReason(d); r != "" {
			out[d.Name] = r
		}
	}
	return out
}

// UnsupportedNames returns the keys of Unsupported, sorted.
func UnsupportedNames() []string {
	u := Unsupported()
	names := make([]string, 0, len(u))
	for n := range u {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func unsupportedReason(d *op.Def) string {
	if r, ok := unsupportedOps[d]; ok {
		return r
	}
	if d == op.CopyInPlace || paramLowered(d) {
		return ""
	}
	if len(d.Inplace) > 0 {
		return "in-place op without a functional StableHLO form (callers fall back to the op-by-op path)"
	}
	if d.StableHLO == nil {
		return "no StableHLO emitter"
	}
	return ""
}

// Supports reports whether the op runs on the backend: primitives with a
// StableHLO emitter (copy_ included, which the backend writes itself), in
// every gotpu dtype (all of them are XLA element types).
func (b *Backend) Supports(o *op.Def, dt dtype.DType) bool {
	if o == nil || !dt.Valid() {
		return false
	}
	if _, ok := pjType(dt); !ok {
		return false
	}
	if o.Kind == op.Composite {
		return false
	}
	return unsupportedReason(o) == ""
}

// Launch runs one op: it builds a one-node graph over flat parameters (one
// per present input, each viewed with the operand's layout), exports it to
// StableHLO, compiles it once per fingerprint and executes it.
func (b *Backend) Launch(index int, l *device.Launch) error {
	if err := b.checkIndex(index); err != nil {
		return err
	}
	if l == nil || l.Op == nil {
		return fmt.Errorf("%s: nil launch", b.p.Name)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.launches++
	if l.Op == op.CopyInPlace {
		return b.launchCopy(index, l)
	}
	if paramLowered(l.Op) {
		return b.launchOptim(index, l)
	}
	if r := unsupportedReason(l.Op); r != "" {
		return fmt.Errorf("%s: %s: %w: %s", b.p.Name, l.Op.Name, device.ErrUnsupported, r)
	}
	g := ir.New()
	var params []op.Meta
	args, sizes, err := b.flatInputs(index, l.In, l.Op.Name)
	if err != nil {
		return err
	}
	// Fast path: the same launch signature ran before and its executable
	// is still cached (no graph to build or fingerprint).
	lkey := launchKey(l, sizes)
	if fp, ok := b.launchKeys[lkey]; ok {
		if x, ok := b.execs[fp]; ok {
			res, err := b.run(index, x, args)
			if err != nil {
				return fmt.Errorf("%s: %s: %w", b.p.Name, l.Op.Name, err)
			}
			return b.storeAll(index, l.Out, res, l.Op.Name)
		}
		delete(b.launchKeys, lkey)
	}
	ins := make([]*ir.Value, len(l.In))
	for i, in := range l.In {
		if in.Buf == nil {
			continue
		}
		n := sizes[i]
		v, err := flatParam(g, in.DType, n, in.Layout)
		if err != nil {
			return fmt.Errorf("%s: %s input %d: %w", b.p.Name, l.Op.Name, i, err)
		}
		ins[i] = v
		params = append(params, op.Meta{Shape: []int{n}, DType: in.DType})
	}
	outMeta := make([]op.Meta, len(l.Out))
	for i, o := range l.Out {
		outMeta[i] = op.Meta{Shape: slices.Clone(o.Shape), DType: o.DType}
		if outMeta[i].Shape == nil {
			outMeta[i].Shape = []int{}
		}
	}
	vals, handled, err := rewrite(g, l.Op, l.Attrs, ins, outMeta, b.precision())
	if err != nil {
		return fmt.Errorf("%s: %s: %w", b.p.Name, l.Op.Name, err)
	}
	if !handled {
		vals = g.AddNode(l.Op, l.Attrs, ins, outMeta).Out
	}
	var outs []*ir.Value
	for _, o := range vals {
		f, err := flatten(g, o)
		if err != nil {
			return err
		}
		outs = append(outs, f)
	}
	g.SetOutputs(outs...)
	x, fp, err := b.cached(g, l.Op.Name, params, outMeta)
	if err == nil {
		if len(b.launchKeys) >= 4*MaxEagerExecutables {
			clear(b.launchKeys)
		}
		b.launchKeys[lkey] = fp
	}
	if err != nil {
		return fmt.Errorf("%s: %s: %w", b.p.Name, l.Op.Name, err)
	}
	res, err := b.run(index, x, args)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", b.p.Name, l.Op.Name, err)
	}
	return b.storeAll(index, l.Out, res, l.Op.Name)
}

// storeAll stores results into the output operands (destroying any result
// it cannot store).
func (b *Backend) storeAll(index int, outs []device.Operand, res []*C.PJRT_Buffer, name string) error {
	var first error
	for i, pj := range res {
		if first != nil {
			_ = perr(b.p.api, "destroy", C.gp_buffer_destroy(b.p.api, pj))
			continue
		}
		pb, err := b.buf(index, outs[i].Buf)
		if err == nil {
			err = b.store(pb, outs[i].Layout, outs[i].DType, pj)
		} else {
			_ = perr(b.p.api, "destroy", C.gp_buffer_destroy(b.p.api, pj))
		}
		if err != nil {
			first = fmt.Errorf("%s: %s output %d: %w", b.p.Name, name, i, err)
		}
	}
	return first
}

// launchCopy runs copy_(self, src): src viewed broadcast to self's shape,
// converted to self's dtype, stored at self's layout.
func (b *Backend) launchCopy(index int, l *device.Launch) error {
	if len(l.In) != 2 || l.In[0].Buf == nil || l.In[1].Buf == nil {
		return fmt.Errorf("%s: copy_ needs self and src", b.p.Name)
	}
	self, src := l.In[0], l.In[1]
	bl, ok := src.Layout.BroadcastTo(self.Shape)
	if !ok {
		return fmt.Errorf("%s: copy_: source of shape %v does not broadcast to %v", b.p.Name, src.Shape, self.Shape)
	}
	spb, err := b.buf(index, src.Buf)
	if err != nil {
		return fmt.Errorf("%s: copy_ src: %w", b.p.Name, err)
	}
	dpb, err := b.buf(index, self.Buf)
	if err != nil {
		return fmt.Errorf("%s: copy_ self: %w", b.p.Name, err)
	}
	pj, n, err := b.flat(spb, src.DType)
	if err != nil {
		return fmt.Errorf("%s: copy_ src: %w", b.p.Name, err)
	}
	g := ir.New()
	v, err := flatParam(g, src.DType, n, bl)
	if err != nil {
		return fmt.Errorf("%s: copy_: %w", b.p.Name, err)
	}
	if src.DType != self.DType {
		if v, err = convertTo(g, v, self.DType); err != nil {
			return err
		}
	}
	if len(v.Meta.Shape) == 0 || v.IsParam() {
		// A parameter cannot be an output without a copy; a reshape makes
		// the result a fresh value.
		v = g.AddNode(op.Copy, op.Attrs{}, []*ir.Value{v}, []op.Meta{{Shape: slices.Clone(v.Meta.Shape), DType: v.Meta.DType}}).Out[0]
	}
	f, err := flatten(g, v)
	if err != nil {
		return err
	}
	g.SetOutputs(f)
	params := []op.Meta{{Shape: []int{n}, DType: src.DType}}
	x, _, err := b.cached(g, "copy_", params, []op.Meta{{Shape: slices.Clone(self.Shape), DType: self.DType}})
	if err != nil {
		return fmt.Errorf("%s: copy_: %w", b.p.Name, err)
	}
	res, err := b.run(index, x, []*C.PJRT_Buffer{pj})
	if err != nil {
		return fmt.Errorf("%s: copy_: %w", b.p.Name, err)
	}
	if err := b.store(dpb, self.Layout, self.DType, res[0]); err != nil {
		return fmt.Errorf("%s: copy_: %w", b.p.Name, err)
	}
	return nil
}

// convertTo appends a convert of v to dt.
func convertTo(g *ir.Graph, v *ir.Value, dt dtype.DType) (*ir.Value, error) {
	cd := op.Convert
	na, err := cd.Normalize(op.Attrs{"dtype": dt})
	if err != nil {
		return nil, fmt.Errorf("pjrt: convert: %w", err)
	}
	return g.AddNode(cd, na, []*ir.Value{v}, []op.Meta{{Shape: slices.Clone(v.Meta.Shape), DType: dt}}).Out[0], nil
}

// launchKey is a string naming everything a launch's graph depends on: the
// op, its attributes, each operand's dtype, buffer length and layout, and
// the outputs' metas.
func launchKey(l *device.Launch, sizes []int) string {
	var sb strings.Builder
	sb.WriteString(l.Op.Name)
	keys := make([]string, 0, len(l.Attrs))
	for k := range l.Attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&sb, "|%s=%#v", k, l.Attrs[k])
	}
	for i, in := range l.In {
		if in.Buf == nil {
			sb.WriteString("|-")
			continue
		}
		fmt.Fprintf(&sb, "|%s:%d:%v:%v:%d", in.DType, sizes[i], in.Shape, in.Strides, in.Offset)
	}
	sb.WriteString("|>")
	for _, o := range l.Out {
		fmt.Fprintf(&sb, "|%s:%v", o.DType, o.Shape)
	}
	return sb.String()
}

// flatInputs returns the flat device buffers of a launch's inputs (absent
// optional inputs skipped) and each input's element count (-1 when absent),
// the launch-signature part of launchKey.
func (b *Backend) flatInputs(index int, ins []device.Operand, name string) ([]*C.PJRT_Buffer, []int, error) {
	var (
		args  []*C.PJRT_Buffer
		sizes []int
	)
	for i, in := range ins {
		if in.Buf == nil {
			sizes = append(sizes, -1)
			continue
		}
		pb, err := b.buf(index, in.Buf)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %s input %d: %w", b.p.Name, name, i, err)
		}
		pj, n, err := b.flat(pb, in.DType)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %s input %d: %w", b.p.Name, name, i, err)
		}
		args = append(args, pj)
		sizes = append(sizes, n)
	}
	return args, sizes, nil
}
