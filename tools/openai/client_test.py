"""Official OpenAI Python client against a running gotpu serve.

Environment: GOTPU_URL (http://host:port), GOTPU_MODEL, GOTPU_EMBED_MODEL,
GOTPU_API_KEY. Run by cmd/gotpu TestServeOpenAIClients with the venv of
tools/openai/install.sh; prints "ok N checks" and exits 0 when all pass.
"""

import os
import sys

import openai

url = os.environ["GOTPU_URL"] + "/v1"
model = os.environ["GOTPU_MODEL"]
embed_model = os.environ["GOTPU_EMBED_MODEL"]
key = os.environ["GOTPU_API_KEY"]
client = openai.OpenAI(base_url=url, api_key=key, max_retries=0, timeout=60)
checks = 0


def check(cond, what):
    global checks
    if not cond:
        print("FAIL:", what, file=sys.stderr)
        sys.exit(1)
    checks += 1


# Models.
ids = [m.id for m in client.models.list()]
check(model in ids and embed_model in ids, f"models.list gave {ids}")

# Completions.
c = client.completions.create(model=model, prompt="hello world", max_tokens=5, temperature=0, logprobs=2)
ch = c.choices[0]
check(isinstance(ch.text, str) and ch.finish_reason in ("stop", "length"), f"completion {c}")
check(c.usage.completion_tokens <= 5 and c.usage.total_tokens == c.usage.prompt_tokens + c.usage.completion_tokens, f"usage {c.usage}")
check(len(ch.logprobs.tokens) == len(ch.logprobs.token_logprobs) == len(ch.logprobs.text_offset), f"legacy logprobs {ch.logprobs}")

# Streamed completion gives the same greedy text.
text = ""
for chunk in client.completions.create(model=model, prompt="hello world", max_tokens=5, temperature=0, stream=True):
    for s in chunk.choices:
        text += s.text
check(text == ch.text, f"streamed completion {text!r} != {ch.text!r}")

# Chat with n, seed and logprobs.
msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello"}]
r = client.chat.completions.create(model=model, messages=msgs, max_tokens=6, temperature=0, n=2,
                                   logprobs=True, top_logprobs=2)
check(len(r.choices) == 2 and [x.index for x in r.choices] == [0, 1], f"chat n=2 {r}")
greedy = r.choices[0].message.content
check(r.choices[1].message.content == greedy, "greedy choices differ")
check(r.choices[0].message.role == "assistant", "role")
lp = r.choices[0].logprobs.content
check(all(len(e.top_logprobs) == 2 and isinstance(e.bytes, list) for e in lp), f"chat logprobs {lp}")
check(r.usage.prompt_tokens_details is None or r.usage.prompt_tokens_details.cached_tokens >= 0, "cached tokens")

# Streamed chat with include_usage.
parts, usage, finish = [], None, None
stream = client.chat.completions.create(model=model, messages=msgs, max_tokens=6, temperature=0, stream=True,
                                        stream_options={"include_usage": True})
for chunk in stream:
    if chunk.usage is not None:
        usage = chunk.usage
    for s in chunk.choices:
        if s.delta.content:
            parts.append(s.delta.content)
        if s.finish_reason:
            finish = s.finish_reason
check("".join(parts) == greedy, f"streamed chat {''.join(parts)!r} != {greedy!r}")
check(usage is not None and usage.completion_tokens >= 1 and finish in ("stop", "length"), f"stream usage {usage} {finish}")

# Stop strings.
s = client.chat.completions.create(model=model, messages=msgs, max_tokens=6, temperature=0, stop=[greedy[1:3]] if len(greedy) > 2 else None)
if len(greedy) > 2:
    check(s.choices[0].message.content == greedy[: greedy.index(greedy[1:3])], f"stop: {s.choices[0].message.content!r}")

# Embeddings (the client asks for base64 and decodes it) and floats.
e = client.embeddings.create(model=embed_model, input=["w5 w6 w7", "w9"])
check(len(e.data) == 2 and len(e.data[0].embedding) == 32 and e.usage.prompt_tokens > 0, f"embeddings {e}")
f = client.embeddings.create(model=embed_model, input="w5 w6 w7", encoding_format="float")
check(max(abs(a - b) for a, b in zip(f.data[0].embedding, e.data[0].embedding)) < 1e-6, "base64 and float embeddings differ")

# Errors.
try:
    client.chat.completions.create(model="no-such-model", messages=msgs)
    check(False, "unknown model accepted")
except openai.NotFoundError as err:
    check(err.status_code == 404, f"404: {err}")
try:
    client.chat.completions.create(model=model, messages=msgs, temperature=-1)
    check(False, "temperature -1 accepted")
except openai.BadRequestError as err:
    check(err.status_code == 400 and err.param == "temperature", f"400: {err} param={err.param}")
try:
    openai.OpenAI(base_url=url, api_key="wrong", max_retries=0).models.list()
    check(False, "wrong key accepted")
except openai.AuthenticationError as err:
    check(err.status_code == 401, f"401: {err}")

print(f"ok {checks} checks (openai {openai.__version__})")
