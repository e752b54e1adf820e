package op

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gotpu/gotpu/dtype"
)

// The StableHLO emitter contract. Every primitive and view op has an emitter
// (registered with DefStableHLO, in the op/hlo_<group>.go files) that writes
// the op as StableHLO operations through an HLOEmitter. The emitter sees its
// inputs as typed SSA values and its outputs' metadata; the exporter (package
// stablehlo) implements HLOEmitter by printing MLIR text.
//
// Conventions shared by all emitters:
//   - Values are functional: a view op's input is the contiguous tensor its
//     view selects from, as in package ir.
//   - Elementwise ops broadcast their inputs to the output shape themselves
//     (the graph holds the un-broadcast operands, as the eager runtime does);
//     type promotion is already explicit in the graph as convert nodes.
//   - Element types are StableHLO's: f16, bf16, f32, f64, i8..i64 (signless,
//     read as signed), ui8, and i1 for bool. Emitters may use other integer
//     types internally (ui32, ui64 for Philox).

// ErrHLOUnsupported is returned (wrapped, naming the op) by an emitter for
// an op or attribute combination StableHLO cannot express with static shapes.
var ErrHLOUnsupported = errors.New("not expressible in StableHLO")

// HLOType is a StableHLO ranked tensor type: a static shape and an element
// type name ("f32", "i64", "ui8", "i1", "ui32", ...).
type HLOType struct {
	Shape []int
	Elem  string
}

// String formats t as MLIR: tensor<2x3xf32>, tensor<f32> for rank 0.
func (t HLOType) String() string {
	var sb strings.Builder
	sb.WriteString("tensor<")
	for _, d := range t.Shape {
		sb.WriteString(strconv.Itoa(d))
		sb.WriteByte('x')
	}
	sb.WriteString(t.Elem)
	sb.WriteByte('>')
	return sb.String()
}

// DType returns the gotpu dtype of t's element type, or dtype.Invalid for
// element types gotpu has no dtype for (ui32, ui64, ...).
func (t HLOType) DType() dtype.DType {
	for _, d := range dtype.All {
		if HLOElem(d) == t.Elem {
			return d
		}
	}
	return dtype.Invalid
}

// Rank returns the number of dimensions of t.
func (t HLOType) Rank() int { return len(t.Shape) }

// HLOElem returns the StableHLO element type name of d.
func HLOElem(d dtype.DType) string {
	switch d {
	case dtype.Bool:
		return "i1"
	case dtype.U8:
		return "ui8"
	case dtype.I8, dtype.I16, dtype.I32, dtype.I64, dtype.F16, dtype.BF16, dtype.F32, dtype.F64:
		return d.String()
	}
	return "invalid"
}

// HLOTensorType returns the StableHLO type of a tensor of shape and dtype d.
func HLOTensorType(shape []int, d dtype.DType) HLOType {
	s := make([]int, len(shape))
	copy(s, shape)
	return HLOType{Shape: s, Elem: HLOElem(d)}
}

// HLOTypeOf returns the StableHLO type of m.
func HLOTypeOf(m Meta) HLOType { return HLOTensorType(m.Shape, m.DType) }

// HLOValue is one SSA value of an emitted program: its MLIR name (%3, %5#1,
// %arg0) and type. The zero HLOValue stands for an absent optional input.
type HLOValue struct {
	Name string
	Type HLOType
}

// Valid reports whether v is a value (not an absent optional input).
func (v HLOValue) Valid() bool { return v.Name != "" }

// HLOAttr is one attribute of an emitted operation: its name and its value
// as MLIR attribute text (for example "array<i64: 0, 1>" or
// "#stablehlo<comparison_direction LT>").
type HLOAttr struct {
	Name, Value string
}

// HLORegion is a region of an emitted operation (a reduction's body, a sort
// comparator): its block's argument types, and Body, which emits the block's
// operations through e and returns the values its terminator
// (stablehlo.return) yields.
type HLORegion struct {
	Args []HLOType
	Body func(e HLOEmitter, args []HLOValue) []HLOValue
}

// HLOEmitter is what StableHLO emitters write to. Emit appends one operation
// named name ("stablehlo.add", "chlo.erf", ...) applied to operands, with
// attrs (emitted in the given order), one result per entry of results, and
// regions; it returns the results. An implementation records malformed calls
// (a region body returning nothing, an absent operand) and reports them when
// the program is finished, so emitters need not check every call.
type HLOEmitter interface {
	Emit(name string, operands []HLOValue, attrs []HLOAttr, results []HLOType, regions ...HLORegion) []HLOValue
}

// StableHLOFunc emits the StableHLO for one call of an op: in are its inputs
// (zero HLOValues for absent optional inputs), out the metadata of its
// outputs, a its normalized attributes. It returns one value per output, or
// an error wrapping ErrHLOUnsupported for what StableHLO cannot express.
type StableHLOFunc func(e HLOEmitter, in []HLOValue, out []Meta, a Attrs) ([]HLOValue, error)

// DefStableHLO sets the StableHLO emitter of the op whose handle is d
// (op.Add, from handles_gen.go, or the *Def that Register returned). It may
// run before or after the op's Register: emitters live in their own files,
// and a handle exists before any init function runs. Setting an emitter
// twice panics.
func DefStableHLO(d *Def, f StableHLOFunc) {
	mu.Lock()
	defer mu.Unlock()
	if d.StableHLO != nil {
		panic("op: duplicate StableHLO emitter for " + d.Name)
	}
	d.StableHLO = f
}

