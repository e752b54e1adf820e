package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/gotpu/gotpu/gguf"
	"github.com/gotpu/gotpu/internal/atomicfile"
	"github.com/gotpu/gotpu/internal/quant"
)

// quantizeReport is the result of gotpu quantize (--json prints it).
type quantizeReport struct {
	Model     string  `json:"model"`
	Out       string  `json:"out"`
	Type      string  `json:"type"`
	FileType  uint32  `json:"file_type"`
	Tensors   int     `json:"tensors"`
	Quantized int     `json:"quantized"`
	KeptF32   int     `json:"kept_f32"`
	BytesIn   int64   `json:"bytes_in"`
	BytesOut  int64   `json:"bytes_out"`
	Seconds   float64 `json:"seconds"`
	// Kept lists the matrices left in f32 because their rows are not a
	// whole number of blocks.
	Kept []string `json:"kept"`
	// Fallback lists the K-type matrices whose rows are not whole
	// super-blocks, written in llama.cpp's fallback type instead
	// (q4_k: q5_0, q5_k: q5_1, q6_k: q8_0), as "name:type".
	Fallback []string `json:"fallback"`
}

// quantizeTypes maps --type to the ggml type and llama.cpp's
// general.file_type (enum llama_ftype) of a file whose matrices all have
// that type (the K types as their _S variants, which come closest).
var quantizeTypes = map[string]struct {
	t  gguf.Type
	ft uint32
}{
	"q4_0": {gguf.Q4_0, 2},
	"q4_1": {gguf.Q4_1, 3},
	"q8_0": {gguf.Q8_0, 7},
	"q5_0": {gguf.Q5_0, 8},
	"q5_1": {gguf.Q5_1, 9},
	"q4_k": {gguf.Q4_K, 14},
	"q5_k": {gguf.Q5_K, 16},
	"q6_k": {gguf.Q6_K, 18},
}

