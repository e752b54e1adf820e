package models

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/gguf"
	"github.com/gotpu/gotpu/hf/chat"
	"github.com/gotpu/gotpu/hf/config"
	"github.com/gotpu/gotpu/hf/tokenizer"
	"github.com/gotpu/gotpu/internal/quant"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

// GGUF files (llama.cpp's format) map onto the same model code as Hugging
// Face directories: the config comes from the {arch}.* metadata, the
// tensors are renamed to transformers' names, dequantized at load to the
// requested dtype, and undone where llama.cpp's converter changed them
// (the Q/K row permutation of the llama architecture, Gemma's norms stored
// as 1 + w), exactly as transformers' GGUF loader does.

// ggufModelTypes maps general.architecture to transformers' model_type.
var ggufModelTypes = map[string]string{
	"llama":  "llama",
	"qwen2":  "qwen2",
	"qwen3":  "qwen3",
	"gemma2": "gemma2",
	"gemma3": "gemma3_text",
}

// IsGGUF reports whether path names a GGUF file (by its magic bytes).
func IsGGUF(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [4]byte
	_, err = f.Read(magic[:])
	return err == nil && string(magic[:]) == "GGUF"
}

// LoadGGUF reads a model from a GGUF file: its architecture and
// hyper-parameters from the metadata, its tensors dequantized to the
// requested dtype (f32 by default, as transformers dequantizes), its
// tokenizer and chat template from tokenizer.* (when the metadata has
// them). The file is only read during the call.
func LoadGGUF(path string, o Options) (*Model, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	defer f.Close()
	cfg, err := ggufConfig(f)
	if err != nil {
		return nil, fmt.Errorf("models: %s: %w", path, err)
	}
	if o.DType == dtype.Invalid {
		o.DType = dtype.F32
	}
	src := newGGUFSource(f, cfg)
	src.keep = o.KeepQuantized
	m, err := FromSource(cfg, src, o)
	if err != nil {
		return nil, fmt.Errorf("models: %s: %w", path, err)
	}
	m.Path = path
	if err := ggufTokenizer(f, m); err != nil {
		return nil, fmt.Errorf("models: %s: %w", path, err)
	}
	return m, nil
}

// LoadPath loads a model directory (Load) or a GGUF file (LoadGGUF).
func LoadPath(path string, o Options) (*Model, error) {
	if st, err := os.Stat(path); err == nil && !st.IsDir() && IsGGUF(path) {
		return LoadGGUF(path, o)
	}
	return Load(path, o)
}

