#!/usr/bin/env python3
"""Writes testdata/tokenizers/corpus.jsonl, the tokenizer parity corpus.

Every sample below was written for this project (no third-party text). The
corpus is the source of truth for the reference outputs written by gen.py and
for the benchmark corpus built by bench/tokenizer/run.sh.

Each line of corpus.jsonl is one JSON object:

    {"id": "en-003", "cat": "english", "text": "..."}

ids are unique and stable; cat groups samples by what they exercise. The
output is deterministic: running this script twice gives identical bytes.

Usage: python3 tools/tokref/corpus.py [--out testdata/tokenizers/corpus.jsonl]
"""

import argparse
import json
import os
import sys
import unicodedata

from fsutil import write_atomic  # noqa: E402  (same directory)

# ---------------------------------------------------------------------------
# English prose.
ENGLISH = [
    "The quick brown fox jumps over the lazy dog.",
    "Hello, world!",
    "Hello world",
    " Hello world",
    "hello",
    "HELLO WORLD, SHOUTED THE TERMINAL.",
    "Tokenizers split text into pieces that a model can count, embed and predict.",
    "On Tuesday the river rose by almost a metre, and the ferry stayed on the far bank until the evening.",
    "She packed three notebooks, a borrowed umbrella and a sandwich she never ate.",
    "It was not the noise that woke him but the silence after it, heavy as a wet coat.",
    "A compiler is a patient translator: it reads everything, forgets nothing, and complains about semicolons.",
    "Measure twice, cut once; then measure again, because the saw has opinions.",
    "The committee agreed on the agenda, disagreed on the minutes, and adjourned for lunch.",
    "In the spring of that year the orchard bloomed late, and the bees were impatient.",
    "Why does the kettle always boil faster when nobody is watching it?",
    "Mr. Smith, Dr. Jones and Prof. Li met at 9 a.m. in Room 4B (second floor).",
    "e.g. i.e. etc. vs. approx. No. 7",
    "The word 'tokenization' has fourteen letters, and 'antidisestablishmentarianism' has twenty-eight.",
    "Supercalifragilisticexpialidocious pneumonoultramicroscopicsilicovolcanoconiosis floccinaucinihilipilification",
    "camelCaseIdentifier snake_case_identifier SCREAMING_SNAKE kebab-case-name PascalCaseType",
    "iPhone eBay McDonald O'Neill MacArthur DeVito XMLHttpRequest HTTPServerError",
    "The ratio was 3:2, the score 21-17, and the temperature -4.5 degrees.",
    "She said, \"I'll be there by noon,\" and then, quite reasonably, she wasn't.",
    "Bullet points:\n- first item\n- second item\n  - nested item\n* starred item\n1. numbered item",
    "# Heading one\n\n## Heading two\n\nSome *emphasis*, some **strong text**, and `inline code`.\n\n> A quoted line.\n",
    "Line one\nLine two\nLine three",
    "Windows line endings\r\nsecond line\r\nthird line\r\n",
    "Old Mac line endings\rsecond line\rthird line",
    "A sentence with a trailing space ",
    "   leading spaces and trailing spaces   ",
]

# ---------------------------------------------------------------------------
# Contractions in lower, upper and mixed case (the GPT-2 family regex treats
# them specially, Llama 3 and o200k case-insensitively).
CONTRACTIONS = [
    "it's they're we've I'm you'll she'd don't",
    "IT'S THEY'RE WE'VE I'M YOU'LL SHE'D DON'T",
    "It'S tHeY'rE We'Ve i'M YoU'lL ShE'd DoN'T",
    "'s 't 're 've 'm 'll 'd",
    "'S 'T 'RE 'VE 'M 'LL 'D",
    "the cat's toy, the dogs' bowls, James's book",
    "I'd've thought you'd've known, y'all.",
    "rock 'n' roll, '90s music, 'tis the season",
    "Don't won't can't shan't isn't aren't wasn't weren't hasn't haven't hadn't",
    "he's\nshe'll\nwe'd\n'll\n're",
    "it’s they’re we’ve (curly apostrophes are not ASCII)",
    "'''triple quotes''' and ''double single'' and 'single'",
    "O'Reilly's 'quoted' words'",
    "x's y'S z'll 5's 9'm",
    "  's  'll  ",
]

