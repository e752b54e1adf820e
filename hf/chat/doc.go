// Package chat renders Hugging Face chat templates: the Jinja2 templates a
// model ships (in tokenizer_config.json, chat_template.jinja, or a GGUF
// file's tokenizer.chat_template) that turn a conversation into the prompt
// text the model was trained on.
//
// The aim is byte-for-byte agreement with transformers'
// tokenizer.apply_chat_template(messages, tokenize=False, ...); the tests
// hold real templates (Llama 3, 3.1, 3.2, Qwen3, Qwen2.5, Gemma 3, Mistral,
// SmolLM2) to transformers' own output. Templates are run by
// github.com/ardanlabs/jinja, whose defaults are those of transformers'
// environment (trim_blocks, lstrip_blocks, loop controls, namespace, dict).
// This package adds what transformers adds to that environment, through the
// engine's render scope (names set there shadow the engine's built-ins):
//
//   - raise_exception(message), which ends the render with a *TemplateError;
//   - strftime_now(format), Python's strftime on the local time of an
//     injectable clock (RenderOptions.Now);
//   - range() limited to 100000 items, as jinja2's sandbox limits it;
//   - the variables messages, add_generation_prompt, tools, documents, the
//     special tokens (bos_token, eos_token, ...) and any extra variables;
//   - messages prepared as transformers prepares them: keys whose value is
//     None dropped, and a message's reasoning offered under both "thinking"
//     and "reasoning_content".
//
// Known differences from transformers, with v1.8.0 of the engine (the newest
// that builds with Go 1.26; later ones need Go 1.27 and fix the first two):
//
//   - tojson is the engine's, and filters cannot be replaced from outside
//     it: with indent (Llama 3.1/3.2 print tools that way) it sorts keys
//     and escapes <, >, &; it ignores sort_keys and ensure_ascii, prints
//     the float 1.0 as 1 and escapes U+2028/U+2029;
//   - a newline between "{{ ... }}" and a block tag, or before
//     "{% endfor %}" when "{%- ... %}" follows, is dropped;
//   - the engine is more lenient than Jinja2: undefined attributes, division
//     by zero and the like render instead of failing, and None prints as "";
//   - a dict built with dict(a=..., b=...) or namespace(...) inside a
//     template has no key order;
//   - a macro that calls itself without end overflows the Go stack, which
//     ends the process (Python raises RecursionError);
//   - special tokens a tokenizer class defaults when the config names none
//     (GemmaTokenizer's mask_token "<mask>") are not known here.
package chat
