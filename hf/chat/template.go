package chat

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"
)

// ErrNoChatTemplate is returned (wrapped) when a model directory or a
// configuration carries no chat template at all.
var ErrNoChatTemplate = errors.New("no chat template")

// TemplateError is the error a template raises itself with
// raise_exception(message), such as Gemma's "Conversation roles must
// alternate user/assistant/user/assistant/...". Render returns it wrapped;
// use errors.As to get at Message.
type TemplateError struct {
	// Message is the argument the template passed to raise_exception.
	Message string
}

// Error returns the template's message with a short prefix.
func (e *TemplateError) Error() string { return "template error: " + e.Message }

// Message is one turn of a conversation, as transformers' apply_chat_template
// receives it: a dict with "role" and "content" and whatever else the
// template reads.
type Message struct {
	// Role is "system", "user", "assistant", "tool", or whatever the
	// template accepts.
	Role string
	// Content is the text of the turn. It is always passed, "" included;
	// to leave the "content" key out, or to pass a list of content parts
	// ([{"type": "text", "text": ...}, {"type": "image"}]) instead of a
	// string, set Extra["content"].
	Content string
	// ToolCalls are the function calls of an assistant turn, passed as
	// "tool_calls" when not empty.
	ToolCalls []ToolCall
	// Extra holds any other keys of the message ("name", "tool_call_id",
	// "reasoning_content", ...), converted as described at RenderOptions.
	// An entry named "role", "content" or "tool_calls" replaces that field;
	// an entry whose value is nil is dropped, as transformers drops keys
	// whose value is None.
	Extra map[string]any
}

// ToolCall is one function call an assistant turn asks for, in the shape
// chat templates read: {"id": ..., "type": "function", "function":
// {"name": ..., "arguments": ...}}.
type ToolCall struct {
	// ID is the call's identifier; omitted when empty.
	ID string
	// Type is the call's type, normally "function"; omitted when empty.
	Type string
	// Function names the function and its arguments.
	Function FunctionCall
}

// FunctionCall is the function part of a ToolCall.
type FunctionCall struct {
	// Name is the function's name.
	Name string
	// Arguments are the call's arguments. Most templates expect an object
	// (a map, a struct, or a json.RawMessage holding a JSON object, which
	// keeps its key order); a string is passed as a string, which some
	// templates print verbatim and others quote with tojson. nil leaves the
	// key out.
	Arguments any
}

// RenderOptions are the arguments of a Render besides the messages.
//
// Values in Tools, Documents, Extra and Message.Extra are converted to the
// template's values the way Python would see the equivalent JSON: maps with
// string keys become dicts (keys sorted, since Go maps have no order),
// slices become lists, structs go through encoding/json. A json.RawMessage
// is decoded with the order of its object keys kept, which is what you want
// for tool schemas that templates print with tojson.
type RenderOptions struct {
	// AddGenerationPrompt appends the tokens that open an assistant turn.
	AddGenerationPrompt bool
	// Tools are the tool (function) schemas, passed as "tools". nil passes
	// None, which templates read as "no tools"; an empty, non-nil slice
	// passes an empty list.
	Tools []any
	// Documents are retrieval documents, passed as "documents" (None when
	// nil).
	Documents []any
	// Extra are further template variables, like enable_thinking or
	// date_string. They override the special tokens of the same name; they
	// may not be named messages, tools, documents or add_generation_prompt.
	Extra map[string]any
	// Name selects one of the model's named templates ("default",
	// "tool_use", "rag", ...). Empty selects as transformers does: "tool_use"
	// when Tools is not nil and the model has one, else "default".
	Name string
	// Now is the clock strftime_now reads; nil means time.Now.
	Now func() time.Time
}

// Template is a model's chat template (or its set of named templates)
// compiled, together with the special tokens the template sees. It is safe
// for concurrent use.
type Template struct {
	sources  map[string]string
	compiled map[string]*jinja.Template
	tokens   map[string]string
	config   *TokenizerConfig
}

// New compiles a single chat template, such as the tokenizer.chat_template
// of a GGUF file, with the special tokens it may use (bos_token, eos_token,
// ...; nil for none).
func New(source string, specialTokens map[string]string) (*Template, error) {
	return NewSet(map[string]string{"default": source}, specialTokens)
}

