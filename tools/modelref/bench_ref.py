#!/usr/bin/env python3
"""PyTorch reference of `gotpu bench model`: transformers' prefill and decode speed.

    PY="$(tools/modelref/venv.sh)"
    "$PY" tools/modelref/bench_ref.py --model DIR [--dtype f32|bf16] [--threads 2]
        [--prompt-len 128] [--new-tokens 64] [--method generate|loop]
        [--reps 5] [--warmup 1] [--serve]

Loads DIR with transformers (AutoModelForCausalLM, dtype float32 or
bfloat16, eval mode, the default attention implementation: sdpa), sets
torch.set_num_threads(--threads) and generates --new-tokens tokens greedily
after a --prompt-len prompt of batch 1, under torch.inference_mode. The
prompt's ids are the same as gotpu's: id_i = (17 + 7919*i) mod vocab_size.
No token stops generation early: exactly --new-tokens tokens come out.

Timing (--method):
  generate  (default) model.generate(do_sample=False, max_new_tokens=N,
            eos_token_id=None): what a transformers user runs, with its
            per-token overhead (logits processors, stopping criteria,
            cache bookkeeping). A LogitsProcessor records the time at which
            the first token's logits are ready: prefill_s runs from the call
            to that moment (one forward of the prompt computing only the last
            position's logits, logits_to_keep=1, as generate asks), and
            decode_s from then until generate returns (N-1 forwards of one
            token with the DynamicCache, and N argmax choices).
  loop      the bare model: one forward of the prompt (DynamicCache,
            logits_to_keep=1), argmax, then N-1 forwards of one token with
            use_cache, each followed by argmax; the same two intervals.
            It is generate without its bookkeeping, a lower bound on
            transformers' per-token cost.
Both methods produce the same tokens.

Output without --serve: one JSON object on stdout,
  {"versions", "load": {...}, "results": [{"prefill_s", "decode_s",
   "prefill_cpu_s", "decode_cpu_s", "prefill_tokens", "decode_steps",
   "tokens", "rss_bytes"}]} (after --warmup untimed runs; *_cpu_s are the
  same intervals in process CPU time, time.process_time, all threads;
  rss_bytes is VmRSS after the run).
--serve (what `gotpu bench model` uses, to interleave rep by rep): after
loading, print {"ready": true, "versions", "load": {...}, "dtype", "method"},
then answer every stdin line "run" with one result object as above, or
{"error": "..."}, until end of input. A line "batch N" (what `gotpu bench
serve --reference` sends) runs generate on a batch of N different prompts
of --prompt-len ids (row r: (17 + 7919*i + 104729*r) mod vocab_size, no
padding) and answers {"batch": N, "prefill_s" (call to the first tokens'
logits, the whole batch's time to first token), "decode_s" (from then to
the end), "step_s" [the N-1 intervals between consecutive tokens' logits],
"new_tokens"}.
"load" holds rss_before_bytes and rss_after_bytes (VmRSS of this process
around from_pretrained, after gc), weight_bytes (parameter bytes in the
dtype) and load_s.
Exit status: 0; 2 on bad arguments; 3 when torch or transformers cannot be
imported, with {"unavailable": "<reason>"} on stdout.
"""
import argparse
import gc
import json
import os
import platform
import sys
import time


def vm_rss():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def prompt_ids(n, vocab):
    return [(17 + 7919 * i) % vocab for i in range(n)]