# ---------------------------------------------------------------------------
# Source code with tabs and indentation.
CODE = [
    "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello, gotpu\")\n}\n",
    "func (t *Tokenizer) Encode(text string) ([]int, error) {\n\tif text == \"\" {\n\t\treturn nil, nil\n\t}\n\tids := make([]int, 0, len(text)/4)\n\tfor _, w := range t.split(text) {\n\t\tids = append(ids, t.lookup(w)...)\n\t}\n\treturn ids, nil\n}\n",
    "type Config struct {\n\tName    string            `json:\"name\"`\n\tLayers  int               `json:\"layers,omitempty\"`\n\tExtra   map[string]string `json:\"extra\"`\n}\n",
    "// Sum adds the elements of xs.\nfunc Sum(xs []float32) (s float32) {\n\tfor i := range xs {\n\t\ts += xs[i]\n\t}\n\treturn\n}",
    "if err != nil {\n\treturn fmt.Errorf(\"open %s: %w\", path, err)\n}",
    "def fibonacci(n: int) -> list[int]:\n    \"\"\"Return the first n Fibonacci numbers.\"\"\"\n    out = [0, 1]\n    while len(out) < n:\n        out.append(out[-1] + out[-2])\n    return out[:n]\n",
    "class Counter:\n    def __init__(self):\n        self.counts = {}\n\n    def add(self, key, n=1):\n        self.counts[key] = self.counts.get(key, 0) + n\n\n\nif __name__ == \"__main__\":\n    c = Counter()\n    c.add('a')\n    print(c.counts)\n",
    "    # four-space indented comment\n        deeper = True\n\t\ttab_indented = False\n",
    "lambda x: x ** 2 if x >= 0 else -x  # squares and negations",
    "for (int i = 0; i < n; ++i) {\n    sum += a[i] * b[i];\n}\n",
    "#include <stdio.h>\n\nint main(void) {\n\tprintf(\"%d\\n\", 42);\n\treturn 0;\n}\n",
    "const add = (a, b) => a + b;\nconsole.log(`sum: ${add(2, 3)}`);\n",
    "fn main() {\n    let v: Vec<u32> = (1..=10).collect();\n    println!(\"{:?}\", v);\n}\n",
    "SELECT id, name FROM users WHERE created_at >= '2024-01-01' ORDER BY name LIMIT 10;",
    "{\"name\": \"gotpu\", \"version\": \"0.1.0\", \"tags\": [\"tensor\", \"go\"], \"nested\": {\"a\": 1, \"b\": [true, false, null]}}",
    "{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 4096,\n  \"rope_theta\": 500000.0,\n  \"eos_token_id\": [128001, 128009]\n}\n",
    "{\n\t\"indent\": \"tabs\",\n\t\"list\": [\n\t\t1,\n\t\t2\n\t]\n}",
    "key: value\nlist:\n  - one\n  - two\nnested:\n  inner: 3.14\n",
    "#!/bin/sh\nset -eu\nfor f in *.txt; do\n  wc -l \"$f\" | awk '{print $1}'\ndone\n",
    "<html>\n<body>\n<div class=\"note\"><b>Bold</b> and <i>italic</i> and <code>x := 1</code></div>\n<ul><li>one</li><li>two</li></ul>\n</body>\n</html>",
    "<table><tr><td>1</td><td>2</td></tr></table> <br/> <img src=\"a.png\" alt=\"\"> &amp; &lt; &gt; &#x1F600;",
    "x=1;y=2;z=x+y;print(z)",
    "a[i][j] += b[k]->c.d; p = &q; *r = **s; t <<= 2; u >>= 3; v ^= w | ~x & y;",
    "if (a != b && c == d || !e) { return a <= b ? c >= d : e; }",
    "regex: ^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}$ and \\d{3}-\\d{4}",
    "\t\t\t\tdeeply\t\ttabbed\tcode\t",
    "diff --git a/x.go b/x.go\n--- a/x.go\n+++ b/x.go\n@@ -1,3 +1,4 @@\n package x\n+import \"os\"\n",
]

# ---------------------------------------------------------------------------
# Whitespace runs.
WHITESPACE = [
    " ",
    "  ",
    "   ",
    "\t",
    "\n",
    "\n\n",
    "\r\n",
    " \n ",
    "a  b   c    d     e",
    "a\tb\t\tc\t\t\td",
    "a\nb\n\nc\n\n\nd",
    "word" + " " * 40 + "word",
    " " * 64,
    "\t" * 20,
    "\n" * 33,
    "end with spaces" + " " * 7,
    "end with newline\n",
    "end with newlines\n\n\n",
    " \t \t\n\t \n  \r\n\t\t  x",
    "indent:\n    four\n        eight\n            twelve\n",
    "mixed \u00a0no-break\u00a0spaces and \u2003em\u2003spaces and \u3000ideographic\u3000space",
    "thin\u2009space, hair\u200aspace, figure\u2007space, narrow\u202fno-break",
    "vertical\x0btab and form\x0cfeed",
    "\u2581already\u2581has\u2581metaspace \u2581\u2581 \u2581",
    "tabs\tand  spaces\t \t mixed  \t  up",
    "\n\n\n\nfour newlines first",
    "    ",
    "x\n \n \n \ny",
    "trailing tab\t",
    "a" + " " * 17 + "\n" + " " * 5 + "b",
]

