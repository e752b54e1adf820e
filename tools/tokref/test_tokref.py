#!/usr/bin/env python3
"""Checks of the tokenizer reference tooling that need only the standard library.

Run: python3 -m unittest tools/tokref/test_tokref.py   (from the repository root)
or:  python3 tools/tokref/test_tokref.py
"""

import hashlib
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TESTDATA = os.path.join(ROOT, "testdata", "tokenizers")
sys.path.insert(0, HERE)

import build_gpt2  # noqa: E402
import corpus  # noqa: E402


def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def sources():
    rows = []
    with open(os.path.join(HERE, "sources.tsv"), encoding="utf-8") as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                rows.append(line.rstrip("\n").split("\t"))
    return rows


class CorpusTest(unittest.TestCase):
    def test_committed_corpus_is_generated(self):
        lines = [json.dumps({"id": i, "cat": c, "text": t}, ensure_ascii=False) for i, c, t in corpus.build()]
        with open(os.path.join(TESTDATA, "corpus.jsonl"), encoding="utf-8") as f:
            self.assertEqual(f.read(), "\n".join(lines) + "\n", "run tools/tokref/corpus.py")

    def test_corpus_shape(self):
        samples = corpus.build()
        self.assertTrue(150 <= len(samples) <= 400, len(samples))
        texts = [t for _, _, t in samples]
        for want in ("", " "):
            self.assertIn(want, texts)
        self.assertGreaterEqual(sum(len(t) >= 4500 for t in texts), 3)
        self.assertTrue(all(len(t) <= 6000 for t in texts))
        cats = {c for _, c, _ in samples}
        for c in ("english", "code", "whitespace", "cjk", "emoji", "special_tokens", "normalization", "unicode"):
            self.assertIn(c, cats)
        joined = "".join(texts)
        for needle in ("\u00df", "\u200d", "\U0001f3fd", "\U0001f1fa", "\t", "<|endoftext|>", "[CLS]",
                       "<|begin_of_text|>", "<start_of_turn>", "<|im_start|>", "'LL", "'ve", "\x00"):
            self.assertIn(needle, joined)


class BuildGPT2Test(unittest.TestCase):
    def test_rejects_other_files(self):
        cases = [
            (b"{}", b"#version: 0.2\n"),
            (b'{"a": 0}', b"#version: 0.2\na b\n"),
        ]
        for enc, bpe in cases:
            with self.assertRaises(build_gpt2.BuildError):
                build_gpt2.build(enc, bpe)

    def test_committed_file_layout(self):
        with open(os.path.join(TESTDATA, "gpt2", "tokenizer.json"), encoding="utf-8") as f:
            doc = json.load(f)
        self.assertEqual(doc["pre_tokenizer"], {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True})
        self.assertEqual(doc["post_processor"]["type"], "ByteLevel")
        self.assertEqual(doc["decoder"]["type"], "ByteLevel")
        self.assertEqual(doc["added_tokens"][0]["id"], 50256)
        self.assertEqual(doc["added_tokens"][0]["content"], "<|endoftext|>")
        self.assertTrue(doc["added_tokens"][0]["special"])
        self.assertEqual(len(doc["model"]["vocab"]), 50257)
        self.assertEqual(len(doc["model"]["merges"]), 50000)
        self.assertEqual(doc["model"]["merges"][0], "\u0120 t")


class SourcesTest(unittest.TestCase):
    def test_committed_files_match_pins_and_meta(self):
        rows = sources()
        self.assertEqual([r[0] for r in rows],
                         ["gpt2", "bert", "llama2", "llama3", "llama3_1", "qwen3", "gemma3", "gpt4o", "deepseek_v3"])
        total = 0
        for name, _reg, pkg, ver, _member, sha, committed, _lic, _up in rows:
            d = os.path.join(TESTDATA, name)
            with open(os.path.join(d, "meta.json"), encoding="utf-8") as f:
                meta = json.load(f)
            self.assertEqual(meta["tokenizer_json"]["sha256"], sha, name)
            self.assertEqual((meta["source"]["package"], meta["source"]["version"]), (pkg, ver), name)
            self.assertEqual(meta["committed"], committed == "yes", name)
            self.assertEqual(meta["corpus"]["sha256"], sha256_file(os.path.join(TESTDATA, "corpus.jsonl")), name)
            tj = os.path.join(d, "tokenizer.json")
            if committed == "yes":
                self.assertEqual(sha256_file(tj), sha, name)
            else:
                self.assertFalse(os.path.exists(tj), f"{name}: licence/size says fetch, do not commit")
            ref = os.path.join(d, "ref.jsonl")
            with open(ref, encoding="utf-8") as f:
                n = sum(1 for _ in f)
            self.assertEqual(n, meta["ref_lines"], name)
            self.assertEqual(n, 2 * meta["corpus"]["samples"], name)
            for dirpath, _, files in os.walk(d):
                total += sum(os.path.getsize(os.path.join(dirpath, x)) for x in files)
        self.assertLess(total, 30 << 20, "committed tokenizer data must stay under 30 MB")

    def test_ref_lines_well_formed(self):
        keys = ["id", "text", "add_special_tokens", "ids", "tokens", "offsets", "decoded", "decoded_keep"]
        for name in ("gpt2", "bert"):
            with open(os.path.join(TESTDATA, name, "ref.jsonl"), encoding="utf-8") as f:
                for line in f:
                    rec = json.loads(line)
                    self.assertEqual(list(rec), keys)
                    self.assertEqual(len(rec["ids"]), len(rec["tokens"]))
                    self.assertEqual(len(rec["ids"]), len(rec["offsets"]))
                    for s, e in rec["offsets"]:
                        self.assertTrue(0 <= s <= e <= len(rec["text"]), (name, rec["id"]))


if __name__ == "__main__":
    unittest.main()
