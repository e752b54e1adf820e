// Official OpenAI Node client against a running gotpu serve.
//
// Environment: GOTPU_URL, GOTPU_MODEL, GOTPU_EMBED_MODEL, GOTPU_API_KEY;
// GOTPU_OPENAI_NODE is the folder holding the node_modules of
// tools/openai/install.sh. Run by
// cmd/gotpu TestServeOpenAIClients; prints "ok N checks" and exits 0 when
// all pass.
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.join(process.env.GOTPU_OPENAI_NODE, "x.js"));
const OpenAI = require("openai").default ?? require("openai");

const url = process.env.GOTPU_URL + "/v1";
const model = process.env.GOTPU_MODEL;
const embedModel = process.env.GOTPU_EMBED_MODEL;
const client = new OpenAI({ baseURL: url, apiKey: process.env.GOTPU_API_KEY, maxRetries: 0, timeout: 60000 });
let checks = 0;

function check(cond, what) {
  if (!cond) {
    console.error("FAIL:", what);
    process.exit(1);
  }
  checks++;
}

const ids = [];
for await (const m of client.models.list()) ids.push(m.id);
check(ids.includes(model) && ids.includes(embedModel), `models.list gave ${ids}`);

const c = await client.completions.create({ model, prompt: "hello world", max_tokens: 5, temperature: 0 });
check(typeof c.choices[0].text === "string" && ["stop", "length"].includes(c.choices[0].finish_reason), JSON.stringify(c));
check(c.usage.total_tokens === c.usage.prompt_tokens + c.usage.completion_tokens, JSON.stringify(c.usage));

const msgs = [{ role: "user", content: "hello" }];
const r = await client.chat.completions.create({ model, messages: msgs, max_tokens: 6, temperature: 0, n: 2, logprobs: true, top_logprobs: 1 });
check(r.choices.length === 2 && r.choices[1].index === 1, JSON.stringify(r));
const greedy = r.choices[0].message.content;
check(r.choices[0].logprobs.content.every((e) => e.top_logprobs.length === 1), "chat logprobs");

let text = "";
let usage = null;
const stream = await client.chat.completions.create({ model, messages: msgs, max_tokens: 6, temperature: 0, stream: true, stream_options: { include_usage: true } });
for await (const chunk of stream) {
  if (chunk.usage) usage = chunk.usage;
  for (const s of chunk.choices) text += s.delta?.content ?? "";
}
check(text === greedy, `streamed ${JSON.stringify(text)} != ${JSON.stringify(greedy)}`);
check(usage && usage.completion_tokens >= 1, "stream usage");

const e = await client.embeddings.create({ model: embedModel, input: ["w5 w6 w7", "w9"] });
check(e.data.length === 2 && e.data[0].embedding.length === 32, "embeddings");
const f = await client.embeddings.create({ model: embedModel, input: "w5 w6 w7", encoding_format: "float" });
check(f.data[0].embedding.every((x, i) => Math.abs(x - e.data[0].embedding[i]) < 1e-6), "base64 and float embeddings differ");

try {
  await client.chat.completions.create({ model: "no-such-model", messages: msgs });
  check(false, "unknown model accepted");
} catch (err) {
  check(err instanceof OpenAI.NotFoundError && err.status === 404, `404: ${err}`);
}
try {
  await client.chat.completions.create({ model, messages: msgs, max_tokens: 0 });
  check(false, "max_tokens 0 accepted");
} catch (err) {
  check(err instanceof OpenAI.BadRequestError && err.param === "max_tokens", `400: ${err} param=${err.param}`);
}
try {
  await new OpenAI({ baseURL: url, apiKey: "wrong", maxRetries: 0 }).models.list();
  check(false, "wrong key accepted");
} catch (err) {
  check(err instanceof OpenAI.AuthenticationError && err.status === 401, `401: ${err}`);
}
let version = "?";
try {
  version = require("openai/version").VERSION;
} catch {}
console.log(`ok ${checks} checks (openai ${version})`);