// NewSet compiles a set of named chat templates, as in a tokenizer_config.json
// whose chat_template is a list of {"name", "template"}. A set with one
// template is used whatever its name; otherwise the name "default" is the one
// Render falls back to.
func NewSet(templates map[string]string, specialTokens map[string]string) (*Template, error) {
	if len(templates) == 0 {
		return nil, fmt.Errorf("chat: %w", ErrNoChatTemplate)
	}
	t := &Template{
		sources:  make(map[string]string, len(templates)),
		compiled: make(map[string]*jinja.Template, len(templates)),
		tokens:   make(map[string]string, len(specialTokens)),
	}
	for k, v := range specialTokens {
		t.tokens[k] = v
	}
	for _, name := range sortedKeys(templates) {
		src := templates[name]
		c, err := compile(src)
		if err != nil {
			return nil, fmt.Errorf("chat: compiling chat template %q: %w", name, err)
		}
		t.sources[name] = src
		t.compiled[name] = c
	}
	return t, nil
}

// compile compiles src, turning a panic inside the engine into an error.
func compile(src string) (c *jinja.Template, err error) {
	defer func() {
		if p := recover(); p != nil {
			c, err = nil, fmt.Errorf("template engine panicked: %v", p)
		}
	}()
	return jinja.Compile(src)
}

// Names returns the names of the templates, sorted. A single template is
// named "default".
func (t *Template) Names() []string { return sortedKeys(t.sources) }

// Source returns the text of the named template.
func (t *Template) Source(name string) (string, bool) {
	s, ok := t.sources[name]
	return s, ok
}

// SpecialTokens returns a copy of the special tokens every render sees as
// variables (bos_token, eos_token, ...), as transformers passes its
// special_tokens_map.
func (t *Template) SpecialTokens() map[string]string {
	out := make(map[string]string, len(t.tokens))
	for k, v := range t.tokens {
		out[k] = v
	}
	return out
}

// Config returns the tokenizer_config.json the template was loaded with, or
// nil when it was made by New or NewSet or the directory had none.
func (t *Template) Config() *TokenizerConfig { return t.config }

// pick chooses the template to render as transformers' get_chat_template
// does, except that an unknown name is an error (transformers would render
// the name itself as a template).
func (t *Template) pick(name string, haveTools bool) (string, error) {
	if name != "" {
		if _, ok := t.compiled[name]; ok {
			return name, nil
		}
		if len(t.compiled) == 1 && name == "default" {
			return t.Names()[0], nil
		}
		return "", fmt.Errorf("chat: no chat template named %q (have %s)", name, strings.Join(t.Names(), ", "))
	}
	if len(t.compiled) == 1 {
		return t.Names()[0], nil
	}
	if _, ok := t.compiled["tool_use"]; ok && haveTools {
		return "tool_use", nil
	}
	if _, ok := t.compiled["default"]; ok {
		return "default", nil
	}
	return "", fmt.Errorf("chat: the model has several chat templates and none named \"default\"; pick one of %s with RenderOptions.Name", strings.Join(t.Names(), ", "))
}

// reservedVars are the variables Render sets itself; Extra may not name them
// (in Python they would collide with apply_chat_template's own arguments).
var reservedVars = []string{"messages", "tools", "documents", "add_generation_prompt"}

// Render renders the conversation with the model's chat template, as
// transformers' tokenizer.apply_chat_template(messages, tokenize=False,
// add_generation_prompt=..., tools=..., documents=..., **extra) does.
//
// An error raised by the template through raise_exception is returned as a
// wrapped *TemplateError. A template that fails, or even one that makes the
// engine panic, returns an error; Render never panics.
func (t *Template) Render(messages []Message, opts RenderOptions) (string, error) {
	if len(messages) == 0 {
		return "", errors.New("chat: cannot apply a chat template to an empty conversation")
	}
	name, err := t.pick(opts.Name, opts.Tools != nil)
	if err != nil {
		return "", err
	}
	data, err := t.variables(messages, opts)
	if err != nil {
		return "", err
	}
	out, err := execute(t.compiled[name], data)
	if err != nil {
		return "", fmt.Errorf("chat: rendering chat template %q: %w", name, err)
	}
	return out, nil
}

// execute renders c, turning a panic inside the engine into an error.
func execute(c *jinja.Template, data map[string]jinja.Value) (out string, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = "", fmt.Errorf("template engine panicked: %v", p)
		}
	}()
	return c.RenderValues(data)
}

