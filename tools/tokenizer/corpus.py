"""Deterministic corpus of varied strings for the tokenizer golden fixtures and the encode bench.

Categories: source code in several languages, natural language in many scripts (CJK, Indic and Thai with
combining marks, RTL), emoji with ZWJ/skin tones/flags/variation selectors, decomposed and compatibility forms
(NFC work), whitespace runs, digits in several scripts, contractions, special-token look-alikes, and random
assigned code points. Every string is valid Unicode (no lone surrogates).
"""
import random
import unicodedata

CODE = [
    "def fib(n: int) -> int:\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
    "#include <vector>\n\nint main() {\n\tstd::vector<int> v{1, 2, 3};\n\tfor (auto& x : v) x *= 2;\n\treturn 0;\n}\n",
    "fn main() {\n    let s: String = \"héllo\".to_string();\n    println!(\"{s:?} {}\", s.len());\n}\n",
    "const f = async (url) => {\n  const r = await fetch(url);\n  return r.ok ? r.json() : null;\n};\n",
    "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"こんにちは\", 42)\n}\n",
    "SELECT id, name FROM users WHERE age >= 18 AND name LIKE '%ann%' ORDER BY id DESC;\n",
    "<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\"><title>Test</title></head>\n<body>\n  <p class=\"x\">Hi &amp; bye</p>\n</body>\n</html>\n",
    "#!/bin/bash\nset -euo pipefail\nfor f in *.txt; do\n  echo \"$f\" | tr 'a-z' 'A-Z' >> out.log 2>&1\ndone\n",
    "{\n  \"name\": \"ninfer\",\n  \"version\": \"0.1.0\",\n  \"deps\": [\"fmt\", \"spdlog\"],\n  \"ok\": true,\n  \"pi\": 3.14159\n}\n",
    "public class Main {\n    public static void main(String[] args) {\n        System.out.println(\"Hello, World!\");\n    }\n}\n",
    "x = [i**2 for i in range(10) if i % 3 != 0]  # squares\nprint(f'{x!r:>20}')\r\n",
    "template <typename T>\nconcept Addable = requires(T a, T b) { a + b; };\n// NOLINT(readability)\n",
    "\\begin{equation}\n  E = mc^2 \\quad \\forall x \\in \\mathbb{R}\n\\end{equation}\n",
    "    \n\n\t\t// TODO: fix   this\n\n\n\n    }\n  }\n}",
    "diff --git a/x.py b/x.py\n@@ -1,3 +1,4 @@\n-import os\n+import os, sys\n+\n def f():\n",
]

TEXT = [
    "The quick brown fox jumps over the lazy dog.", "I'm sure it's fine; they've said we'll see, won't they?",
    "IT'S LOUD AND I'LL SHOUT, YOU'D KNOW", "Don’t use curly apostrophes’s", "Grüße aus Köln, Straße und Maß.",
    "Ça va? Où est la bibliothèque? Élève, naïve, cœur.", "¿Dónde está el baño? ¡Olé! Año, niño.",
    "Съешь же ещё этих мягких французских булок, да выпей чаю.", "Ξεσκεπάζω την ψυχοφθόρα βδελυγμία.",
    "نص عربي مع أرقام ١٢٣٤٥ وعلامات التشكيل: مَرْحَبًا", "שלום עולם! זה טקסט בעברית.",
    "नमस्ते दुनिया, यह हिन्दी पाठ है। क्षत्रिय", "ภาษาไทยมีวรรณยุกต์ เช่น ก่ ก้ ก๊ ก๋", "Tiếng Việt có dấu: Đường phố Hà Nội",
    "我们今天去北京天安门广场，然后吃烤鸭。人力资源部门在三楼。", "日本語の文章です。カタカナとひらがな、漢字が混在しています。",
    "한국어 문장입니다. 안녕하세요, 반갑습니다!", "ḍḥṣṭẓ ā ī ū ṛ ṝ ḷ ṃ ḥ ñ", "Հայերեն տեքստ, ქართული ტექსტი",
    "ᚠᛇᚻ᛫ᛒᛦᚦ᛫ᚠᚱᚩᚠᚢᚱ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕞𝕒𝕥𝕙 𝒮𝒸𝓇𝒾𝓅𝓉", "ﬁﬂ ﬀ ﬃ Ⅻ ① ² ³ ½ ㎏ ㍿", "ｆｕｌｌｗｉｄｔｈ　ＡＢＣ　１２３",
    "Mixed: hello世界123مرحبا🙂abc", "e\u0301 a\u0300 o\u0308 n\u0303 u\u0308\u0304 A\u030a \u212b \u2126",
    "\u1100\u1161\u11a8 \u1112\u1161\u11ab\u1100\u1173\u11af", "\uf900\uf901\uf9ff \u2000\u2001 \u0958\u0959",
    "q\u0307\u0323 s\u0323\u0307 d\u0307\u0323 \u1e0b\u0323", "\u0915\u093c \u0928\u093c\u0924 \u09a1\u09bc",
]

