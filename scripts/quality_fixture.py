#!/usr/bin/env python3
"""Writes the quality scorers' reference fixture: crates/goodput-core/tests/fixtures/quality/.

Run once, in a throwaway virtual environment outside the repository:

    python3 -m venv /tmp/qvenv
    /tmp/qvenv/bin/pip install sacrebleu==2.6.0 rouge-score==0.1.2
    /tmp/qvenv/bin/python scripts/quality_fixture.py crates/goodput-core/tests/fixtures/quality

It draws a few hundred hypothesis/reference pairs from a fixed seed (empty
strings, Unicode, HTML entities, odd whitespace, very long texts, several
references) and writes, for each, what the reference packages compute:

  pairs.jsonl   one line per pair: {"hyp", "refs", "exact", "number", "rouge_l",
                "chrf", "bleu_stats", "chrf_stats"}
  corpus.jsonl  one line per corpus (a run of consecutive pairs, and all of them):
                {"from", "to", "bleu", "chrf"}

`rouge_l` is rouge-score's RougeScorer(['rougeL']) (no stemmer, its default
tokenizer) F1, `score_multi` over the references; `chrf` sacreBLEU's
sentence chrF; `bleu_stats` and `chrf_stats` sacreBLEU's per-segment
sufficient statistics (BLEU(): [hyp_len, ref_len, correct 1..4, total 1..4];
CHRF(): [hyp, ref, match] for each character order 1..6); corpus `bleu` and
`chrf` sacreBLEU's corpus_score with its defaults (13a, exp smoothing; chrF
β=2, character order 6, no word n-grams). `exact` is the official SQuAD v1.1
evaluation's normalised exact match (its normalize_answer, copied below),
1 when any reference matches; `number` the GSM8K-style rule goodput defines
(docs/metrics.md), written here a second time independently of the Rust one.
"""

import json
import math
import random
import re
import string
import sys
from pathlib import Path

import rouge_score
import sacrebleu
from rouge_score import rouge_scorer
from sacrebleu.metrics import BLEU, CHRF

SEED = 20
N_PAIRS = 320


# --- SQuAD v1.1 evaluate-v1.1.py, verbatim -------------------------------------
def normalize_answer(s):
    """Lower text and remove punctuation, articles and extra whitespace."""

    def remove_articles(text):
        return re.sub(r'\b(a|an|the)\b', ' ', text)

    def white_space_fix(text):
        return ' '.join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return ''.join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def exact_match(hyp, refs):
    return float(any(normalize_answer(hyp) == normalize_answer(r) for r in refs))


# --- the number rule (docs/metrics.md) ------------------------------------------
NUMBER_RE = re.compile(r'-?[0-9][0-9,]*(?:\.[0-9]+)?')


def last_number(text):
    found = NUMBER_RE.findall(text)
    if not found:
        return None
    n = found[-1].replace(',', '')
    try:
        return float(n)
    except ValueError:
        return None


def reference_number(ref):
    if '####' in ref:
        ref = ref.rsplit('####', 1)[1]
    return last_number(ref)


def number_match(hyp, refs):
    # Not applied (0 here) where a reference has no number: the answer may
    # be said in words ("carbon dioxide" beside "CO2").
    wanted = [reference_number(r) for r in refs]
    if not wanted or any(w is None for w in wanted):
        return 0.0
    h = last_number(hyp)
    if h is None:
        return 0.0
    return float(any(w == h for w in wanted))


# --- the pairs -------------------------------------------------------------------
WORDS = (
    "the a an of to and in is was for on that with as by it at from this be are "
    "cat dog house model answer token latency throughput server request batch "
    "quick brown fox jumps over lazy Paris France capital river mountain"
).split()
UNICODE = ["café", "naïve", "Straße", "ΟΔΥΣΣΕΥΣ", "ἀρχή", "日本語", "中文", "한국어", "Ünïcödé", "İstanbul",
           "ﬁle", "K", "Å", "e\u0301", "🙂", "👍🏽", "עברית", "العربية", "हिन्दी", "ŉ"]
PUNCT = [".", ",", "!", "?", ";", ":", "'", '"', "(", ")", "-", "--", "…", "«", "»", "—", "&", "/", "$", "%"]
ODD = ["&quot;", "&amp;", "&lt;", "&gt;", "<skipped>", "-\n", "\n", "\t", "\u00a0", "\u2009", "\x1c", "\u3000",
       "3.14", "1,000", "2-3", "-7", "e.g.", "U.S.A.", "A.", "x,y", "..."]


def word(rng):
    r = rng.random()
    if r < 0.62:
        w = rng.choice(WORDS)
    elif r < 0.72:
        w = rng.choice(UNICODE)
    elif r < 0.82:
        w = str(rng.choice([rng.randint(0, 99), rng.randint(100, 99999), rng.randint(-50, 50)]))
    elif r < 0.92:
        w = rng.choice(PUNCT)
    else:
        w = rng.choice(ODD)
    if rng.random() < 0.15:
        w = w.capitalize()
    return w


def sentence(rng, n):
    out = []
    for _ in range(n):
        out.append(word(rng))
        out.append(rng.choice([" ", " ", " ", " ", "", "  ", "\n"]))
    return "".join(out).strip(" ") if rng.random() < 0.8 else "".join(out)