# ---------------------------------------------------------------------------
# Numbers.
DIGITS = [
    "0",
    "7",
    "42",
    "123",
    "1234",
    "12345",
    "123456789012345678901234567890",
    "3.14159265358979323846",
    "-0.000001 +1e-9 6.022e23 1E10 0x1F 0b1011 0o777",
    "1,234,567.89 and 1.234.567,89 and 1 234 567",
    "2024-02-29 23:59:59 +01:00, 29/02/2024, 02/29/24, 2024年2月29日",
    "Call 555-0100 or +1 (555) 010-0199 ext. 42",
    "v1.2.3-rc.4+build.567 and 10.0.0.1 and ::1",
    "$9.99 \u20ac12,50 \u00a3100 \u00a5500 \u20b9199 1/2 3\u00bd \u00bc",
    "1st 2nd 3rd 4th 21st 100th",
    "\u0661\u0662\u0663 \u0967\u0968\u0969 \uff11\uff12\uff13 \u2460\u2461\u2462 \u00b2\u00b3 \u2155",
    "99999999999999999999999999999999999999999999999999",
    "10%, 2.5x, 100km/h, 37\u00b0C, 5'11\", 3\u00d74=12, 7\u00f72",
]

# ---------------------------------------------------------------------------
# Punctuation runs.
PUNCT = [
    "!!!???...,,,;;;:::",
    "Wait... what?! Really?!?! No way!!!",
    "----------------------------------------",
    "========",
    "************************",
    "~~~///\\\\\\|||",
    "((([[[{{{<<<>>>}}}]]])))",
    "@#$%^&*()_+-=[]{}|;':\",./<>?`~",
    "\u2014 em dash \u2013 en dash \u2026 ellipsis \u00ab guillemets \u00bb \u201equotes\u201c \u2018single\u2019",
    "\u00bfQu\u00e9? \u00a1Ol\u00e9! \u061f \u3002\u3001\uff01\uff1f \u300c\u300d\u300e\u300f",
    "_private __dunder__ ___triple___",
    "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
]

# ---------------------------------------------------------------------------
# URLs, e-mail addresses, paths.
URLS = [
    "https://example.com/path/to/page?query=1&lang=en#section-2",
    "Visit http://www.example.org/ or ftp://files.example.net/pub/file.tar.gz today.",
    "mailto:someone@example.com, first.last+tag@sub.example.co.uk",
    "/usr/local/bin/gotpu --config=/etc/gotpu/config.yaml ~/.cache/gotpu",
    "C:\\Users\\Public\\Documents\\report_2024 (final).docx",
    "https://example.com/%E4%BD%A0%E5%A5%BD?q=caf%C3%A9&x=%20",
    "git@github.com:owner/repo.git ssh://user@host:2222/path",
    "https://xn--bcher-kva.example/b\u00fccher and https://\u4f8b\u3048.jp/\u30d1\u30b9",
    "www.example.com/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p",
    "[link](https://example.com/docs) <https://example.com/> ![img](./img/a.png)",
]

