package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/gotpu/gotpu/hf/config"
	st "github.com/gotpu/gotpu/hf/safetensors"
	"github.com/spf13/cobra"
)

// inspectTensor is one tensor of an inspect report.
type inspectTensor struct {
	Name  string `json:"name"`
	DType string `json:"dtype"`
	Shape []int  `json:"shape"`
	Begin int64  `json:"begin"`
	End   int64  `json:"end"`
	Bytes int64  `json:"bytes"`
	File  string `json:"file"`
}

// inspectConfig is the summary of a parsed config.json.
type inspectConfig struct {
	ModelType         string   `json:"model_type"`
	Family            string   `json:"family"`
	Architectures     []string `json:"architectures"`
	VocabSize         int      `json:"vocab_size"`
	HiddenSize        int      `json:"hidden_size"`
	NumLayers         int      `json:"num_layers"`
	NumHeads          int      `json:"num_heads"`
	NumKVHeads        int      `json:"num_kv_heads"`
	HeadDim           int      `json:"head_dim"`
	IntermediateSize  int      `json:"intermediate_size"`
	MaxPositions      int      `json:"max_positions"`
	PositionEmbedding string   `json:"position_embedding"`
	RopeTheta         float64  `json:"rope_theta"`
	RopeScaling       string   `json:"rope_scaling"`
	NormEps           float64  `json:"norm_eps"`
	Activation        string   `json:"activation"`
	TieWordEmbeddings bool     `json:"tie_word_embeddings"`
	BOSTokenID        *int     `json:"bos_token_id"`
	EOSTokenIDs       []int    `json:"eos_token_ids"`
	PadTokenID        *int     `json:"pad_token_id"`
	DType             string   `json:"dtype"`
}

// inspectReport is the --json output of gotpu inspect (keys documented in the command's help).
type inspectReport struct {
	Path         string            `json:"path"`
	Kind         string            `json:"kind"`
	Tensors      []inspectTensor   `json:"tensors"`
	Metadata     map[string]string `json:"metadata"`
	Config       *inspectConfig    `json:"config"`
	HasTokenizer *bool             `json:"has_tokenizer"`
	TotalBytes   int64             `json:"total_bytes"`
	NumTensors   int               `json:"num_tensors"`
	GGUF         *inspectGGUF      `json:"gguf"`
}

const inspectLong = `Inspect a safetensors file, a sharded checkpoint index
(model.safetensors.index.json), a Hugging Face model directory, or a GGUF
file (llama.cpp's format; recognised by its .gguf extension or its magic).

Every tensor header is read and validated (dtype, shape, data offsets; for a
sharded checkpoint every shard is opened and checked against the index; for
GGUF the whole header, metadata included); tensor data is not read. For a
directory, config.json is parsed too and the presence of tokenizer.json
reported. A malformed file makes the command exit with status 1 and a
one-line error.

GGUF lists dimensions innermost first (ne[0]); shapes here are always in
row-major PyTorch order, so a GGUF tensor with dims [4096, 11008] shows as
[11008, 4096]. Long metadata arrays (the tokenizer vocabulary, merges) are
summarised: their type, length and first entries.

With --json the output is one JSON object with these stable keys:
  path           the path as given
  kind           "file" (a .safetensors file), "index" (an index JSON), "dir",
                 or "gguf"
  tensors        list, sorted by name, of objects:
                   name, dtype (header name, e.g. "BF16"; for GGUF the ggml
                   type, e.g. "Q4_K"), shape (list of ints, PyTorch order),
                   begin, end (absolute byte range in its file), bytes
                   (end - begin), file (base name of the file holding it;
                   the shard for indexes)
  metadata       the file's __metadata__ (or the index's metadata) as a
                 string map; {} when absent. For GGUF every key, its value
                 rendered as one line of text (as in the text output)
  config         null unless kind is "dir" and config.json exists; else:
                   model_type, family, architectures, vocab_size, hidden_size,
                   num_layers, num_heads, num_kv_heads, head_dim,
                   intermediate_size, max_positions, position_embedding,
                   rope_theta, rope_scaling (type or ""), norm_eps, activation,
                   tie_word_embeddings, bos_token_id, eos_token_ids (list),
                   pad_token_id, dtype
  has_tokenizer  for kind "dir": whether tokenizer.json exists; else null
  total_bytes    sum of the tensors' data sizes in bytes
  num_tensors    number of tensors
  gguf           null unless kind is "gguf"; else:
                   version (2 or 3), architecture (general.architecture or
                   ""), alignment, data_offset (absolute start of the data
                   section), tensor_types (map ggml type -> tensor count),
                   metadata: list in file order of objects
                     key, type ("uint32", "string", "array[string]",
                     "array[array[int32]]", ...), len (array length, null for
                     scalars), value (the value; floats that are not finite
                     as "NaN", "+Inf", "-Inf"; arrays as lists, only the
                     first 8 entries of arrays longer than 16), truncated
                     (true when value lists only the first entries)`