// ggufConfig builds the config.json transformers derives from a GGUF
// file's metadata and parses it like any other.
func ggufConfig(f *gguf.File) (*config.Config, error) {
	md := f.Metadata()
	arch := f.Architecture()
	mt, ok := ggufModelTypes[arch]
	if !ok {
		names := make([]string, 0, len(ggufModelTypes))
		for k := range ggufModelTypes {
			names = append(names, k)
		}
		slices.Sort(names)
		return nil, fmt.Errorf("%w: GGUF architecture %q; supported: %s", ErrUnsupported, arch, strings.Join(names, ", "))
	}
	emb, err := f.Info("token_embd.weight")
	if err != nil {
		return nil, fmt.Errorf("%w: token_embd.weight: %v", ErrMissingWeight, err)
	}
	c := map[string]any{
		"model_type":          mt,
		"vocab_size":          emb.Shape()[0],
		"tie_word_embeddings": !f.Has("output.weight"),
	}
	type key struct {
		gguf, hf string
		float    bool
	}
	keys := []key{
		{"context_length", "max_position_embeddings", false},
		{"block_count", "num_hidden_layers", false},
		{"feed_forward_length", "intermediate_size", false},
		{"embedding_length", "hidden_size", false},
		{"attention.head_count", "num_attention_heads", false},
		{"attention.head_count_kv", "num_key_value_heads", false},
		{"attention.layer_norm_rms_epsilon", "rms_norm_eps", true},
		{"rope.freq_base", "rope_theta", true},
	}
	if arch != "llama" {
		// llama.cpp's llama architecture (Mistral files included) attends
		// globally, and transformers reads it so.
		keys = append(keys, key{"attention.sliding_window", "sliding_window", false})
	}
	switch arch {
	case "llama":
		keys = append(keys, key{"rope.dimension_count", "head_dim", false})
	case "gemma2", "gemma3", "qwen3":
		keys = append(keys, key{"attention.key_length", "head_dim", false})
	}
	for _, k := range keys {
		full := arch + "." + k.gguf
		if !md.Has(full) {
			continue
		}
		if k.float {
			v, err := md.Float(full)
			if err != nil {
				return nil, err
			}
			c[k.hf] = v
		} else {
			v, err := md.Int(full)
			if err != nil {
				return nil, err
			}
			c[k.hf] = v
		}
	}
	for g, h := range map[string]string{"bos_token_id": "bos_token_id", "eos_token_id": "eos_token_id", "padding_token_id": "pad_token_id"} {
		if v, err := md.Int("tokenizer.ggml." + g); err == nil {
			c[h] = v
		}
	}
	if mt == "qwen2" || mt == "qwen3" {
		// The Qwen configs' defaults enable tied embeddings and biases the
		// same way the checkpoints do; what the file holds decides.
		c["use_sliding_window"] = false
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	return config.Parse(raw)
}

// ggufName maps transformers' parameter names to llama.cpp's tensor names.
var ggufNames = []struct {
	re  *regexp.Regexp
	out string
}{
	{regexp.MustCompile(`^model\.embed_tokens\.weight$`), "token_embd.weight"},
	{regexp.MustCompile(`^model\.norm\.weight$`), "output_norm.weight"},
	{regexp.MustCompile(`^lm_head\.weight$`), "output.weight"},
	{regexp.MustCompile(`^model\.layers\.(\d+)\.input_layernorm\.weight$`), "blk.$1.attn_norm.weight"},
	{regexp.MustCompile(`^model\.layers\.(\d+)\.self_attn\.q_proj\.(weight|bias)$`), "blk.$1.attn_q.$2"},
	{regexp.MustCompile(`^model\.layers\.(\d+)\.self_attn\.k_proj\.(weight|bias)$`), "blk.$1.attn_k.$2"},
	{regexp.MustCompile(`^model\.layers\.(\d+)\.self_attn\.v_proj\.(weight|bias)$`), "blk.$1.attn_v.$2"},
	{regexp.MustCompile(`^model\.layers\.(\d+)\.self_attn\.o_proj\.(weight|bias)$`), "blk.$1.attn_output.$2"},
	{regexp.MustCompile(`^model\.layers\.(\d+)\.self_attn\.q_norm\.weight$`), "blk.$1.attn_q_norm.weight"},
	{regexp.MustCompile(`^model\.layers\.(\d+)\.self_attn\.k_norm\.weight$`), "blk.$1.attn_k_norm.weight"},
	{regexp.MustCompile(`^model\.layers\.(\d+)\.mlp\.gate_proj\.(weight|bias)$`), "blk.$1.ffn_gate.$2"},
	{regexp.MustCompile(`^model\.layers\.(\d+)\.mlp\.up_proj\.(weight|bias)$`), "blk.$1.ffn_up.$2"},
	{regexp.MustCompile(`^model\.layers\.(\d+)\.mlp\.down_proj\.(weight|bias)$`), "blk.$1.ffn_down.$2"},
	{regexp.MustCompile(`^model\.layers\.(\d+)\.pre_feedforward_layernorm\.weight$`), "blk.$1.ffn_norm.weight"},
	{regexp.MustCompile(`^model\.layers\.(\d+)\.post_feedforward_layernorm\.weight$`), "blk.$1.post_ffw_norm.weight"},
}

// ggufSource presents a GGUF file's tensors under transformers' names.
type ggufSource struct {
	f        *gguf.File
	arch     string
	sandwich bool // Gemma 2/3: four norms per layer
	heads    int
	kvHeads  int
	// keep makes Weight return Quantized weights for the block encodings
	// linear_gguf takes (Options.KeepQuantized).
	keep bool
}

func newGGUFSource(f *gguf.File, c *config.Config) *ggufSource {
	arch := f.Architecture()
	return &ggufSource{f: f, arch: arch, sandwich: arch == "gemma2" || arch == "gemma3", heads: c.NumHeads, kvHeads: c.NumKVHeads}
}

// name returns the GGUF tensor name of a transformers parameter name.
func (s *ggufSource) name(hf string) (string, bool) {
	// post_attention_layernorm is llama.cpp's ffn_norm in the Llama block
	// (the norm before the MLP) but its post_attention_norm in Gemma 2/3's.
	if strings.HasSuffix(hf, ".post_attention_layernorm.weight") {
		l := strings.TrimSuffix(strings.TrimPrefix(hf, "model.layers."), ".post_attention_layernorm.weight")
		if s.sandwich {
			return "blk." + l + ".post_attention_norm.weight", true
		}
		return "blk." + l + ".ffn_norm.weight", true
	}
	for _, r := range ggufNames {
		if r.re.MatchString(hf) {
			if s.sandwich || !strings.Contains(r.out, "ffn_norm") && !strings.Contains(r.out, "post_ffw") {
				return r.re.ReplaceAllString(hf, r.out), true
			}
		}
	}
	return "", false
}

// Names lists the file's tensors under transformers' names (those it
// cannot name keep their GGUF names, so that they show up as unused).
func (s *ggufSource) Names() []string {
	byGGUF := map[string]bool{}
	for _, n := range s.f.Names() {
		byGGUF[n] = true
	}
	var out []string
	// Walk every name the model could ask for and keep those present.
	for _, hf := range s.candidates() {
		if g, ok := s.name(hf); ok && byGGUF[g] {
			out = append(out, hf)
			delete(byGGUF, g)
		}
	}
	for g := range byGGUF {
		if g != "rope_freqs.weight" { // llama.cpp's copy of Llama 3's rope scaling
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return out
}

// candidates lists the transformers names a decoder of this file's depth
// may have.
func (s *ggufSource) candidates() []string {
	out := []string{"model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"}
	layers := 0
	for _, n := range s.f.Names() {
		var l int
		if _, err := fmt.Sscanf(n, "blk.%d.", &l); err == nil {
			layers = max(layers, l+1)
		}
	}
	for l := 0; l < layers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		for _, n := range []string{"input_layernorm.weight", "post_attention_layernorm.weight", "pre_feedforward_layernorm.weight",
			"post_feedforward_layernorm.weight", "self_attn.q_norm.weight", "self_attn.k_norm.weight"} {
			out = append(out, p+n)
		}
		for _, n := range []string{"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"} {
			out = append(out, p+n+".weight", p+n+".bias")
		}
	}
	return out
}

func (s *ggufSource) Shape(hf string) ([]int, bool) {
	g, ok := s.name(hf)
	if !ok {
		return nil, false
	}
	info, err := s.f.Info(g)
	if err != nil {
		return nil, false
	}
	return info.Shape(), true
}

func (s *ggufSource) Close() error { return nil }

func (s *ggufSource) Tensor(hf string, dev device.Device, dt dtype.DType) (t *tensor.Tensor, err error) {
	g, ok := s.name(hf)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrMissingWeight, hf)
	}
	info, err := s.f.Info(g)
	if err != nil {
		return nil, err
	}
	shape := info.Shape()
	if dt == dtype.Invalid {
		dt = dtype.F32
	}
	if dev.Type == "meta" {
		err = tensor.Catch(func() { t = tensor.Empty(dev, dt, shape...) })
		return t, err
	}
	data, _, err := s.f.Float32(g)
	if err != nil {
		return nil, err
	}
	switch {
	case s.arch == "llama" && strings.HasSuffix(g, ".attn_q.weight"):
		data = unpermuteRows(data, shape, s.heads)
	case s.arch == "llama" && strings.HasSuffix(g, ".attn_k.weight"):
		data = unpermuteRows(data, shape, s.kvHeads)
	case strings.HasPrefix(s.arch, "gemma") && strings.HasSuffix(g, "norm.weight"):
		// llama.cpp stores Gemma's RMSNorm weights as 1 + w.
		for i := range data {
			data[i]--
		}
	}
	err = tensor.Catch(func() { t = uploadFloats(dev, data, shape, dt) })
	s.f.Release(g) // copied out: the file's pages may go
	return t, err
}

