package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Files a model directory may hold chat templates and special tokens in, as
// transformers names them.
const (
	TokenizerConfigFile  = "tokenizer_config.json"
	SpecialTokensMapFile = "special_tokens_map.json"
	ChatTemplateFile     = "chat_template.jinja"
	ChatTemplateJSONFile = "chat_template.json"
	ChatTemplateDir      = "additional_chat_templates"
)

// namedSpecialTokens are transformers' SPECIAL_TOKENS_ATTRIBUTES.
var namedSpecialTokens = []string{"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}

// TokenizerConfig is what this package reads from a tokenizer_config.json.
type TokenizerConfig struct {
	// BOSToken, EOSToken, PadToken and UnkToken are the named special
	// tokens' text ("" when the file has none or null).
	BOSToken, EOSToken, PadToken, UnkToken string
	// SpecialTokens are the special tokens a chat template sees, by
	// variable name, as transformers 5 builds its special_tokens_map: the
	// named ones (bos_token, eos_token, unk_token, sep_token, pad_token,
	// cls_token, mask_token) and the model-specific ones (any other
	// top-level "*_token" key with a token value, and the entries of an
	// "extra_special_tokens" object). A token may be written as a string or
	// as an AddedToken object {"content": ...}.
	SpecialTokens map[string]string
	// AddBOSToken and AddEOSToken are add_bos_token and add_eos_token, nil
	// when the file does not set them (the tokenizer's default applies).
	AddBOSToken, AddEOSToken *bool
	// ModelMaxLength is model_max_length; 0 when absent, math.MaxInt64 when
	// larger than an int64 (transformers writes int(1e30) for "no limit").
	ModelMaxLength int64
	// TokenizerClass is tokenizer_class ("" when absent).
	TokenizerClass string
	// ChatTemplates are the file's chat templates by name: a plain string
	// chat_template is named "default"; a list of {"name", "template"}
	// keeps its names. Empty when the file has none.
	ChatTemplates map[string]string
	// Raw holds every top-level field as found.
	Raw map[string]json.RawMessage
}

// ParseTokenizerConfig parses the text of a tokenizer_config.json.
func ParseTokenizerConfig(data []byte) (*TokenizerConfig, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("chat: parsing %s: %w", TokenizerConfigFile, err)
	}
	if raw == nil {
		return nil, fmt.Errorf("chat: parsing %s: not a JSON object", TokenizerConfigFile)
	}
	c := &TokenizerConfig{Raw: raw, SpecialTokens: map[string]string{}, ChatTemplates: map[string]string{}}

	if err := mergeSpecialTokens(c.SpecialTokens, raw, true); err != nil {
		return nil, fmt.Errorf("chat: %s: %w", TokenizerConfigFile, err)
	}
	c.BOSToken = c.SpecialTokens["bos_token"]
	c.EOSToken = c.SpecialTokens["eos_token"]
	c.PadToken = c.SpecialTokens["pad_token"]
	c.UnkToken = c.SpecialTokens["unk_token"]

	var err error
	if c.AddBOSToken, err = optBool(raw, "add_bos_token"); err != nil {
		return nil, err
	}
	if c.AddEOSToken, err = optBool(raw, "add_eos_token"); err != nil {
		return nil, err
	}
	if v, ok := raw["model_max_length"]; ok && !isNull(v) {
		n, err := parseMaxLength(v)
		if err != nil {
			return nil, fmt.Errorf("chat: %s: model_max_length: %w", TokenizerConfigFile, err)
		}
		c.ModelMaxLength = n
	}
	if v, ok := raw["tokenizer_class"]; ok && !isNull(v) {
		if err := json.Unmarshal(v, &c.TokenizerClass); err != nil {
			return nil, fmt.Errorf("chat: %s: tokenizer_class: %w", TokenizerConfigFile, err)
		}
	}
	if v, ok := raw["chat_template"]; ok && !isNull(v) {
		t, err := parseChatTemplateField(v)
		if err != nil {
			return nil, fmt.Errorf("chat: %s: chat_template: %w", TokenizerConfigFile, err)
		}
		c.ChatTemplates = t
	}
	return c, nil
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

func optBool(raw map[string]json.RawMessage, key string) (*bool, error) {
	v, ok := raw[key]
	if !ok || isNull(v) {
		return nil, nil
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		return nil, fmt.Errorf("chat: %s: %s: %w", TokenizerConfigFile, key, err)
	}
	return &b, nil
}

// parseMaxLength reads an integer that may exceed int64 (int(1e30)) or be
// written as a float.
func parseMaxLength(v json.RawMessage) (int64, error) {
	s := strings.TrimSpace(string(v))
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("%s is not a number", s)
	}
	if f >= math.MaxInt64 {
		return math.MaxInt64, nil
	}
	if f < 0 {
		return 0, fmt.Errorf("%s is negative", s)
	}
	return int64(f), nil
}

// parseChatTemplateField reads chat_template: a string, or a list of
// {"name": ..., "template": ...}.
func parseChatTemplateField(v json.RawMessage) (map[string]string, error) {
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return map[string]string{"default": s}, nil
	}
	var list []struct {
		Name     *string `json:"name"`
		Template *string `json:"template"`
	}
	if err := json.Unmarshal(v, &list); err != nil {
		return nil, errors.New("neither a string nor a list of {\"name\", \"template\"}")
	}
	out := make(map[string]string, len(list))
	for i, e := range list {
		if e.Name == nil || e.Template == nil {
			return nil, fmt.Errorf("entry %d lacks \"name\" or \"template\"", i)
		}
		out[*e.Name] = *e.Template
	}
	return out, nil
}