func init() {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "inspect PATH",
		Short: "List the tensors, metadata and config of a safetensors file, index, model directory or GGUF file",
		Long:  inspectLong,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := inspectPath(args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			if rep.GGUF != nil {
				return writeInspectGGUF(cmd.OutOrStdout(), rep)
			}
			return writeInspect(cmd.OutOrStdout(), rep)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object (keys documented above)")
	rootCmd.AddCommand(cmd)
}

// inspectPath builds the report for a file, index or directory.
func inspectPath(path string) (*inspectReport, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	if !info.IsDir() && info.Size() == 0 {
		return nil, fmt.Errorf("inspect: %s: %s (the file is empty)", path, notFormat(path))
	}
	if !info.IsDir() && isGGUF(path) {
		return inspectGGUFFile(path)
	}
	rep := &inspectReport{Path: path, Metadata: map[string]string{}, Tensors: []inspectTensor{}}
	var r st.Reader
	switch {
	case info.IsDir():
		rep.Kind = "dir"
		has := fileExists(filepath.Join(path, "tokenizer.json"))
		rep.HasTokenizer = &has
		cfgPath := filepath.Join(path, "config.json")
		if fileExists(cfgPath) {
			c, err := config.Load(cfgPath)
			if err != nil {
				return nil, fmt.Errorf("inspect: %w", err)
			}
			rep.Config = summarizeConfig(c)
		}
		s, err := st.OpenDir(path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && rep.Config != nil {
				return rep, nil // a config-only directory: nothing more to list
			}
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("inspect: %s: not a model directory: it has no config.json, .safetensors file or model.safetensors.index.json (a .gguf file is inspected by its own path)", path)
			}
			return nil, fmt.Errorf("inspect: %w", err)
		}
		r = s
	case strings.HasSuffix(path, ".json"):
		rep.Kind = "index"
		s, err := st.OpenIndex(path)
		if err != nil {
			return nil, fmt.Errorf("inspect: %w", err)
		}
		r = s
	default:
		rep.Kind = "file"
		f, err := st.Open(path)
		if errors.Is(err, st.ErrInvalidHeader) || errors.Is(err, st.ErrHeaderTooLarge) {
			return nil, fmt.Errorf("inspect: %s: %w", notFormat(path), err)
		}
		if err != nil {
			return nil, fmt.Errorf("inspect: %w", err)
		}
		r = f
	}
	defer r.Close()
	if s, ok := r.(*st.Sharded); ok {
		if _, err := s.Verify(); err != nil {
			return nil, fmt.Errorf("inspect: %w", err)
		}
	}
	for _, name := range r.Names() {
		ti, err := r.Info(name)
		if err != nil {
			return nil, fmt.Errorf("inspect: %w", err)
		}
		shape := ti.Shape
		if shape == nil {
			shape = []int{}
		}
		rep.Tensors = append(rep.Tensors, inspectTensor{Name: ti.Name, DType: ti.DType.String(), Shape: shape, Begin: ti.Begin, End: ti.End, Bytes: ti.NumBytes(), File: ti.File})
		rep.TotalBytes += ti.NumBytes()
	}
	rep.NumTensors = len(rep.Tensors)
	if m := r.Metadata(); m != nil {
		rep.Metadata = m
	}
	return rep, nil
}