class Bench:
    def __init__(self, a):
        import torch
        import transformers
        from transformers import AutoModelForCausalLM

        self.torch, self.transformers = torch, transformers
        transformers.utils.logging.set_verbosity_error()
        transformers.utils.logging.disable_progress_bar()
        torch.set_num_threads(a.threads)
        dt = {"f32": torch.float32, "bf16": torch.bfloat16}[a.dtype]
        gc.collect()
        before = vm_rss()
        t0 = time.perf_counter()
        if os.path.isfile(a.model) and a.model.endswith(".gguf"):
            # A GGUF file: transformers dequantizes it (to f32, then dt).
            self.model = AutoModelForCausalLM.from_pretrained(
                os.path.dirname(os.path.abspath(a.model)), gguf_file=os.path.basename(a.model), dtype=dt).eval()
        else:
            self.model = AutoModelForCausalLM.from_pretrained(a.model, dtype=dt).eval()
        load_s = time.perf_counter() - t0
        gc.collect()
        after = vm_rss()
        self.load = {
            "rss_before_bytes": before,
            "rss_after_bytes": after,
            "weight_bytes": sum(p.numel() * p.element_size() for p in self.model.parameters()),
            "load_s": load_s,
        }
        self.versions = {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "torch_threads": torch.get_num_threads(),
            "attn_implementation": getattr(self.model.config, "_attn_implementation", None),
        }
        vocab = self.model.config.get_text_config().vocab_size
        self.vocab, self.prompt_len = vocab, a.prompt_len
        self.ids = torch.tensor([prompt_ids(a.prompt_len, vocab)], dtype=torch.long)
        self.new = a.new_tokens
        self.method = a.method

    def run(self):
        torch = self.torch
        with torch.inference_mode():
            if self.method == "generate":
                return self._generate()
            return self._loop()

    def _generate(self):
        torch = self.torch
        marks = []

        class Mark(self.transformers.LogitsProcessor):
            def __call__(self, input_ids, scores):
                if not marks:
                    marks.append((time.perf_counter(), time.process_time()))
                return scores

        ids = self.ids
        c0, t0 = time.process_time(), time.perf_counter()
        out = self.model.generate(
            ids, attention_mask=torch.ones_like(ids), do_sample=False,
            max_new_tokens=self.new, min_new_tokens=0, eos_token_id=None,
            pad_token_id=0, logits_processor=[Mark()], num_beams=1,
        )
        t2, c2 = time.perf_counter(), time.process_time()
        toks = out[0, ids.shape[1]:].tolist()
        if len(toks) != self.new:
            raise RuntimeError(f"generate returned {len(toks)} tokens, want {self.new}")
        (t1, c1) = marks[0]
        return self._result(t1 - t0, t2 - t1, c1 - c0, c2 - c1, toks)

    def batch(self, n):
        """generate over n prompts at once: the serving reference."""
        torch = self.torch
        marks = []

        class Mark(self.transformers.LogitsProcessor):
            def __call__(self, input_ids, scores):
                marks.append(time.perf_counter())
                return scores

        ids = torch.tensor([[(17 + 7919 * i + 104729 * r) % self.vocab for i in range(self.prompt_len)] for r in range(n)],
                           dtype=torch.long)
        with torch.inference_mode():
            t0 = time.perf_counter()
            out = self.model.generate(
                ids, attention_mask=torch.ones_like(ids), do_sample=False,
                max_new_tokens=self.new, min_new_tokens=0, eos_token_id=None,
                pad_token_id=0, logits_processor=[Mark()], num_beams=1,
            )
            t2 = time.perf_counter()
        if out.shape[1] - ids.shape[1] != self.new:
            raise RuntimeError(f"generate returned {out.shape[1] - ids.shape[1]} tokens, want {self.new}")
        return {"batch": n, "prefill_s": marks[0] - t0, "decode_s": t2 - marks[0],
                "step_s": [b - a for a, b in zip(marks, marks[1:])], "new_tokens": self.new}

    def _loop(self):
        torch = self.torch
        from transformers import DynamicCache

        cache = DynamicCache(config=self.model.config)
        c0, t0 = time.process_time(), time.perf_counter()
        out = self.model(input_ids=self.ids, cache=cache, use_cache=True, logits_to_keep=1)
        tok = out.logits[:, -1].float().argmax(-1)
        toks = [tok]
        t1, c1 = time.perf_counter(), time.process_time()
        for _ in range(self.new - 1):
            out = self.model(input_ids=tok[:, None], cache=cache, use_cache=True)
            tok = out.logits[:, -1].float().argmax(-1)
            toks.append(tok)
        t2, c2 = time.perf_counter(), time.process_time()
        return self._result(t1 - t0, t2 - t1, c1 - c0, c2 - c1, [int(t) for t in torch.cat(toks).tolist()])

    def _result(self, prefill, decode, prefill_cpu, decode_cpu, toks):
        return {"prefill_s": prefill, "decode_s": decode, "prefill_cpu_s": prefill_cpu, "decode_cpu_s": decode_cpu,
                "prefill_tokens": int(self.ids.shape[1]),
                "decode_steps": self.new - 1, "tokens": toks, "rss_bytes": vm_rss()}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--dtype", default="f32", choices=("f32", "bf16"))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--prompt-len", type=int, default=128)
    p.add_argument("--new-tokens", type=int, default=64)
    p.add_argument("--method", default="generate", choices=("generate", "loop"))
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--serve", action="store_true")
    a = p.parse_args()
    if a.threads < 1 or a.prompt_len < 1 or a.new_tokens < 1 or a.reps < 1 or a.warmup < 0:
        p.error("--threads, --prompt-len, --new-tokens and --reps must be positive, --warmup not negative")
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except Exception as e:  # ImportError, or a broken install
        print(json.dumps({"unavailable": f"import torch/transformers: {e}"}))
        sys.exit(3)
    b = Bench(a)
    if a.serve:
        print(json.dumps({"ready": True, "versions": b.versions, "load": b.load,
                          "dtype": a.dtype, "method": a.method}), flush=True)
        for line in sys.stdin:
            cmd = line.strip()
            if not cmd:
                continue
            words = cmd.split()
            if cmd != "run" and not (len(words) == 2 and words[0] == "batch" and words[1].isdigit() and int(words[1]) > 0):
                print(json.dumps({"error": f"unknown command {cmd!r}"}), flush=True)
                continue
            try:
                r = b.run() if cmd == "run" else b.batch(int(words[1]))
            except Exception as e:
                r = {"error": f"{type(e).__name__}: {e}"}
            print(json.dumps(r), flush=True)
        return
    for _ in range(a.warmup):
        b.run()
    res = [b.run() for _ in range(a.reps)]
    print(json.dumps({"versions": b.versions, "load": b.load, "dtype": a.dtype, "method": a.method,
                      "results": res}))


if __name__ == "__main__":
    main()