// variables builds what the template sees: the special tokens, Extra, the
// four arguments of apply_chat_template, and the globals transformers adds
// to its Jinja environment.
func (t *Template) variables(messages []Message, opts RenderOptions) (map[string]jinja.Value, error) {
	data := make(map[string]jinja.Value, len(t.tokens)+len(opts.Extra)+8)
	for k, v := range t.tokens {
		data[k] = jinja.NewString(v)
	}

	now := opts.Now
	if now == nil {
		now = time.Now
	}
	// transformers' globals. The engine looks names up in the render scope
	// before its built-ins, so these replace its own strftime_now (which
	// reads the wall clock), raise_exception (whose error is untyped) and
	// range (which builds any list it is asked for).
	// Filters cannot be replaced that way: the engine looks them up among
	// its built-ins only, so tojson is the engine's (see knownDiffs in the
	// tests for where it parts from transformers').
	data["strftime_now"] = jinja.NewCallable("strftime_now", func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 || len(kwargs) != 0 || !args[0].IsString() {
			return jinja.Value{}, errors.New("strftime_now takes one format string")
		}
		return jinja.NewString(strftime(now(), args[0].AsString())), nil
	})
	data["raise_exception"] = jinja.NewCallable("raise_exception", func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
		if len(args) == 0 {
			if m, ok := kwargs["message"]; ok {
				args = []jinja.Value{m}
			} else {
				return jinja.Value{}, &TemplateError{Message: "raise_exception called without a message"}
			}
		}
		msg := args[0]
		if msg.IsString() {
			return jinja.Value{}, &TemplateError{Message: msg.AsString()}
		}
		return jinja.Value{}, &TemplateError{Message: msg.String()}
	})

	data["range"] = jinja.NewCallable("range", safeRange)

	for _, k := range sortedKeys(opts.Extra) {
		for _, r := range reservedVars {
			if k == r {
				return nil, fmt.Errorf("chat: RenderOptions.Extra may not set %q; it is an argument of its own", k)
			}
		}
		v, err := toValue(opts.Extra[k])
		if err != nil {
			return nil, fmt.Errorf("chat: RenderOptions.Extra[%q]: %w", k, err)
		}
		data[k] = v
	}

	msgs := make([]jinja.Value, len(messages))
	for i, m := range messages {
		v, err := messageValue(m)
		if err != nil {
			return nil, fmt.Errorf("chat: message %d: %w", i, err)
		}
		msgs[i] = v
	}
	data["messages"] = jinja.NewList(msgs)

	tools, err := listValue(opts.Tools)
	if err != nil {
		return nil, fmt.Errorf("chat: RenderOptions.Tools: %w", err)
	}
	data["tools"] = tools
	docs, err := listValue(opts.Documents)
	if err != nil {
		return nil, fmt.Errorf("chat: RenderOptions.Documents: %w", err)
	}
	data["documents"] = docs
	data["add_generation_prompt"] = jinja.NewBool(opts.AddGenerationPrompt)
	return data, nil
}

// maxRange is jinja2.sandbox.MAX_RANGE: the sandboxed environment
// transformers renders in refuses longer ranges.
const maxRange = 100000

// safeRange is the sandbox's range(): Python's range, refused past
// maxRange items, so a template cannot make the renderer build a list as
// long as it likes.
func safeRange(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(kwargs) != 0 {
		return jinja.Value{}, errors.New("range() takes no keyword arguments")
	}
	if len(args) < 1 || len(args) > 3 {
		return jinja.Value{}, fmt.Errorf("range expected 1 to 3 arguments, got %d", len(args))
	}
	n := make([]int64, len(args))
	for i, a := range args {
		switch {
		case a.IsInt():
			n[i] = a.AsInt()
		case a.IsBool():
			if a.AsBool() {
				n[i] = 1
			}
		default:
			return jinja.Value{}, fmt.Errorf("'%s' object cannot be interpreted as an integer", typeName(a))
		}
	}
	start, stop, step := int64(0), n[0], int64(1)
	if len(n) > 1 {
		start, stop = n[0], n[1]
	}
	if len(n) > 2 {
		step = n[2]
	}
	if step == 0 {
		return jinja.Value{}, errors.New("range() arg 3 must not be zero")
	}
	// Count in float64 to stay clear of int64 overflow; only the comparison
	// with maxRange needs it.
	var count float64
	if step > 0 && stop > start {
		count = math.Ceil((float64(stop) - float64(start)) / float64(step))
	} else if step < 0 && stop < start {
		count = math.Ceil((float64(start) - float64(stop)) / -float64(step))
	}
	if count > maxRange {
		return jinja.Value{}, fmt.Errorf("Range too big. The sandbox blocks ranges larger than MAX_RANGE (%d).", maxRange)
	}
	items := make([]jinja.Value, 0, int(count))
	for i, v := 0, start; i < int(count); i, v = i+1, v+step {
		items = append(items, jinja.NewInt(v))
	}
	return jinja.NewList(items), nil
}

