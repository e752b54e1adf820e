#!/usr/bin/env python3
"""Builds small tokenizer.json fixtures and their reference outputs.

Each fixture exercises components the real vocabularies under
testdata/tokenizers/ do not (Unigram with a SentencePiece precompiled
charsmap, BPE suffixes/prefixes, Split behaviours, Roberta/Bert processing,
pairs, truncation with stride, padding). The tokenizers are trained here on
the reference corpus with the HF `tokenizers` library (and `sentencepiece`
for the Unigram model), and ref.jsonl records what that library returns, in
the format of testdata/tokenizers/<name>/ref.jsonl plus optional "pair",
"type_ids", "attention_mask", "special_tokens_mask" and "overflowing".

Usage (reference tooling only; the Go tests never run Python):
    pip install tokenizers==0.23.3 sentencepiece protobuf
    python3 hf/tokenizer/testdata/gen_fixtures.py
"""
import json
import os
import tempfile

from tokenizers import (Tokenizer, Regex, AddedToken, decoders, models,
                        normalizers, pre_tokenizers, processors, trainers)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
CORPUS = [json.loads(l)["text"] for l in open(os.path.join(ROOT, "testdata", "tokenizers", "corpus.jsonl"))]

EXTRA = [
    "", " ", "  leading and trailing  ", "Hello World", "HELLO world!!", "don't STOP can't I'm",
    "numbers 1234567 and 3.14159", "tabs\tand\nnewlines\r\n", "Ünïcödé çafé naïve", "ﬁne ＡＢＣ ①②③ ™",
    "日本語のテキスト", "emoji 😀👍🏽 family 👨‍👩‍👧", "<mask> masked <mask>word", "a<mask>b",
    "the end.</s> and <s> again", "[CLS] already [SEP]", "x" * 40, "supercalifragilisticexpialidocious",
    "e\u0301 vs \u00e9", "İstanbul ǅ ß", "word\u00a0nbsp\u3000ideographic", "a  b   c    d",
]


def texts():
    out = [t for t in CORPUS if len(t) <= 200]
    return out + EXTRA


def record(tk, text, add, pair=None, full=False):
    e = tk.encode(text, pair, add_special_tokens=add) if pair is not None else tk.encode(text, add_special_tokens=add)
    o = {"text": text, "add_special_tokens": add, "ids": e.ids, "tokens": e.tokens,
         "offsets": [list(x) for x in e.offsets],
         "decoded": tk.decode(e.ids, skip_special_tokens=True),
         "decoded_keep": tk.decode(e.ids, skip_special_tokens=False)}
    if pair is not None:
        o["pair"] = pair
        o["offsets"] = None  # pair offsets refer to two texts
    if pair is not None or full:
        o["type_ids"] = e.type_ids
        o["attention_mask"] = e.attention_mask
        o["special_tokens_mask"] = e.special_tokens_mask
        o["overflowing"] = [x.ids for x in e.overflowing]
    return o


def save(name, tk, pairs=False, full=False):
    d = os.path.join(HERE, "fixtures", name)
    os.makedirs(d, exist_ok=True)
    tk.save(os.path.join(d, "tokenizer.json"))
    tk = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
    with open(os.path.join(d, "ref.jsonl"), "w") as f:
        ts = texts()
        for i, t in enumerate(ts):
            for add in (True, False):
                o = record(tk, t, add, full=full)
                o["id"] = f"{name}-{i}"
                f.write(json.dumps(o, ensure_ascii=False) + "\n")
        if pairs:
            for i in range(0, len(ts) - 1, 7):
                o = record(tk, ts[i], True, pair=ts[i + 1])
                o["id"] = f"{name}-pair-{i}"
                f.write(json.dumps(o, ensure_ascii=False) + "\n")


def train_iter():
    return CORPUS * 3


def unigram_spm():
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as pb
    with tempfile.TemporaryDirectory() as tmp:
        txt = os.path.join(tmp, "c.txt")
        with open(txt, "w") as f:
            for t in CORPUS:
                f.write(t.replace("\n", " ") + "\n")
        spm.SentencePieceTrainer.train(input=txt, model_prefix=os.path.join(tmp, "m"), vocab_size=1200,
                                       model_type="unigram", byte_fallback=True, character_coverage=0.98,
                                       normalization_rule_name="nmt_nfkc", minloglevel=2)
        m = pb.ModelProto()
        m.ParseFromString(open(os.path.join(tmp, "m.model"), "rb").read())
    vocab = [(p.piece, p.score) for p in m.pieces]
    for bf, name in ((True, "unigram_spm_bytefallback"), (False, "unigram_spm_unk")):
        tk = Tokenizer(models.Unigram(vocab, m.trainer_spec.unk_id, bf))
        tk.normalizer = normalizers.Sequence([normalizers.Precompiled(m.normalizer_spec.precompiled_charsmap),
                                              normalizers.Replace(Regex(" {2,}"), " ")])
        tk.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
        if bf:
            tk.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                            decoders.Fuse(), decoders.Strip(" ", 1, 0)])
        else:
            tk.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
        tk.post_processor = processors.TemplateProcessing(single="$A </s>", pair="$A </s> $B:1 </s>:1",
                                                          special_tokens=[("</s>", 2)])
        tk.add_special_tokens(["</s>"])
        save(name, tk, pairs=True)