EMOJI = ["🙂", "😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇩🇪", "🇯🇵", "❤️", "☕️", "🧑🏿‍💻", "👩‍❤️‍💋‍👨", "1️⃣", "#️⃣",
         "🫠", "🦀", "🐍", "✅", "⚠️", "🔥", "🎉", "\u200d", "\ufe0f", "\u200b", "\u2060"]

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "</tool_call>",
           "<tool_response>", "</tool_response>", "<|fim_prefix|>", "<|vision_start|>", "<|image_pad|>",
           "<tts_pad>", "<|audio_pad|>", "<|im_start", "im_start|>", "<|im_start|", "< think>", "<think >",
           "<|IM_START|>", "<|endoftext|><|endoftext|>", "<<think>>", "</think></think>", "<|box_start|>x<|box_end|>"]

WS = [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r", " \n", "\n ", "\u00a0", "\u3000", "\u2028",
      "\u2029", "\u000b", "\u000c", "\u0085", "\u1680", "\u2009", "\u202f", "\u205f", " \t \n"]

DIGITS = ["0", "7", "42", "1234567890", "3.14159", "-1e-9", "0x7fff", "1,000,000", "٣٤٥", "۱۲۳", "०१२३",
          "１２３", "²³", "Ⅻ", "①②", "½", "𝟙𝟚𝟛", "๑๒๓", "12:30:45", "2026-12-02"]

CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve", "'M", "'LL", "'D", "'",
                "''", "'x", "’s"]


def assigned_codepoints():
    out = []
    for cp in range(0x20, 0x32000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        cat = unicodedata.category(chr(cp))
        if cat in ("Cn", "Cs", "Co"):
            continue
        out.append(cp)
    return out


def make_corpus(n=6000, seed=1234):
    rng = random.Random(seed)
    cps = assigned_codepoints()
    pools = [CODE, TEXT, EMOJI, SPECIAL, WS, DIGITS, CONTRACTIONS]
    out = []
    # fixed pieces first, on their own
    for pool in pools:
        out.extend(pool)
    out.extend(["", " ", "a", "\n", "\t", "'", "''s", "\r\n\r\n", " " * 64, "\t" * 17, "\n" * 33, " \n" * 9,
                "it'\u017f", "'\u017f x'\u017F", "x\u0300\U00011d44", "\U00011938", "\U0001d2c0\U0001d2c1 1",
                "a\u07fd\u0301", "\u0915\u094d\u200d\u0937", "a" * 300, "ab" * 200, "😀" * 50, "中" * 400, "1" * 100, "!!!???..." * 10, "x " * 200,
                "    " * 50 + "x", "\u00e9" * 3 + "e\u0301" * 3, "\u0301" * 5, "a\u0301\u0301\u0302", " \u0301x"])
    while len(out) < n:
        kind = rng.random()
        if kind < 0.12:  # whole code snippet, sometimes sliced at a random point
            s = rng.choice(CODE)
            if rng.random() < 0.5:
                i, j = sorted(rng.randrange(len(s) + 1) for _ in range(2))
                s = s[i:j]
        elif kind < 0.22:  # random assigned code points, some runs
            s = "".join(chr(rng.choice(cps)) for _ in range(rng.randint(1, 24)))
        elif kind < 0.30:  # random BMP-biased code points mixed with ASCII and whitespace
            parts = []
            for _ in range(rng.randint(1, 20)):
                r = rng.random()
                if r < 0.4:
                    parts.append(chr(rng.randint(0x20, 0x7e)))
                elif r < 0.6:
                    parts.append(rng.choice(WS))
                else:
                    parts.append(chr(rng.choice(cps)))
            s = "".join(parts)
        else:  # a mix of pieces from all pools
            parts = []
            for _ in range(rng.randint(1, 12)):
                pool = rng.choices(pools, weights=[2, 6, 2, 1, 3, 2, 1])[0]
                piece = rng.choice(pool)
                if pool is TEXT and rng.random() < 0.5:
                    words = piece.split(" ")
                    piece = " ".join(rng.sample(words, k=max(1, len(words) // 2)))
                parts.append(piece)
                if rng.random() < 0.5:
                    parts.append(rng.choice(WS) if rng.random() < 0.6 else " ")
            s = "".join(parts)
        out.append(s)
    return out[:max(n, len(out))]