# ---------------------------------------------------------------------------
# European languages.
EUROPEAN = [
    "Gr\u00fc\u00dfe aus M\u00fcnchen! Die Stra\u00dfe ist sch\u00f6n, aber der Fu\u00dfweg ist \u00fcberf\u00fcllt.",
    "\u00c4rger \u00fcber \u00d6lpreise? \u00dcbermorgen wird es besser, sagt der Gro\u00dfvater.",
    "Donaudampfschifffahrtsgesellschaftskapit\u00e4nsm\u00fctze",
    "STRASSE Stra\u00dfe \u1e9e GROSS gro\u00df Ma\u00dfe Masse",
    "Le c\u0153ur a ses raisons que la raison ne conna\u00eet point, dit-on \u00e0 l'\u00e9cole.",
    "\u00c0 bient\u00f4t ! \u00c7a va tr\u00e8s bien, merci. O\u00f9 est la biblioth\u00e8que ?",
    "\u00e9l\u00e8ve, na\u00efve, No\u00ebl, ao\u00fbt, h\u00f4tel, fran\u00e7ais, \u00c9COLE, \u00caTRE",
    "\u00bfD\u00f3nde est\u00e1 la estaci\u00f3n? El ni\u00f1o comi\u00f3 pi\u00f1a con ping\u00fcino.",
    "A\u00e7\u00e3o, cora\u00e7\u00e3o, p\u00e3o e ma\u00e7\u00e3: o portugu\u00eas tem til e cedilha.",
    "Perch\u00e9 cos\u00ec? Citt\u00e0, universit\u00e0 e caff\u00e8 sono parole accentate.",
    "Za\u017c\u00f3\u0142\u0107 g\u0119\u015bl\u0105 ja\u017a\u0144 \u2014 to polskie zdanie ma wszystkie ogonki.",
    "\u0130stanbul'da \u0131l\u0131k bir g\u00fcn; \u015fehir \u00e7ok g\u00fczel, \u00f6\u011fle yeme\u011fi ho\u015f.",
    "Ti\u1ebfng Vi\u1ec7t c\u00f3 nhi\u1ec1u d\u1ea5u: \u0111\u1eb9p, ng\u01b0\u1eddi, thu\u1ed9c, h\u1ecdc.",
    "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac: \u03ba\u03b1\u03bb\u03b7\u03bc\u03ad\u03c1\u03b1, \u03c4\u03b9 \u03ba\u03ac\u03bd\u03b5\u03b9\u03c2; \u03a3\u03af\u03c3\u03c5\u03c6\u03bf\u03c2 \u03c3\u03c4\u03bf \u03c4\u03ad\u03bb\u03bf\u03c2 \u03c2.",
    "\u010cesk\u00fd \u0159\u00edzek, \u0161\u0165astn\u00fd \u017eivot, \u00e1\u00e9\u00ed\u00f3\u00fa\u016f\u00fd.",
    "Sm\u00f8rrebr\u00f8d p\u00e5 \u00c6r\u00f8, bl\u00e5b\u00e6rsyltet\u00f8j og \u00e5l.",
    "Hyv\u00e4\u00e4 p\u00e4iv\u00e4\u00e4! \u00c4iti ja is\u00e4 ovat k\u00e4rsiv\u00e4llisi\u00e4.",
    "Nederlands: ge\u00efnteresseerd, co\u00f6rdinatie, IJsselmeer, rijstijl.",
    "Magyar: \u00e1rv\u00edzt\u0171r\u0151 t\u00fck\u00f6rf\u00far\u00f3g\u00e9p \u0150\u0170",
    "Rom\u00e2n\u0103: \u0219i \u021bar\u0103, \u00een\u021belept, \u00e2ncep\u0103tor.",
]

# ---------------------------------------------------------------------------
# Cyrillic, Arabic, Hebrew, Indic, Thai and friends.
WORLD = [
    "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440! \u042d\u0442\u043e \u043f\u0440\u043e\u0432\u0435\u0440\u043a\u0430 \u0442\u043e\u043a\u0435\u043d\u0438\u0437\u0430\u0442\u043e\u0440\u0430 \u043d\u0430 \u0440\u0443\u0441\u0441\u043a\u043e\u043c \u044f\u0437\u044b\u043a\u0435.",
    "\u0421\u044a\u0435\u0448\u044c \u0436\u0435 \u0435\u0449\u0451 \u044d\u0442\u0438\u0445 \u043c\u044f\u0433\u043a\u0438\u0445 \u0431\u0443\u043b\u043e\u043a, \u0434\u0430 \u0432\u044b\u043f\u0435\u0439 \u0447\u0430\u044e. \u0401\u0416\u0418\u041a \u0401\u041b\u041a\u0410.",
    "\u0423\u043a\u0440\u0430\u0457\u043d\u0441\u044c\u043a\u0430: \u0457\u0436\u0430\u043a, \u0491\u0430\u043d\u043e\u043a, \u0454\u043d\u043e\u0442.",
    "\u0411\u044a\u043b\u0433\u0430\u0440\u0441\u043a\u0438 \u0438 \u0441\u0440\u043f\u0441\u043a\u0438: \u0452\u0430\u043a, \u045b\u0443\u0442\u0430\u045a\u0435, \u0459\u0443\u0431\u0430\u0432.",
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645! \u0647\u0630\u0627 \u0627\u062e\u062a\u0628\u0627\u0631 \u0644\u0644\u0646\u0635 \u0627\u0644\u0639\u0631\u0628\u064a.",
    "\u0627\u0644\u0643\u0650\u062a\u064e\u0627\u0628\u064f \u0639\u064e\u0644\u064e\u0649 \u0627\u0644\u0637\u0651\u064e\u0627\u0648\u0650\u0644\u064e\u0629\u0650 (with harakat)",
    "Mixed RTL: \u0627\u0644\u0633\u0639\u0631 99 \u062f\u0648\u0644\u0627\u0631 and back to English.",
    "\u0641\u0627\u0631\u0633\u06cc: \u0633\u0644\u0627\u0645\u060c \u062d\u0627\u0644 \u0634\u0645\u0627 \u0686\u0637\u0648\u0631 \u0627\u0633\u062a\u061f",
    "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd! \u05d6\u05d4\u05d5 \u05de\u05d1\u05d7\u05df \u05e7\u05e6\u05e8.",
    "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e! \u092f\u0939 \u090f\u0915 \u092a\u0930\u0940\u0915\u094d\u0937\u0923 \u0935\u093e\u0915\u094d\u092f \u0939\u0948\u0964",
    "\u0915\u094d\u0937\u0924\u094d\u0930\u093f\u092f \u0936\u094d\u0930\u0940 \u0926\u094d\u0935\u093e\u0930 \u0939\u093f\u0928\u094d\u0926\u0940 \u0915\u0940 \u0938\u0902\u092f\u0941\u0915\u094d\u0924\u093e\u0915\u094d\u0937\u0930",
    "\u09ac\u09be\u0982\u09b2\u09be: \u0986\u09ae\u09bf \u09ad\u09be\u09a4 \u0996\u09be\u0987\u0964 \u0ba4\u0bae\u0bbf\u0bb4\u0bcd: \u0bb5\u0ba3\u0b95\u0bcd\u0b95\u0bae\u0bcd",
    "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e04\u0e23\u0e31\u0e1a \u0e27\u0e31\u0e19\u0e19\u0e35\u0e49\u0e2d\u0e32\u0e01\u0e32\u0e28\u0e14\u0e35\u0e21\u0e32\u0e01",
    "\u10e5\u10d0\u10e0\u10d7\u10e3\u10da\u10d8 \u10d3\u10d0 \u0540\u0561\u0575\u0565\u0580\u0565\u0576 \u0561\u0575\u0562\u0578\u0582\u0562\u0565\u0576",
    "\u12a0\u121b\u122d\u129b \u134a\u12f0\u120d \u2014 \u1210\u1208\u1218 \u1230\u120b\u121d",
    "Kiswahili: Habari za asubuhi? Nzuri sana, asante.",
]

