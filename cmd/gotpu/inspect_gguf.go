package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gotpu/gotpu/gguf"
)

// inspectGGUF is the "gguf" object of an inspect report (null for other kinds).
type inspectGGUF struct {
	Version      uint32         `json:"version"`
	Architecture string         `json:"architecture"`
	Alignment    int64          `json:"alignment"`
	DataOffset   int64          `json:"data_offset"`
	TensorTypes  map[string]int `json:"tensor_types"`
	Metadata     []inspectKV    `json:"metadata"`
}

// inspectKV is one GGUF metadata pair; long arrays are summarised.
type inspectKV struct {
	Key       string `json:"key"`
	Type      string `json:"type"`
	Len       *int   `json:"len"`
	Value     any    `json:"value"`
	Truncated bool   `json:"truncated"`
}

// Arrays longer than ggufArrayMax show only their first ggufArrayHead entries.
const (
	ggufArrayMax  = 16
	ggufArrayHead = 8
)

// isGGUF reports whether path names a GGUF file: by extension, or by magic.
func isGGUF(path string) bool {
	if strings.EqualFold(filepath.Ext(path), ".gguf") {
		return true
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [4]byte
	_, err = io.ReadFull(f, magic[:])
	return err == nil && string(magic[:]) == gguf.Magic
}

func inspectGGUFFile(path string) (*inspectReport, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	defer f.Close()
	g := &inspectGGUF{
		Version: f.Version(), Architecture: f.Architecture(), Alignment: f.Alignment(),
		DataOffset: f.DataOffset(), TensorTypes: map[string]int{}, Metadata: []inspectKV{},
	}
	rep := &inspectReport{Path: path, Kind: "gguf", Metadata: map[string]string{}, Tensors: []inspectTensor{}, GGUF: g}
	for _, kv := range f.Metadata().All() {
		ikv := inspectKV{Key: kv.Key, Type: kv.Value.TypeName(), Value: ggufJSONValue(kv.Value)}
		if a, ok := kv.Value.Array(); ok {
			n := a.Len()
			ikv.Len = &n
			ikv.Truncated = n > ggufArrayMax
		}
		g.Metadata = append(g.Metadata, ikv)
		rep.Metadata[kv.Key] = ggufText(kv.Value, 0)
	}
	base := filepath.Base(path)
	for _, t := range f.Tensors() {
		rep.Tensors = append(rep.Tensors, inspectTensor{
			Name: t.Name, DType: t.Type.String(), Shape: t.Shape(), Begin: t.Begin, End: t.End,
			Bytes: t.NumBytes(), File: base,
		})
		rep.TotalBytes += t.NumBytes()
		g.TensorTypes[t.Type.String()]++
	}
	slices.SortFunc(rep.Tensors, func(a, b inspectTensor) int { return strings.Compare(a.Name, b.Name) })
	rep.NumTensors = len(rep.Tensors)
	return rep, nil
}

// ggufJSONValue converts a metadata value for JSON: numbers, bools and
// strings as themselves (non-finite floats as the strings "NaN", "+Inf",
// "-Inf"), arrays as lists, cut to their first entries when long.
func ggufJSONValue(v gguf.Value) any {
	if a, ok := v.Array(); ok {
		n := a.Len()
		if n > ggufArrayMax {
			n = ggufArrayHead
		}
		out := make([]any, n)
		for i := range n {
			out[i] = ggufJSONValue(a.Index(i))
		}
		return out
	}
	if x, ok := v.Float(); ok {
		switch {
		case math.IsNaN(x):
			return "NaN"
		case math.IsInf(x, 1):
			return "+Inf"
		case math.IsInf(x, -1):
			return "-Inf"
		}
	}
	return v.Any()
}

// ggufText renders a metadata value on one line for people: strings quoted
// (long ones cut), long arrays as their length and first entries.
func ggufText(v gguf.Value, depth int) string {
	if a, ok := v.Array(); ok {
		n := a.Len()
		shown := n
		if n > ggufArrayMax || depth > 0 && n > 4 {
			shown = min(n, 4)
			if depth == 0 {
				shown = min(n, ggufArrayHead/2)
			}
		}
		parts := make([]string, shown)
		for i := range shown {
			parts[i] = ggufText(a.Index(i), depth+1)
		}
		s := "[" + strings.Join(parts, ", ")
		if shown < n {
			s += fmt.Sprintf(", ... (%d entries)", n)
		}
		return s + "]"
	}
	switch x := v.Any().(type) {
	case string:
		const maxLen = 60
		if len(x) > maxLen {
			cut := maxLen
			for cut > 0 && !isRuneStart(x[cut]) {
				cut--
			}
			return strconv.Quote(x[:cut]) + fmt.Sprintf("... (%d bytes)", len(x))
		}
		return strconv.Quote(x)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	default:
		return fmt.Sprint(x)
	}
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// writeInspectGGUF prints the human-readable report of a GGUF file.
func writeInspectGGUF(w io.Writer, rep *inspectReport) error {
	g := rep.GGUF
	arch := g.Architecture
	if arch == "" {
		arch = "no general.architecture"
	}
	types := make([]string, 0, len(g.TensorTypes))
	for t := range g.TensorTypes {
		types = append(types, t)
	}
	slices.SortFunc(types, func(a, b string) int {
		if c := g.TensorTypes[b] - g.TensorTypes[a]; c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	for i, t := range types {
		types[i] = fmt.Sprintf("%s ×%d", t, g.TensorTypes[t])
	}
	fmt.Fprintf(w, "path:      %s\nkind:      gguf v%d (%s)\n", rep.Path, g.Version, arch)
	fmt.Fprintf(w, "tensors:   %d (%s)", rep.NumTensors, humanBytes(rep.TotalBytes))
	if len(types) > 0 {
		fmt.Fprintf(w, ": %s", strings.Join(types, ", "))
	}
	fmt.Fprintf(w, "\nalignment: %d, data section at byte %d\n", g.Alignment, g.DataOffset)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(g.Metadata) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "KEY\tTYPE\tVALUE")
		for _, kv := range g.Metadata {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", kv.Key, kv.Type, rep.Metadata[kv.Key])
		}
	}
	if len(rep.Tensors) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "NAME\tTYPE\tSHAPE\tBYTES\tBEGIN")
		for _, t := range rep.Tensors {
			fmt.Fprintf(tw, "%s\t%s\t%v\t%d\t%d\n", t.Name, t.DType, t.Shape, t.Bytes, t.Begin)
		}
	}
	return tw.Flush()
}
