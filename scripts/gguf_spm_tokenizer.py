"""Writes a Hugging Face tokenizer.json for a GGUF file's SentencePiece
("llama") vocabulary, as Llama 2's own tokenizer.json is laid out: a
normaliser that prepends "▁" and turns spaces into "▁", no pre-tokenizer, a
BPE whose merges come from the pieces' scores, bytes as <0xXX> tokens. It
lets `goodput bench --tokenizer` count with the same tokenizer a llama.cpp
server uses, with nothing fetched from a model hub.

    PYTHONPATH=llama.cpp/gguf-py python3 gguf_spm_tokenizer.py VOCAB.gguf OUT.json
"""

import json
import sys

from gguf import GGUFReader


def strings(field):
    return [bytes(field.parts[i]).decode("utf-8") for i in field.data]


def numbers(field):
    return [field.parts[i][0].item() for i in field.data]


def main(src, out):
    r = GGUFReader(src)
    f = r.fields
    model = bytes(f["tokenizer.ggml.model"].parts[f["tokenizer.ggml.model"].data[0]]).decode()
    if model != "llama":
        sys.exit(f"{src}: a '{model}' vocabulary; this writes SentencePiece ('llama') ones only")
    tokens = strings(f["tokenizer.ggml.tokens"])
    scores = numbers(f["tokenizer.ggml.scores"])
    types = numbers(f["tokenizer.ggml.token_type"])
    vocab = {t: i for i, t in enumerate(tokens)}
    # A merge for every way a normal piece splits into two pieces, ranked by
    # the merged piece's score (SentencePiece BPE: the higher, the earlier),
    # as transformers' converter ranks them.
    merges = []
    for piece, score in zip(tokens, scores):
        if types[vocab[piece]] != 1 or len(piece) < 2:
            continue
        local = [(piece[:i], piece[i:]) for i in range(1, len(piece)) if piece[:i] in vocab and piece[i:] in vocab]
        local.sort(key=lambda m: (vocab[m[0]], vocab[m[1]]))
        merges.extend((score, a, b) for a, b in local)
    merges.sort(key=lambda m: -m[0])
    special = [i for i, t in enumerate(types) if t in (2, 3)]  # unknown, control
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": i, "content": tokens[i], "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True}
            for i in special
        ],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
        ]},
        "pre_tokenizer": None,
        "post_processor": None,
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"},
            {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0},
        ]},
        "model": {
            "type": "BPE", "dropout": None, "unk_token": tokens[numbers(f["tokenizer.ggml.unknown_token_id"])[0]],
            "continuing_subword_prefix": None, "end_of_word_suffix": None, "fuse_unk": True,
            "byte_fallback": True, "ignore_merges": False, "vocab": vocab,
            "merges": [[a, b] for _, a, b in merges],
        },
    }
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, ensure_ascii=False)


if __name__ == "__main__":
    main(*sys.argv[1:3])