// notFormat says which formats path is not, from its extension: a file
// that is neither GGUF (by magic) nor a readable safetensors header.
func notFormat(path string) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".safetensors":
		return "not a safetensors file"
	case ".gguf":
		return "not a GGUF file"
	}
	return "not a safetensors or GGUF file"
}

func fileExists(p string) bool {
	info, err := os.Stat(p)
	return err == nil && !info.IsDir()
}

func summarizeConfig(c *config.Config) *inspectConfig {
	out := &inspectConfig{
		ModelType: c.ModelType, Family: c.Family(), Architectures: c.Architectures,
		VocabSize: c.VocabSize, HiddenSize: c.HiddenSize, NumLayers: c.NumLayers, NumHeads: c.NumHeads,
		NumKVHeads: c.NumKVHeads, HeadDim: c.HeadDim, IntermediateSize: c.IntermediateSize,
		MaxPositions: c.MaxPositions, PositionEmbedding: c.PositionEmbedding, RopeTheta: c.RopeTheta,
		NormEps: c.NormEps, Activation: c.Activation, TieWordEmbeddings: c.TieWordEmbeddings,
		BOSTokenID: c.BOSTokenID, EOSTokenIDs: c.EOSTokenIDs, PadTokenID: c.PadTokenID, DType: c.DType,
	}
	if out.Architectures == nil {
		out.Architectures = []string{}
	}
	if out.EOSTokenIDs == nil {
		out.EOSTokenIDs = []int{}
	}
	if c.RopeScaling != nil {
		out.RopeScaling = c.RopeScaling.Type
	}
	return out
}

// writeInspect prints the human-readable report.
func writeInspect(w io.Writer, rep *inspectReport) error {
	fmt.Fprintf(w, "path:      %s\nkind:      %s\ntensors:   %d (%s)\n", rep.Path, rep.Kind, rep.NumTensors, humanBytes(rep.TotalBytes))
	if len(rep.Metadata) > 0 {
		keys := make([]string, 0, len(rep.Metadata))
		for k := range rep.Metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + "=" + rep.Metadata[k]
		}
		fmt.Fprintf(w, "metadata:  %s\n", strings.Join(parts, ", "))
	}
	if c := rep.Config; c != nil {
		arch := strings.Join(c.Architectures, ",")
		fmt.Fprintf(w, "config:    %s (%s, family %s)\n", c.ModelType, arch, c.Family)
		fmt.Fprintf(w, "           vocab %d, hidden %d, layers %d, heads %d, kv heads %d, head dim %d, intermediate %d\n",
			c.VocabSize, c.HiddenSize, c.NumLayers, c.NumHeads, c.NumKVHeads, c.HeadDim, c.IntermediateSize)
		pos := c.PositionEmbedding
		if pos == "rope" {
			pos = fmt.Sprintf("rope theta %g", c.RopeTheta)
			if c.RopeScaling != "" {
				pos += ", scaling " + c.RopeScaling
			}
		}
		fmt.Fprintf(w, "           max positions %d (%s), norm eps %g, activation %s, tied embeddings %v\n",
			c.MaxPositions, pos, c.NormEps, c.Activation, c.TieWordEmbeddings)
	}
	if rep.HasTokenizer != nil {
		yes := "no"
		if *rep.HasTokenizer {
			yes = "yes"
		}
		fmt.Fprintf(w, "tokenizer: %s\n", yes)
	}
	if len(rep.Tensors) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tDTYPE\tSHAPE\tBEGIN\tEND\tFILE")
	for _, t := range rep.Tensors {
		fmt.Fprintf(tw, "%s\t%s\t%v\t%d\t%d\t%s\n", t.Name, t.DType, t.Shape, t.Begin, t.End, t.File)
	}
	return tw.Flush()
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