# ---------------------------------------------------------------------------
# Chinese, Japanese, Korean.
CJK = [
    "\u4f60\u597d\uff0c\u4e16\u754c\uff01\u4eca\u5929\u5929\u6c14\u5f88\u597d\u3002",
    "\u6211\u4eec\u5728\u5b9e\u9a8c\u5ba4\u91cc\u8bad\u7ec3\u4e00\u4e2a\u5c0f\u6a21\u578b\uff0c\u5b83\u6bcf\u79d2\u5904\u7406\u4e00\u4e07\u4e2a\u8bcd\u5143\u3002",
    "\u7e41\u9ad4\u4e2d\u6587\uff1a\u9019\u500b\u5206\u8a5e\u5668\u61c9\u8a72\u80fd\u8655\u7406\u50b3\u7d71\u5b57\u3002",
    "\u4e2d\u6587English\u6df7\u5408mixed\u6587\u672c123\u6570\u5b57",
    "\u300a\u7ea2\u697c\u68a6\u300b\u548c\u300c\u5f15\u53f7\u300d\u3001\u987f\u53f7\uff1b\u5206\u53f7\uff1a\u5192\u53f7\u2026\u2026",
    "\u3053\u3093\u306b\u3061\u306f\u3001\u4e16\u754c\uff01\u4eca\u65e5\u306f\u3044\u3044\u5929\u6c17\u3067\u3059\u306d\u3002",
    "\u30ab\u30bf\u30ab\u30ca\u3068\u3072\u3089\u304c\u306a\u3068\u6f22\u5b57\u3092\u6df7\u305c\u3066\u66f8\u304d\u307e\u3059\u3002\u30b3\u30f3\u30d4\u30e5\u30fc\u30bf\u30fc\u306f\u901f\u3044\u3002",
    "\u6771\u4eac\u90fd\u6e0b\u8c37\u533a\u3067\u30e9\u30fc\u30e1\u30f3\u3092\u98df\u3079\u307e\u3057\u305f\u3002\u3068\u3066\u3082\u7f8e\u5473\u3057\u304b\u3063\u305f\u3067\u3059\uff01",
    "\uff8a\uff9d\uff76\uff78\uff76\uff80\uff76\uff85 \u534a\u89d2\u30ab\u30ca \uff21\uff22\uff23 \u5168\u89d2\u82f1\u5b57 \uff11\uff12\uff13",
    "\u30fc\u301c\u30fb\u3005\u3006\u3007 \u3041\u3043\u3045\u3047\u3049 \u30f4\u30f5\u30f6",
    "\uc548\ub155\ud558\uc138\uc694, \uc138\uacc4! \ud55c\uad6d\uc5b4 \ud1a0\ud06c\ub098\uc774\uc800\ub97c \uc2dc\ud5d8\ud569\ub2c8\ub2e4.",
    "\ub300\ud55c\ubbfc\uad6d\uc758 \uc218\ub3c4\ub294 \uc11c\uc6b8\uc774\uace0, \ubd80\uc0b0\uc740 \ud56d\uad6c \ub3c4\uc2dc\uc785\ub2c8\ub2e4.",
    "\u1100\u1161\u11a8 (conjoining jamo) vs \uac01 (precomposed)",
    "\u3131\u3134\u3137\u3139 \u314f\u3151\u3153 compatibility jamo",
    "\U0001f1ef\U0001f1f5\u65e5\u672c \U0001f1f0\U0001f1f7\ud55c\uad6d \U0001f1e8\U0001f1f3\u4e2d\u56fd",
    "\u9f98\u9f49\u9f7e \u5b57 \U0002000b \U0002a63a (rare and astral CJK ideographs)",
    "\u6f22\u5b57\u304b\u306a\u4ea4\u3058\u308a\u6587\u3068\u3001\u30ed\u30fc\u30de\u5b57 romaji \u3092\u4f75\u7528\u3057\u305f\u6587\u3002",
    "\u4e00\u4e8c\u4e09\u56db\u4e94\u516d\u4e03\u516b\u4e5d\u5341\u767e\u5343\u4e07\u5104",
]