func typeName(v jinja.Value) string {
	switch {
	case v.IsUndefined():
		return "Undefined"
	case v.IsNone():
		return "NoneType"
	case v.IsFloat():
		return "float"
	case v.IsString():
		return "str"
	case v.IsList():
		return "list"
	case v.IsDict():
		return "dict"
	case v.IsCallable():
		return "function"
	}
	return "object"
}

// listValue passes nil as None and anything else as a list.
func listValue(items []any) (jinja.Value, error) {
	if items == nil {
		return jinja.None(), nil
	}
	return toValue(items)
}

// reasoningFields are the names a message's reasoning goes by, the first
// being the one most templates read (transformers' _REASONING_FIELDS).
var reasoningFields = []string{"reasoning_content", "thinking", "reasoning"}

// messageValue builds the dict a template sees for m: role, content,
// tool_calls, then Extra's keys sorted; keys whose value is nil dropped, and
// the reasoning aliased under "thinking" and "reasoning_content" as
// transformers' _alias_reasoning_fields does.
func messageValue(m Message) (jinja.Value, error) {
	d := jinja.NewDict()
	dd := d.AsDict()
	set := func(k string, v any) error {
		if v == nil {
			return nil
		}
		jv, err := toValue(v)
		if err != nil {
			return fmt.Errorf("%q: %w", k, err)
		}
		if jv.IsNone() {
			return nil
		}
		dd.Set(k, jv)
		return nil
	}
	if v, ok := m.Extra["role"]; ok {
		if err := set("role", v); err != nil {
			return jinja.Value{}, err
		}
	} else {
		dd.Set("role", jinja.NewString(m.Role))
	}
	if v, ok := m.Extra["content"]; ok {
		if err := set("content", v); err != nil {
			return jinja.Value{}, err
		}
	} else {
		dd.Set("content", jinja.NewString(m.Content))
	}
	if v, ok := m.Extra["tool_calls"]; ok {
		if err := set("tool_calls", v); err != nil {
			return jinja.Value{}, err
		}
	} else if len(m.ToolCalls) > 0 {
		calls := make([]jinja.Value, len(m.ToolCalls))
		for i, tc := range m.ToolCalls {
			c := jinja.NewDict()
			cd := c.AsDict()
			if tc.ID != "" {
				cd.Set("id", jinja.NewString(tc.ID))
			}
			if tc.Type != "" {
				cd.Set("type", jinja.NewString(tc.Type))
			}
			f := jinja.NewDict()
			fd := f.AsDict()
			fd.Set("name", jinja.NewString(tc.Function.Name))
			if tc.Function.Arguments != nil {
				av, err := toValue(tc.Function.Arguments)
				if err != nil {
					return jinja.Value{}, fmt.Errorf("tool call %d arguments: %w", i, err)
				}
				fd.Set("arguments", av)
			}
			cd.Set("function", f)
			calls[i] = c
		}
		dd.Set("tool_calls", jinja.NewList(calls))
	}
	for _, k := range sortedKeys(m.Extra) {
		if k == "role" || k == "content" || k == "tool_calls" {
			continue
		}
		if err := set(k, m.Extra[k]); err != nil {
			return jinja.Value{}, err
		}
	}

	// _alias_reasoning_fields: {"thinking": r, **message, "reasoning_content": r}.
	for _, f := range reasoningFields {
		r, ok := dd.Get(f)
		if !ok {
			continue
		}
		a := jinja.NewDict()
		ad := a.AsDict()
		ad.Set("thinking", r)
		for _, k := range dd.OrderedKeys() {
			v, _ := dd.Get(k)
			ad.Set(k, v)
		}
		ad.Set("reasoning_content", r)
		return a, nil
	}
	return d, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