// quantizedBlock returns the encoding hf is kept in when the source keeps
// weights quantized and linear_gguf takes the tensor's type.
func (s *ggufSource) quantizedBlock(hf string) (gguf.TensorInfo, op.GGUFBlock, bool) {
	if !s.keep {
		return gguf.TensorInfo{}, op.GGUFBlock{}, false
	}
	g, ok := s.name(hf)
	if !ok {
		return gguf.TensorInfo{}, op.GGUFBlock{}, false
	}
	info, err := s.f.Info(g)
	if err != nil || len(info.Shape()) != 2 {
		return gguf.TensorInfo{}, op.GGUFBlock{}, false
	}
	blk, ok := op.GGUFBlockOfType(uint32(info.Type))
	return info, blk, ok
}

// KeepsQuantized reports whether Weight(hf) returns a Quantized weight.
func (s *ggufSource) KeepsQuantized(hf string) bool {
	_, _, ok := s.quantizedBlock(hf)
	return ok
}

func (s *ggufSource) Weight(hf string, dev device.Device, dt dtype.DType) (Weight, error) {
	if info, blk, ok := s.quantizedBlock(hf); ok {
		return s.quantized(info, blk, dev, dt)
	}
	t, err := s.Tensor(hf, dev, dt)
	if err != nil {
		return nil, err
	}
	return Dense{W: t}, nil
}