# ---------------------------------------------------------------------------
# Emoji: simple, ZWJ sequences, skin tones, flags, keycaps, variation selectors.
EMOJI = [
    "\U0001f600\U0001f603\U0001f604\U0001f601",
    "I love pizza \U0001f355 and tacos \U0001f32e!",
    "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466 family",
    "\U0001f469\u200d\U0001f4bb \U0001f468\u200d\U0001f52c \U0001f9d1\u200d\U0001f680 professions",
    "\U0001f44b\U0001f3fb\U0001f44b\U0001f3fc\U0001f44b\U0001f3fd\U0001f44b\U0001f3fe\U0001f44b\U0001f3ff skin tones",
    "\U0001f469\U0001f3fd\u200d\U0001f91d\u200d\U0001f468\U0001f3ff couple with tones",
    "\U0001f1fa\U0001f1f8 \U0001f1e9\U0001f1ea \U0001f1eb\U0001f1f7 \U0001f1ef\U0001f1f5 \U0001f1e7\U0001f1f7 flags",
    "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f subdivision flag",
    "\U0001f3f3\ufe0f\u200d\U0001f308 \U0001f3f4\u200d\u2620\ufe0f",
    "1\ufe0f\u20e3 2\ufe0f\u20e3 #\ufe0f\u20e3 *\ufe0f\u20e3 keycaps",
    "\u2764\ufe0f \u2764 \u2665\ufe0f \u263a\ufe0f \u263a text vs emoji presentation",
    "\u2764\ufe0f\u200d\U0001f525 \u2764\ufe0f\u200d\U0001fa79 hearts on fire and mending",
    "\U0001f44d\U0001f44d\U0001f44d\U0001f44d\U0001f44d\U0001f44d\U0001f44d\U0001f44d",
    "Great job!!! \U0001f389\U0001f389\U0001f389 \U0001f680 to the moon",
    "\U0001f9ea\U0001f9ec\U0001f52d\U0001f9ee\U0001f5a5\ufe0f\u2328\ufe0f newer emoji",
    "emoji\U0001f600glued\U0001f600to\U0001f600words",
]

# ---------------------------------------------------------------------------
# Special tokens of the vocabularies written inside ordinary text.
SPECIAL = [
    "<|endoftext|>",
    "Hello<|endoftext|>world",
    "first document<|endoftext|>second document<|endoftext|>",
    "<|endoftext|><|endoftext|><|endoftext|>",
    " <|endoftext|> spaced ",
    "<|endoftext|  <|endoftext  <endoftext|>  <|ENDOFTEXT|>  <<|endoftext|>>",
    "<s>Hello</s> <s> [INST] question [/INST] answer </s>",
    "<unk> <s></s> <s><s>",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi there!<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
    "<|reserved_special_token_5|> <|reserved_special_token_250|> <|end_of_text|>",
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
    "<think>\nreasoning here\n</think>\n\n<tool_call>{\"name\": \"f\"}</tool_call> <|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>",
    "<bos><start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n4<end_of_turn>\n<eos>",
    "<pad><mask><unk>[multimodal]<start_of_image><unused0>",
    "[CLS] question [SEP] context [SEP] [MASK] [PAD] [UNK]",
    "[cls] lower case [sep] [mask]",
    "The [MASK] sat on the mat.",
    "<|endofprompt|> and <|endoftext|> in gpt-4o text",
    "<\uff5cbegin\u2581of\u2581sentence\uff5c><\uff5cUser\uff5c>hello<\uff5cAssistant\uff5c>hi<\uff5cend\u2581of\u2581sentence\uff5c>",
    "<|EOT|> <\uff5cfim\u2581begin\uff5c>x<\uff5cfim\u2581hole\uff5c>y<\uff5cfim\u2581end\uff5c>",
    "text<|im_end|>text<|im_start|>text",
    "<|endoftext|>\n\n<|endoftext|>\n",
]