func newQuantizeCmd() *cobra.Command {
	var (
		model, typ, out string
		asJSON          bool
	)
	cmd := &cobra.Command{
		Use:   "quantize --model FILE.gguf --type q8_0|q4_0|q4_1|q5_0|q5_1|q4_k|q5_k|q6_k --out FILE.gguf [--json]",
		Short: "Write a GGUF file with its matrices quantized to one ggml block type",
		Long: `Read a GGUF file and write a copy whose weight matrices (2-d tensors
named *.weight, the token embedding and output head included) are encoded in
--type with ggml's reference quantizers (bit for bit as quantize_row_*_ref;
already quantized tensors are dequantized first). Other tensors (norms,
biases, ...) are written as f32. For the K types, a matrix whose rows are
not whole super-blocks of 256 takes llama.cpp's fallback type (q4_k: q5_0,
q5_k: q5_1, q6_k: q8_0) and is listed under fallback; one whose rows are
not whole blocks at all stays f32 and is listed under kept. The metadata is copied in order
with general.file_type set to llama.cpp's file type for --type (the K types
as Q4_K_S, Q5_K_S, Q6_K), and the alignment kept, so llama.cpp and the gguf
Python package read the result. The output is written to a temporary file
next to --out and renamed over it when complete.

With --json the report is one JSON object: model, out, type, file_type,
tensors, quantized, kept_f32, bytes_in, bytes_out, seconds, kept, fallback.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := runQuantize(cmd.Context(), model, typ, out)
			if err != nil {
				return fmt.Errorf("quantize: %w", err)
			}
			return printQuantizeReport(cmd.OutOrStdout(), rep, asJSON)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&model, "model", "", "GGUF file to read")
	fs.StringVar(&typ, "type", "", "block type: q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k or q6_k")
	fs.StringVar(&out, "out", "", "GGUF file to write")
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func init() { rootCmd.AddCommand(newQuantizeCmd()) }

func printQuantizeReport(w io.Writer, rep *quantizeReport, asJSON bool) error {
	if asJSON {
		return writeJSON(w, rep)
	}
	_, err := fmt.Fprintf(w, "%s -> %s (%s): %d tensors, %d quantized, %d f32; %.1f MB -> %.1f MB in %.1fs\n",
		rep.Model, rep.Out, rep.Type, rep.Tensors, rep.Quantized, rep.KeptF32, float64(rep.BytesIn)/1e6, float64(rep.BytesOut)/1e6, rep.Seconds)
	if err == nil && len(rep.Fallback) > 0 {
		_, err = fmt.Fprintf(w, "fallback types (rows are not whole super-blocks): %s\n", strings.Join(rep.Fallback, ", "))
	}
	if err == nil && len(rep.Kept) > 0 {
		_, err = fmt.Fprintf(w, "kept in f32 (rows are not whole blocks): %s\n", strings.Join(rep.Kept, ", "))
	}
	return err
}

// runQuantize writes out from model with its matrices in type typ.
func runQuantize(ctx context.Context, model, typ, out string) (*quantizeReport, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if model == "" || out == "" || typ == "" {
		return nil, errors.New("--model, --type and --out are required")
	}
	qt, ok := quantizeTypes[strings.ToLower(typ)]
	if !ok {
		return nil, fmt.Errorf("unknown --type %q (want q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k or q6_k)", typ)
	}
	if st, err := os.Stat(model); err != nil {
		return nil, err
	} else if st.IsDir() {
		return nil, fmt.Errorf("%s is a directory: quantize reads GGUF files", model)
	}
	if abs1, err1 := filepath.Abs(model); err1 == nil {
		if abs2, err2 := filepath.Abs(out); err2 == nil && abs1 == abs2 {
			return nil, errors.New("--out must differ from --model")
		}
	}
	start := time.Now()
	f, err := gguf.Open(model)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rep := &quantizeReport{Model: model, Out: out, Type: strings.ToLower(typ), FileType: qt.ft, Kept: []string{}, Fallback: []string{}}

	kvs := f.Metadata().All()
	hasFT := false
	for i, kv := range kvs {
		if kv.Key == "general.file_type" {
			kvs[i].Value = gguf.Uint32Value(qt.ft)
			hasFT = true
		}
	}
	if !hasFT {
		kvs = append(kvs, gguf.KV{Key: "general.file_type", Value: gguf.Uint32Value(qt.ft)})
	}
	var ts []gguf.WriteTensor
	for _, ti := range f.Tensors() {
		ti := ti
		rep.Tensors++
		rep.BytesIn += ti.NumBytes()
		matrix := len(ti.Dims) == 2 && strings.HasSuffix(ti.Name, ".weight")
		dst := gguf.F32
		if matrix {
			t := qt.t
			if ti.Dims[0]%int64(t.BlockSize()) != 0 {
				// llama.cpp's fallback for rows that are not whole
				// super-blocks of 256.
				t = map[gguf.Type]gguf.Type{gguf.Q4_K: gguf.Q5_0, gguf.Q5_K: gguf.Q5_1, gguf.Q6_K: gguf.Q8_0}[t]
			}
			if t != 0 && ti.Dims[0]%int64(t.BlockSize()) == 0 {
				dst = t
				rep.Quantized++
				if t != qt.t {
					rep.Fallback = append(rep.Fallback, ti.Name+":"+strings.ToLower(t.String()))
				}
			} else {
				rep.Kept = append(rep.Kept, ti.Name)
				rep.KeptF32++
			}
		} else {
			rep.KeptF32++
		}
		if !ti.Type.CanDequantize() && ti.Type != dst {
			return nil, fmt.Errorf("tensor %s: cannot read type %v", ti.Name, ti.Type)
		}
		ts = append(ts, gguf.WriteTensor{Name: ti.Name, Type: dst, Dims: ti.Dims, Data: func() ([]byte, error) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if ti.Type == dst {
				return f.Bytes(ti.Name) // already in the wanted encoding
			}
			vals, _, err := f.Float32(ti.Name)
			if err != nil {
				return nil, err
			}
			if dst == gguf.F32 {
				return f32Bytes(vals), nil
			}
			return quantizeRows(quant.Type(dst), vals, int(ti.Dims[0]))
		}})
	}

	n, err := atomicfile.Write(out, 0o644, func(w io.Writer) error { return gguf.Write(w, kvs, ts) })
	if err != nil {
		return nil, err
	}
	rep.BytesOut = n
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// f32Bytes returns vals' little-endian bytes.
func f32Bytes(vals []float32) []byte {
	out := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
	}
	return out
}

// quantizeRows encodes rows of k values in t, rows spread over the CPUs.
func quantizeRows(t quant.Type, vals []float32, k int) ([]byte, error) {
	rb, err := quant.RowBytes(t, k)
	if err != nil {
		return nil, err
	}
	rows := len(vals) / k
	out := make([]byte, rows*rb)
	nw := min(runtime.GOMAXPROCS(0), max(rows/16, 1))
	per := (rows + nw - 1) / nw
	errs := make([]error, nw)
	var wg sync.WaitGroup
	for w := 0; w < nw; w++ {
		lo, hi := w*per, min((w+1)*per, rows)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := lo; r < hi; r++ {
				if err := quant.QuantizeRow(t, vals[r*k:][:k], out[r*rb:][:rb]); err != nil {
					errs[w] = fmt.Errorf("row %d: %w", r, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}