// quantized uploads a tensor's blocks as a Quantized weight computing in
// dt, undoing the llama Q/K row permutation on whole encoded rows.
func (s *ggufSource) quantized(info gguf.TensorInfo, blk op.GGUFBlock, dev device.Device, dt dtype.DType) (w Weight, err error) {
	shape := info.Shape()
	out, in := shape[0], shape[1]
	rb, err := blk.RowBytes(in)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrWeights, info.Name, err)
	}
	if dt == dtype.Invalid {
		dt = dtype.F32
	}
	q := Quantized{Block: blk, In: in, Compute: dt}
	if dev.Type == "meta" {
		err = tensor.Catch(func() { q.Blocks = tensor.Empty(dev, dtype.U8, out, rb) })
		return q, err
	}
	raw, err := s.f.Bytes(info.Name)
	if err != nil {
		return nil, err
	}
	if len(raw) != out*rb {
		return nil, fmt.Errorf("%w: %s holds %d bytes, %d rows of %s take %d", ErrWeights, info.Name, len(raw), out, blk.Name, out*rb)
	}
	switch {
	case s.arch == "llama" && strings.HasSuffix(info.Name, ".attn_q.weight"):
		raw = unpermuteByteRows(raw, out, rb, s.heads)
	case s.arch == "llama" && strings.HasSuffix(info.Name, ".attn_k.weight"):
		raw = unpermuteByteRows(raw, out, rb, s.kvHeads)
	}
	if nativeLayout(dev, op.LayoutR16, blk) && out >= quant.PackRows {
		packed := make([]byte, len(raw))
		if err := quant.Pack(quant.Type(blk.GGMLType), packed, raw, out, rb); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrWeights, info.Name, err)
		}
		raw, q.Layout = packed, op.LayoutR16
	}
	err = tensor.Catch(func() { q.Blocks = tensor.FromBytes(dev, dtype.U8, []int{out, rb}, raw) })
	s.f.Release(info.Name) // copied out: the file's pages may go
	return q, err
}