# ---------------------------------------------------------------------------
# Unicode edge cases: combining marks, normalization forms, invisible and
# control characters, unusual code points.
NFC_SAMPLES = [
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9 Pok\u00e9mon \u00c5ngstr\u00f6m",
    "\uac00\ub098\ub2e4 \u1e9b\u0323 \u00c5 \u212b \u2126 \u03a9",
    "\u1ec7 \u01d7 \u1e69 \u0161\u0323",
]
UNICODE = [
    "e\u0301 vs \u00e9 (combining acute vs precomposed)",
    "a\u0300\u0301\u0302\u0303\u0304\u0305\u0306\u0307\u0308 stacked combining marks",
    "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f\u031e\u0320\u034dA\u0334\u0335\u031c\u0330\u0354L\u0368\u0357\u0367\u0369\u033e\u034c\u0364G\u0325\u034d\u0325O",
    "\u0301starts with a combining mark",
    "\ufb01 \ufb02 \ufb00 \u2160 \u2163 \u33a1 \u2122 \u00b5 \u2103 compatibility characters",
    "\uff28\uff45\uff4c\uff4c\uff4f\u3000\uff37\uff4f\uff52\uff4c\uff44 fullwidth",
    "\U0001d400\U0001d401\U0001d402 \U0001d552\U0001d553 \U0001d7d8\U0001d7d9 mathematical alphanumerics",
    "zero\u200bwidth\u200bspace, non\u200cjoiner, joiner\u200d, word\u2060joiner",
    "\ufeffbyte order mark at start",
    "soft\u00adhyphen and left\u200eto\u200fright marks \u202aembedding\u202c \u2066isolate\u2069",
    "null\x00char and bell\x07 and escape\x1b[31mred\x1b[0m",
    "delete\x7f and C1 \x80\x85\x9f controls",
    "line\u2028separator and paragraph\u2029separator",
    "\ufffd replacement character \ufffd\ufffd",
    "private use \ue000\uf8ff \U000f0000 and noncharacters \ufdd0 \ufffe",
    "\U0001f600 astral \U00010348 gothic \U0001f9ff \U00020000 beyond the BMP",
    "variation selectors: \u845b\U000e0100 \u845b\U000e0101 \u2702\ufe0e \u2702\ufe0f",
    "Unbalanced ((brackets] and \"quotes and 'apostrophes and <tags",
    "\u00bb\u00ab reversed guillemets \u201d\u201c and \u3011\u3010 brackets",
    "Turkish \u0130 i\u0307 \u0131 I, German \u1e9e, Greek \u03c3\u03c2\u03a3, Armenian \u0587",
    "\u00c5\u0041\u030a\u212b three ways to write A with ring",
    "\u0e01\u0e34\u0e4a \u0915\u093f \u0627\u064e graphemes with combining vowel signs",
    "\u2028",
    "\x00",
    "\u200b",
    "\ufeff",
    "\u0301",
    "a\u0000b\u0000c",
    "tab\tnewline\ncarriage\rall",
    "\U0001f1e6\U0001f1e6\U0001f1e6 odd number of regional indicators",
    "\u200d\u200d\u200d dangling joiners \U0001f468\u200d",
    "\U0001f3fb skin tone modifier alone",
]

# ---------------------------------------------------------------------------
# Tiny inputs.
TINY = [
    "",
    "a",
    "A",
    ".",
    "'",
    "\u00e9",
    "\u4e2d",
    "\U0001f600",
    "ab",
    "I",
    " a",
    "a ",
    "  a",
    " .",
    "\n\na",
]