// HLODims formats a dimension list as an MLIR dense i64 array attribute:
// array<i64: 0, 1> (array<i64> when empty).
func HLODims(xs []int) string {
	if len(xs) == 0 {
		return "array<i64>"
	}
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return "array<i64: " + strings.Join(parts, ", ") + ">"
}

// HLOIntList formats xs as an MLIR list inside an attribute: [0, 1].
func HLOIntList(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// HLOFloatLiteral formats v as an MLIR literal of float element type elem:
// decimal with a point and exponent for finite values (exactly round-
// tripping v at elem's precision), the hexadecimal bit pattern for NaN and
// infinities, as MLIR requires.
func HLOFloatLiteral(v float64, elem string) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		switch elem {
		case "f64":
			return fmt.Sprintf("0x%016X", math.Float64bits(v))
		case "f32":
			return fmt.Sprintf("0x%08X", math.Float32bits(float32(v)))
		case "bf16":
			return fmt.Sprintf("0x%04X", uint16(dtype.BF16FromF32(float32(v))))
		case "f16":
			return fmt.Sprintf("0x%04X", uint16(dtype.F16FromF32(float32(v))))
		}
	}
	bits := 64
	if elem != "f64" {
		bits = 32 // f16 and bf16 values are exact in f32
	}
	s := strconv.FormatFloat(v, 'e', -1, bits)
	if i := strings.IndexByte(s, 'e'); i >= 0 && !strings.Contains(s[:i], ".") {
		s = s[:i] + ".0" + s[i:]
	}
	return s
}

// HLOLiteral formats element i of raw (little-endian data of dtype d) as an
// MLIR literal of d's element type.
func HLOLiteral(d dtype.DType, raw []byte, i int) string {
	switch {
	case d == dtype.Bool:
		if raw[i] != 0 {
			return "true"
		}
		return "false"
	case d.IsFloat():
		return HLOFloatLiteral(dtype.Float64At(d, raw, i), HLOElem(d))
	}
	return strconv.FormatInt(dtype.Int64At(d, raw, i), 10)
}

// HLODense formats raw (little-endian, row-major data of dtype d and shape)
// as an MLIR dense elements attribute with its type: a splat dense<v> when
// all elements are equal, else nested lists.
func HLODense(d dtype.DType, shape []int, raw []byte) (string, error) {
	n := Numel(shape)
	if len(raw) != n*d.Size() {
		return "", fmt.Errorf("stablehlo constant: %d bytes for %d elements of %s", len(raw), n, d)
	}
	t := HLOTensorType(shape, d)
	if n == 0 {
		return "dense<> : " + t.String(), nil
	}
	lits := make([]string, n)
	splat := true
	for i := range lits {
		lits[i] = HLOLiteral(d, raw, i)
		if lits[i] != lits[0] {
			splat = false
		}
	}
	if splat {
		return "dense<" + lits[0] + "> : " + t.String(), nil
	}
	var sb strings.Builder
	var rec func(dim, off int)
	rec = func(dim, off int) {
		if dim == len(shape) {
			sb.WriteString(lits[off])
			return
		}
		inner := Numel(shape[dim+1:])
		sb.WriteByte('[')
		for k := 0; k < shape[dim]; k++ {
			if k > 0 {
				sb.WriteString(", ")
			}
			rec(dim+1, off+k*inner)
		}
		sb.WriteByte(']')
	}
	rec(0, 0)
	return "dense<" + sb.String() + "> : " + t.String(), nil
}

// HLOScalarDense formats a splat constant of type t holding the Go scalar v
// (float64, int64, int, uint64 or bool), converted to t's element type as a
// C cast does (for gotpu dtypes: through dtype's codec, so f16/bf16 round).
func HLOScalarDense(t HLOType, v any) string {
	return "dense<" + hloScalarLiteral(t.Elem, v) + "> : " + t.String()
}

func hloScalarLiteral(elem string, v any) string {
	if u, ok := v.(uint64); ok {
		switch elem {
		case "ui64", "ui32", "ui16", "ui8":
			return strconv.FormatUint(u, 10)
		}
		v = int64(u)
	}
	if i, ok := v.(int); ok {
		v = int64(i)
	}
	switch elem {
	case "ui32", "ui64", "ui16":
		switch x := v.(type) {
		case int64:
			return strconv.FormatInt(x, 10)
		case float64:
			return strconv.FormatInt(int64(x), 10)
		case bool:
			if x {
				return "1"
			}
			return "0"
		}
	}
	d := HLOType{Elem: elem}.DType()
	if d == dtype.Invalid {
		return "0"
	}
	raw := make([]byte, d.Size())
	switch x := v.(type) {
	case float64:
		dtype.PutFloat64(d, raw, 0, x)
	case int64:
		dtype.PutInt64(d, raw, 0, x)
	case bool:
		b := int64(0)
		if x {
			b = 1
		}
		dtype.PutInt64(d, raw, 0, b)
	}
	return HLOLiteral(d, raw, 0)
}