def bpe_suffix():
    tk = Tokenizer(models.BPE(unk_token="[UNK]", continuing_subword_prefix="##", end_of_word_suffix="</w>", fuse_unk=True))
    tk.normalizer = normalizers.Sequence([normalizers.NFKD(), normalizers.StripAccents(), normalizers.Lowercase()])
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tr = trainers.BpeTrainer(vocab_size=800, special_tokens=["[UNK]", "[CLS]", "[SEP]"], limit_alphabet=50,
                             continuing_subword_prefix="##", end_of_word_suffix="</w>")
    tk.train_from_iterator(train_iter(), tr)
    tk.post_processor = processors.BertProcessing(("[SEP]", tk.token_to_id("[SEP]")), ("[CLS]", tk.token_to_id("[CLS]")))
    tk.decoder = decoders.BPEDecoder(suffix="</w>")
    save("bpe_suffix_prefix", tk, pairs=True)


def wordpiece_custom():
    tk = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=12))
    tk.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=False, lowercase=False)
    tk.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(),
                                                pre_tokenizers.Punctuation(behavior="contiguous"),
                                                pre_tokenizers.Digits(individual_digits=True)])
    tr = trainers.WordPieceTrainer(vocab_size=700, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], limit_alphabet=80)
    tk.train_from_iterator(train_iter(), tr)
    tk.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", tk.token_to_id("[CLS]")), ("[SEP]", tk.token_to_id("[SEP]"))])
    tk.decoder = decoders.WordPiece(prefix="##", cleanup=True)
    save("wordpiece_template", tk, pairs=True)
    tk.enable_truncation(max_length=16, stride=3, strategy="longest_first")
    tk.enable_padding(direction="left", pad_id=0, pad_token="[PAD]", pad_to_multiple_of=8)
    save("wordpiece_trunc_pad", tk, pairs=True, full=True)


def bytelevel_roberta():
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tk.decoder = decoders.ByteLevel()
    tr = trainers.BpeTrainer(vocab_size=700, special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tk.train_from_iterator(train_iter(), tr)
    tk.add_special_tokens([AddedToken("<mask>", lstrip=True, rstrip=False, special=True)])
    tk.add_tokens([AddedToken("word", single_word=True), AddedToken("END", rstrip=True), AddedToken("Hello", normalized=True)])
    tk.normalizer = normalizers.Lowercase()
    tk.post_processor = processors.RobertaProcessing(("</s>", tk.token_to_id("</s>")), ("<s>", tk.token_to_id("<s>")),
                                                     trim_offsets=True, add_prefix_space=True)
    save("bytelevel_roberta", tk, pairs=True)


def split_wordlevel():
    words = {}
    for t in CORPUS:
        for w in t.split():
            words.setdefault(w, len(words) + 1)
            if len(words) > 2000:
                break
    words["<unk>"] = 0
    tk = Tokenizer(models.WordLevel(words, unk_token="<unk>"))
    tk.normalizer = normalizers.Sequence([normalizers.Strip(), normalizers.Replace(Regex(r"\s+"), " "),
                                          normalizers.NFC(), normalizers.Prepend("_"), normalizers.Nmt()])
    tk.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(" ", behavior="merged_with_previous"),
        pre_tokenizers.Split(Regex(r"\d+"), behavior="merged_with_next"),
        pre_tokenizers.Split(Regex(r"[aeiou]"), behavior="removed", invert=False),
        pre_tokenizers.Split(Regex(r"[A-Z]+"), behavior="isolated", invert=True),
        pre_tokenizers.CharDelimiterSplit("x"),
    ])
    tk.decoder = decoders.Sequence([decoders.Replace("_", "-"), decoders.Strip("-", 0, 1)])
    save("split_wordlevel", tk)


def metaspace_first():
    tk = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=False))
    tk.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    tr = trainers.BpeTrainer(vocab_size=500, special_tokens=["<unk>", "<s>"], limit_alphabet=70)
    tk.train_from_iterator(train_iter(), tr)
    tk.add_special_tokens(["<s>"])
    tk.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Strip(left=False, right=True)])
    tk.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="first")
    save("metaspace_first", tk)


def batch_ref():
    """Batch encoding with truncation and padding set through the API."""
    tk = Tokenizer.from_file(os.path.join(HERE, "fixtures", "wordpiece_template", "tokenizer.json"))
    texts = ["short", "a somewhat longer sentence with several words in it", "", "mid length text here"]
    out = {"texts": texts, "cases": []}
    for trunc, pad in [(None, {"direction": "right"}), (6, {"direction": "left", "length": 9}), (7, None)]:
        tk.no_truncation()
        tk.no_padding()
        if trunc:
            tk.enable_truncation(max_length=trunc, stride=1)
        if pad:
            tk.enable_padding(pad_id=0, pad_token="[PAD]", **pad)
        encs = tk.encode_batch(texts)
        out["cases"].append({"truncation": trunc, "padding": pad,
                             "ids": [e.ids for e in encs], "attention_mask": [e.attention_mask for e in encs],
                             "overflowing": [[o.ids for o in e.overflowing] for e in encs]})
    json.dump(out, open(os.path.join(HERE, "batch_ref.json"), "w"), ensure_ascii=False, indent=0)


if __name__ == "__main__":
    unigram_spm()
    bpe_suffix()
    wordpiece_custom()
    bytelevel_roberta()
    split_wordlevel()
    metaspace_first()
    batch_ref()
    for d in sorted(os.listdir(os.path.join(HERE, "fixtures"))):
        p = os.path.join(HERE, "fixtures", d)
        print(d, os.path.getsize(os.path.join(p, "tokenizer.json")), os.path.getsize(os.path.join(p, "ref.jsonl")))