// nativeLayout reports whether dev's backend runs linear_gguf on blocks of
// blk in layout natively (op.LayoutFeature); GOTPU_GGUF_LAYOUT=rows keeps
// every weight row-major.
func nativeLayout(dev device.Device, layout string, blk op.GGUFBlock) bool {
	if os.Getenv("GOTPU_GGUF_LAYOUT") == "rows" {
		return false
	}
	b, err := device.Lookup(dev.Type)
	if err != nil {
		return false
	}
	return slices.Contains(b.Properties(dev.Index).Features, op.LayoutFeature(layout, blk.Name))
}

// unpermuteByteRows is unpermuteRows for rows of rb encoded bytes.
func unpermuteByteRows(raw []byte, rows, rb, heads int) []byte {
	if heads <= 0 || rows%(2*heads) != 0 {
		return raw
	}
	half := rows / heads / 2
	out := make([]byte, len(raw))
	for h := 0; h < heads; h++ {
		for i := 0; i < half; i++ {
			for j := 0; j < 2; j++ {
				src := (h*half*2 + i*2 + j) * rb
				dst := (h*half*2 + j*half + i) * rb
				copy(out[dst:dst+rb], raw[src:src+rb])
			}
		}
	}
	return out
}

// unpermuteRows undoes llama.cpp's permutation of the Q and K projection
// rows (which interleaves each head's two rotary halves): within each of
// heads blocks of rows, row i*2+j of the file is row j*half+i of the model.
func unpermuteRows(data []float32, shape []int, heads int) []float32 {
	if len(shape) < 1 || heads <= 0 || shape[0]%(2*heads) != 0 {
		return data
	}
	cols := len(data) / shape[0]
	half := shape[0] / heads / 2
	out := make([]float32, len(data))
	for h := 0; h < heads; h++ {
		for i := 0; i < half; i++ {
			for j := 0; j < 2; j++ {
				src := (h*half*2 + i*2 + j) * cols
				dst := (h*half*2 + j*half + i) * cols
				copy(out[dst:dst+cols], data[src:src+cols])
			}
		}
	}
	return out
}

// ggufTokenizer sets the model's tokenizer (hf/tokenizer.FromGGUF, the one
// transformers builds from the same metadata), generation ids and chat
// template from the tokenizer.* metadata.
func ggufTokenizer(f *gguf.File, m *Model) error {
	md := f.Metadata()
	if md.Has(tokenizer.GGUFKeyModel) {
		kv := map[string]any{}
		for _, e := range md.All() {
			if !strings.HasPrefix(e.Key, "tokenizer.") && e.Key != tokenizer.GGUFKeyArchitecture {
				continue
			}
			v := e.Value.Any()
			if a, ok := v.(*gguf.Array); ok {
				v = a.Values()
			}
			kv[e.Key] = v
		}
		tm, err := tokenizer.GGUFMetadataFromMap(kv)
		if err != nil {
			return err
		}
		tok, err := tokenizer.FromGGUF(tm)
		if err != nil {
			return err
		}
		m.Tokenizer = tok
	}
	g := &config.Generation{}
	if id, err := md.Int("tokenizer.ggml.eos_token_id"); err == nil {
		g.EOSTokenIDs = []int{int(id)}
	}
	m.Generation = g
	tmpl, err := md.String("tokenizer.chat_template")
	if err != nil {
		return nil
	}
	tokens, _ := md.Strings("tokenizer.ggml.tokens")
	special := map[string]string{}
	for key, name := range map[string]string{"bos_token_id": "bos_token", "eos_token_id": "eos_token", "unknown_token_id": "unk_token", "padding_token_id": "pad_token"} {
		if id, err := md.Int("tokenizer.ggml." + key); err == nil && id >= 0 && int(id) < len(tokens) {
			special[name] = tokens[id]
		}
	}
	t, err := chat.New(tmpl, special)
	if err != nil {
		return fmt.Errorf("tokenizer.chat_template: %w", err)
	}
	m.Chat = t
	return nil
}