# ---------------------------------------------------------------------------
# Mixed-script and chat-like samples.
MIXED = [
    "User: Translate 'good morning' into German, French and Japanese.\nAssistant: Guten Morgen; bonjour; \u304a\u306f\u3088\u3046\u3054\u3056\u3044\u307e\u3059.",
    "The model scored 87.5% on MMLU (5-shot) \u2014 up from 79.2% \u2014 while using 2\u00d7 fewer FLOPs.",
    "Temperature: 22\u00b0C / 71.6\u00b0F \u2600\ufe0f, humidity 40 %, wind 12 km/h \u2192 NE.",
    "\u03bb-calculus: (\u03bbx. x x)(\u03bbx. x x) \u2192 \u22a5; \u2200x \u2208 \u2115, x \u2265 0; \u2211\u1d62 a\u1d62 \u2264 \u221e",
    "Price list: apples \u20ac1.20/kg, p\u00e2t\u00e9 \u00a35, \u62c9\u9762 \u00a5980, \u0442\u043e\u0440\u0442 300\u20bd",
    "log line: 2024-05-01T12:34:56.789Z INFO  [worker-3] processed 1024 items in 0.42s (2438.1 items/s)",
    "| col1 | col2 |\n|------|------|\n| \u00e4\u00f6\u00fc | \u4e2d\u6587 |\n| \U0001f600 | 3.14 |",
    "KEY=value\nPATH=/usr/bin:/bin\nEMPTY=\n# comment\n",
    "\u201cSmart quotes\u201d, \u2018single ones\u2019, and \u201e\u00e4ußere\u201c German ones.",
    "Ask: \u00bfC\u00f3mo se dice \u2018tokenizer\u2019 en espa\u00f1ol? \u2014 \u00abtokenizador\u00bb, creo.",
]


def _long_samples(prose, code, world, cjk, emoji):
    """Builds a few ~5k-character samples from the short ones, deterministically."""
    def fill(parts, sep, target):
        out, i = [], 0
        while sum(len(p) + len(sep) for p in out) < target:
            out.append(parts[i % len(parts)])
            i += 1
        return sep.join(out)

    essay = fill(prose[6:16], " ", 5000)
    source = fill(code, "\n\n", 5000)
    multilingual = fill([w for pair in zip(world, cjk) for w in pair], "\n", 5000)
    emojis = fill(emoji, " ", 5000)
    spaces = fill(["word", " " * 13, "\t\t", "\n\n\n", " \n", "x" * 30], "", 5000)
    return [
        ("long-001", "long", essay),
        ("long-002", "long", source),
        ("long-003", "long", multilingual),
        ("long-004", "long", emojis),
        ("long-005", "long", spaces),
        ("long-006", "long", "a" * 5000),
    ]


def build():
    """Returns the corpus as a list of (id, cat, text)."""
    samples = []

    def add(prefix, cat, texts):
        for i, t in enumerate(texts, 1):
            samples.append((f"{prefix}-{i:03d}", cat, t))

    add("en", "english", ENGLISH)
    add("contr", "contractions", CONTRACTIONS)
    add("code", "code", CODE)
    add("ws", "whitespace", WHITESPACE)
    add("num", "digits", DIGITS)
    add("punct", "punctuation", PUNCT)
    add("url", "urls", URLS)
    add("eu", "european", EUROPEAN)
    add("world", "world", WORLD)
    add("cjk", "cjk", CJK)
    add("emoji", "emoji", EMOJI)
    add("special", "special_tokens", SPECIAL)
    # The same text in NFC, NFD, NFKC and NFKD: normalizers must agree.
    forms = []
    for t in NFC_SAMPLES + [EUROPEAN[0], EUROPEAN[4], CJK[11], UNICODE[4]]:
        seen = set()
        for form in ("NFC", "NFD", "NFKC", "NFKD"):
            f = unicodedata.normalize(form, t)
            if f not in seen:
                seen.add(f)
                forms.append(f)
    add("norm", "normalization", forms)
    add("uni", "unicode", UNICODE)
    add("tiny", "tiny", TINY)
    add("mixed", "mixed", MIXED)
    samples.extend(_long_samples(ENGLISH, CODE, WORLD, CJK, EMOJI))

    ids = [s[0] for s in samples]
    assert len(ids) == len(set(ids)), "duplicate ids"
    for sid, _, text in samples:
        # Lone surrogates cannot be written as UTF-8; keep the corpus valid.
        text.encode("utf-8")
    return samples


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(root, "testdata", "tokenizers", "corpus.jsonl"))
    args = ap.parse_args(argv)
    lines = []
    for sid, cat, text in build():
        lines.append(json.dumps({"id": sid, "cat": cat, "text": text}, ensure_ascii=False))
    write_atomic(args.out, ("\n".join(lines) + "\n").encode("utf-8"))
    print(f"wrote {len(lines)} samples to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