def mutate(rng, text):
    """A hypothesis near a reference: words dropped, swapped, replaced, added."""
    toks = text.split(" ")
    out = []
    for t in toks:
        r = rng.random()
        if r < 0.08:
            continue
        if r < 0.16:
            out.append(word(rng))
        elif r < 0.2:
            out.extend([t, word(rng)])
        else:
            out.append(t)
    if len(out) > 2 and rng.random() < 0.3:
        i = rng.randrange(len(out) - 1)
        out[i], out[i + 1] = out[i + 1], out[i]
    return " ".join(out)


def pairs(rng):
    fixed = [
        ("", [""]),
        ("", ["a reference"]),
        ("a hypothesis", [""]),
        ("The cat sat on the mat.", ["the cat sat on the mat"]),
        ("An answer!", ["answer"]),
        ("the", ["a"]),
        ("   ", ["\t\n"]),
        ("The answer is 72.", ["Natalia sold 48/2 = 24 clips in May.\n#### 72"]),
        ("So she has $1,234.50 left", ["1234.5"]),
        ("The result is -3", ["#### -3"]),
        ("no number here", ["#### 5"]),
        ("42", ["41", "42"]),
        ("7 apples, then 8.", ["8"]),
        ("café Straße 日本語", ["Café straße 日本語"]),
        ("ΟΔΥΣΣΕΥΣ", ["οδυσσευς"]),
        ("&quot;quoted&quot; &amp; more", ['"quoted" & more']),
        ("hyphen-\nated words", ["hyphenated words"]),
        ("1,000.5 and 3.14, 2-3", ["1,000.5 and 3.14 , 2 - 3"]),
        ("e.g. U.S.A. A. x,y ...", ["e.g. U.S.A. A. x,y ..."]),
        ("the quick brown fox", ["the quick brown fox", "a quick brown dog", "fox"]),
        ("a b c d e f g", ["a b c", "d e f g", "a b c d e f g h i j"]),
        ("x", ["x"]),
        ("xy", ["xy"]),
        ("🙂👍🏽", ["🙂👍🏽"]),
        ("word\x1cword", ["word word"]),
    ]
    out = list(fixed)
    while len(out) < N_PAIRS:
        kind = rng.random()
        if kind < 0.06:
            n = rng.randint(800, 2500)  # very long
        elif kind < 0.3:
            n = rng.randint(1, 4)  # short answers
        else:
            n = rng.randint(5, 60)
        ref = sentence(rng, n)
        nrefs = 1 if rng.random() < 0.7 else rng.randint(2, 4)
        refs = [ref] + [mutate(rng, ref) if rng.random() < 0.6 else sentence(rng, rng.randint(1, n + 3))
                        for _ in range(nrefs - 1)]
        r = rng.random()
        if r < 0.1:
            hyp = ref
        elif r < 0.15:
            hyp = ""
        elif r < 0.2:
            hyp = ref.upper() if rng.random() < 0.5 else ref.lower()
        elif r < 0.75:
            hyp = mutate(rng, ref)
        else:
            hyp = sentence(rng, rng.randint(1, 2 * n + 2))
        if rng.random() < 0.05:
            refs = [r_ if rng.random() < 0.5 else "" for r_ in refs]
        out.append((hyp, refs))
    return out


def main():
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "crates/goodput-core/tests/fixtures/quality")
    target.mkdir(parents=True, exist_ok=True)
    rng = random.Random(SEED)
    all_pairs = pairs(rng)
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    bleu, chrf = BLEU(), CHRF()
    with open(target / "pairs.jsonl", "w", encoding="utf-8") as f:
        for hyp, refs in all_pairs:
            bleu_stats = bleu._extract_corpus_statistics([hyp], [[r] for r in refs])[0]
            chrf_stats = chrf._extract_corpus_statistics([hyp], [[r] for r in refs])[0]
            line = {
                "hyp": hyp,
                "refs": refs,
                "exact": exact_match(hyp, refs),
                "number": number_match(hyp, refs),
                "rouge_l": scorer.score_multi(refs, hyp)["rougeL"].fmeasure,
                "chrf": sacrebleu.sentence_chrf(hyp, refs).score,
                "bleu_stats": [int(x) for x in bleu_stats],
                "chrf_stats": [int(x) for x in chrf_stats],
            }
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    spans = [(i, min(i + 40, len(all_pairs))) for i in range(0, len(all_pairs), 40)] + [(0, len(all_pairs))]
    with open(target / "corpus.jsonl", "w", encoding="utf-8") as f:
        for a, b in spans:
            hyps = [h for h, _ in all_pairs[a:b]]
            width = max(len(r) for _, r in all_pairs[a:b])
            streams = [[r[k] if k < len(r) else None for _, r in all_pairs[a:b]] for k in range(width)]
            line = {
                "from": a,
                "to": b,
                "bleu": BLEU().corpus_score(hyps, streams).score,
                "chrf": CHRF().corpus_score(hyps, streams).score,
            }
            assert not math.isnan(line["bleu"])
            f.write(json.dumps(line) + "\n")
    print(f"{len(all_pairs)} pairs, {len(spans)} corpora; sacrebleu {sacrebleu.__version__}, "
          f"rouge-score {getattr(rouge_score, '__version__', '0.1.2')}", file=sys.stderr)


if __name__ == "__main__":
    main()
