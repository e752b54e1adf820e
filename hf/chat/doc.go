// Package chat renders Hugging Face chat templates: the Jinja2 templates a
// model ships (in tokenizer_config.json, chat_template.jinja, or a GGUF
// file's tokenizer.chat_template) that turn a conversation into the prompt
// text the model was trained on.
//
// The aim is byte-for-byte agreement with transformers'
// tokenizer.apply_chat_template(messages, tokenize=False, ...). Templates
// are run by github.com/ardanlabs/jinja, whose defaults are those of
// transformers' environment (trim_blocks, lstrip_blocks, loop controls,
// namespace, dict). This package adds what transformers adds to that
// environment, through the engine's render scope:
//
//   - the tojson filter as transformers defines it: Python's json.dumps with
//     ensure_ascii=False, keys in insertion order, and indent, separators,
//     sort_keys as arguments;
//   - raise_exception(message), which ends the render with a *TemplateError;
//   - strftime_now(format), Python's strftime on the local time of an
//     injectable clock (RenderOptions.Now);
//   - the variables messages, add_generation_prompt, tools, documents, the
//     special tokens (bos_token, eos_token, ...) and any extra variables;
//   - messages prepared as transformers prepares them: keys whose value is
//     None dropped, and a message's reasoning offered under both "thinking"
//     and "reasoning_content".
//
// Known differences from transformers, all on inputs real templates do not
// produce or rely on: the engine is more lenient than Jinja2 with undefined
// values (an attribute of an undefined value is undefined, not an error);
// it prints None as an empty string and floats with Go's %g; a dict built
// with dict(a=..., b=...) or namespace(...) inside a template has no key
// order; special tokens a tokenizer class defaults (GemmaTokenizer's
// mask_token "<mask>" when the config names none) are not known here.
package chat