// tokenContent reads a special token written as a string or as an
// AddedToken object; ok is false for anything else (booleans, lists, ...).
func tokenContent(v json.RawMessage) (content string, ok bool) {
	if err := json.Unmarshal(v, &content); err == nil {
		return content, true
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(v, &obj); err == nil && obj.Content != nil {
		return *obj.Content, true
	}
	return "", false
}

// mergeSpecialTokens adds the special tokens of a tokenizer_config.json or
// special_tokens_map.json to dst; a null value removes the token, as it
// does in transformers. strict reports a named token of a type that is no
// token.
func mergeSpecialTokens(dst map[string]string, raw map[string]json.RawMessage, strict bool) error {
	named := map[string]bool{}
	for _, k := range namedSpecialTokens {
		named[k] = true
	}
	for _, k := range sortedKeys(raw) {
		v := raw[k]
		if !named[k] && !strings.HasSuffix(k, "_token") {
			continue
		}
		if isNull(v) {
			delete(dst, k)
			continue
		}
		s, ok := tokenContent(v)
		if !ok {
			if named[k] && strict {
				return fmt.Errorf("%s is neither a string nor an AddedToken object", k)
			}
			continue // add_bos_token and friends
		}
		dst[k] = s
	}
	if v, ok := raw["extra_special_tokens"]; ok && !isNull(v) {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(v, &obj); err == nil {
			for _, k := range sortedKeys(obj) {
				if s, ok := tokenContent(obj[k]); ok {
					dst[k] = s
				}
			}
		}
		// A list of extra special tokens has no names: templates never see it.
	}
	return nil
}

// LoadDir loads the chat template of a Hugging Face model directory the way
// transformers' AutoTokenizer.from_pretrained does:
//
//   - chat_template.jinja (the "default" template) and
//     additional_chat_templates/<name>.jinja, when present, take priority
//     over the templates in tokenizer_config.json;
//   - otherwise tokenizer_config.json's chat_template, a string or a list of
//     {"name", "template"};
//   - otherwise chat_template.json, the legacy processor file
//     ({"chat_template": ...}), which transformers' processors (not its
//     tokenizers) read; it is the only place some multimodal models keep
//     their template.
//
// Special tokens come from tokenizer_config.json, merged with
// special_tokens_map.json when the config has no added_tokens_decoder (the
// legacy layout transformers still reads). An error wrapping
// ErrNoChatTemplate says the directory has no template.
func LoadDir(dir string) (*Template, error) {
	var cfg *TokenizerConfig
	tokens := map[string]string{}
	data, err := os.ReadFile(filepath.Join(dir, TokenizerConfigFile))
	switch {
	case err == nil:
		if cfg, err = ParseTokenizerConfig(data); err != nil {
			return nil, fmt.Errorf("%w (in %s)", err, dir)
		}
		for k, v := range cfg.SpecialTokens {
			tokens[k] = v
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("chat: %w", err)
	}

	if _, hasDecoder := cfgRaw(cfg)["added_tokens_decoder"]; !hasDecoder {
		data, err := os.ReadFile(filepath.Join(dir, SpecialTokensMapFile))
		switch {
		case err == nil:
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(data, &raw); err != nil {
				return nil, fmt.Errorf("chat: parsing %s: %w", filepath.Join(dir, SpecialTokensMapFile), err)
			}
			if err := mergeSpecialTokens(tokens, raw, false); err != nil {
				return nil, fmt.Errorf("chat: %s: %w", filepath.Join(dir, SpecialTokensMapFile), err)
			}
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("chat: %w", err)
		}
	}

	templates, err := templateFiles(dir)
	if err != nil {
		return nil, err
	}
	if len(templates) == 0 && cfg != nil {
		templates = cfg.ChatTemplates
	}
	if len(templates) == 0 {
		data, err := os.ReadFile(filepath.Join(dir, ChatTemplateJSONFile))
		switch {
		case err == nil:
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(data, &obj); err != nil {
				return nil, fmt.Errorf("chat: parsing %s: %w", filepath.Join(dir, ChatTemplateJSONFile), err)
			}
			if v, ok := obj["chat_template"]; ok && !isNull(v) {
				if templates, err = parseChatTemplateField(v); err != nil {
					return nil, fmt.Errorf("chat: %s: chat_template: %w", filepath.Join(dir, ChatTemplateJSONFile), err)
				}
			}
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("chat: %w", err)
		}
	}
	if len(templates) == 0 {
		return nil, fmt.Errorf("chat: %s: %w (looked for %s, %s/*.jinja, chat_template in %s, %s)",
			dir, ErrNoChatTemplate, ChatTemplateFile, ChatTemplateDir, TokenizerConfigFile, ChatTemplateJSONFile)
	}
	t, err := NewSet(templates, tokens)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, dir)
	}
	t.config = cfg
	return t, nil
}

func cfgRaw(c *TokenizerConfig) map[string]json.RawMessage {
	if c == nil {
		return nil
	}
	return c.Raw
}

// templateFiles reads chat_template.jinja and additional_chat_templates/*.jinja.
func templateFiles(dir string) (map[string]string, error) {
	out := map[string]string{}
	data, err := os.ReadFile(filepath.Join(dir, ChatTemplateFile))
	switch {
	case err == nil:
		out["default"] = string(data)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("chat: %w", err)
	}
	entries, err := os.ReadDir(filepath.Join(dir, ChatTemplateDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("chat: %w", err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".jinja") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(dir, ChatTemplateDir, n))
		if err != nil {
			return nil, fmt.Errorf("chat: %w", err)
		}
		out[strings.TrimSuffix(n, ".jinja")] = string(data)
	}
	return out, nil
}
