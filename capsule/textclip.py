"""Text hygiene for the capsule: lone surrogates, JSON sizes, byte/token clipping, hashes.

Sizes are measured the way the budget measures them: a text's cost in the canonical JSON is
the UTF-8 length of its JSON string literal (``json.dumps(..., ensure_ascii=False)``), so a
NUL byte costs 6 bytes (``\\u0000``), an emoji 4. Clip limits apply to that encoded size.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable
from json.encoder import encode_basestring  # what json.dumps(str, ensure_ascii=False) calls

_SURROGATE = re.compile("[\ud800-\udfff]")

# Characters some readers treat as a line break or that reorder what a reader sees. The
# rendered literal escapes them so a free text stays on its one line, visibly.
_RENDER_ESCAPE = re.compile("[\x7f\x85\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")


def scrub(text: str) -> tuple[str, int]:
    """Make ``text`` encodable as UTF-8: pair up surrogate halves, replace lone ones with U+FFFD.

    Returns the clean text and how many replacement characters were introduced.
    """
    if text.isascii() or not _SURROGATE.search(text):  # isascii: a fast C scan, most texts
        return text, 0
    clean = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return clean, clean.count("\ufffd") - text.count("\ufffd")


def raw_bytes(text: str) -> bytes:
    """UTF-8 of ``text``; lone surrogates kept as-is (surrogatepass) so hashes match the store."""
    return text.encode("utf-8", "surrogatepass")


def sha256_text(text: str) -> str:
    return hashlib.sha256(raw_bytes(text)).hexdigest()


def sha256_texts(texts: Iterable[str]) -> str:
    """Hash of several texts: each one's UTF-8 prefixed by its 8-byte big-endian length."""
    h = hashlib.sha256()
    for text in texts:
        raw = raw_bytes(text)
        h.update(len(raw).to_bytes(8, "big"))
        h.update(raw)
    return h.hexdigest()


def json_literal(text: str) -> str:
    """The canonical JSON string literal of ``text`` (as the capsule's encoding writes it):
    ``json.dumps(text, ensure_ascii=False)``, without the encoder it builds per call (a build
    takes ~2,000 literals)."""
    return encode_basestring(text)


def json_size(text: str) -> int:
    """Bytes ``text`` takes inside canonical JSON, quotes included."""
    return len(json_literal(text).encode("utf-8"))


def render_literal(text: str) -> str:
    """A one-line, quoted literal for the rendered block: JSON escapes plus Unicode line
    separators, NEL, DEL and bidi controls as ``\\uXXXX``, so no text can start a new line."""
    literal = encode_basestring(text)
    return _RENDER_ESCAPE.sub(lambda m: "\\u%04x" % ord(m.group()), literal)


def utf8_prefix(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 is at most ``max_bytes`` (never splits a char)."""
    if max_bytes <= 0:
        return ""
    # Slicing by characters first keeps this linear in max_bytes, not in len(text).
    head = text[:max_bytes]
    raw = head.encode("utf-8")
    if len(raw) <= max_bytes:
        return head
    return raw[:max_bytes].decode("utf-8", "ignore")


def _longest_prefix(text: str, fits: Callable[[str], bool]) -> str:
    """Longest character prefix of ``text`` for which ``fits`` holds (monotone predicate)."""
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(text[:mid]):
            lo = mid
        else:
            hi = mid - 1
    return text[:lo]


def clip_json_bytes(text: str, max_json_bytes: int) -> str:
    """Longest prefix whose canonical JSON literal (quotes included) fits ``max_json_bytes``."""
    if json_size(text) <= max_json_bytes:
        return text
    budget = max_json_bytes - 2
    if budget <= 0:
        return ""
    head = utf8_prefix(text, budget)  # escapes only grow the size, so this is an upper bound
    return _longest_prefix(head, lambda s: json_size(s) <= max_json_bytes)


def clip_tokens(text: str, max_tokens: int, count: Callable[[str], int]) -> str:
    """Longest prefix with at most ``max_tokens`` tokens (binary search; ``text`` is already
    byte-clipped, so each count is cheap)."""
    if count(text) <= max_tokens:
        return text
    if max_tokens <= 0:
        return ""
    return _longest_prefix(text, lambda s: count(s) <= max_tokens)


def short_id(value: str, max_bytes: int = 160) -> str:
    """Identifiers are never clipped silently: an over-long one keeps a prefix and a hash."""
    value, _ = scrub(value)
    if len(value) * 6 <= max_bytes:  # fits even if every char needed a \uXXXX escape
        return value
    if len(value) <= max_bytes and value.isascii() and value.isprintable() and '"' not in value and "\\" not in value:
        return value  # plain ASCII: its JSON literal is the text plus two quotes
    if len(value.encode("utf-8")) <= max_bytes and json_size(value) <= max_bytes + 2:
        return value
    digest = sha256_text(value)[:16]
    keep = clip_json_bytes(value, max_bytes - 20)
    return f"{keep}~{digest}"


def render_json(value: object) -> str:
    """Compact JSON of any value on one line, with the same escapes as :func:`render_literal`."""
    dumped = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
    return _RENDER_ESCAPE.sub(lambda m: "\\u%04x" % ord(m.group()), dumped)
