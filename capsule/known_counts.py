"""Token counts of texts that an earlier boundary counted, kept in the state home's cache.

A capsule's texts mostly repeat from one boundary to the next (the earlier inputs, claims and
tool calls): the capsule worker counted ~500 texts afresh per build, ~6.5 ms of its ~20 ms
build, which a boundary waits for after git. The worker reads the counts its predecessor wrote
while it waits for its request (``_RememberingCounter.recall``), and writes back what it
counted after it has replied.

Keys are 16-byte BLAKE2b digests of a text's UTF-8 (lone surrogates passed through), one file
per encoding; only texts the counter remembers are kept (up to ``REMEMBERED_TEXT_CHARS``). The
file is ``marshal`` data in a ``checked_file`` in the private cache folder (trusted as the ranks
cache beside it is); a missing, torn, damaged, foreign or future-version file is ignored and its
texts counted afresh.

Beside the counts, the pieces the vocabulary counter split texts into and their tokens: a text
the previous boundary did not count (a new prompt, a changed line of the rendering) still
shares most pieces with earlier ones, and a piece outside the vocabulary costs a reference
merge. An earlier version's file (no pieces) gives its counts and no pieces.
"""

from __future__ import annotations

import hashlib
import marshal
from pathlib import Path

from capsule import checked_file

VERSION = 1
#: counts kept in a file: the newest build's texts, then earlier ones up to this many (~0.5 MB)
KEPT = 20_000
DIGEST_BYTES = 16
#: split pieces kept with their tokens (``VocabularyCounter.recall_pieces``): the newest ones,
#: a few builds' worth (the bench's first build splits ~600), checked on load (~0.3 µs each)
KEPT_PIECES = 4_000
MAX_PIECE_BYTES = 64


def digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=DIGEST_BYTES).digest()


def counts_path(folder, encoding: str) -> Path:
    return Path(folder) / f"token-counts-{encoding}.marshal"


def load_kept(folder, encoding: str) -> tuple[dict[bytes, int], dict[bytes, int]]:
    """The counts and the split pieces kept for ``encoding`` (each none when missing or not
    ours: a file of an earlier version has counts and no pieces)."""
    blob = checked_file.read(counts_path(folder, encoding))
    try:
        data = marshal.loads(blob) if blob is not None else None
    except (ValueError, EOFError, TypeError):
        return {}, {}
    if not (isinstance(data, dict) and data.get("version") == VERSION
            and data.get("encoding") == encoding and isinstance(data.get("counts"), dict)):
        return {}, {}
    counts = data["counts"]
    if not all(type(key) is bytes and len(key) == DIGEST_BYTES and type(tokens) is int and tokens >= 0
               for key, tokens in counts.items()):
        return {}, {}
    pieces = data.get("pieces")
    if not (isinstance(pieces, dict) and all(
            type(piece) is bytes and 0 < len(piece) <= MAX_PIECE_BYTES
            and type(tokens) is int and 1 <= tokens <= len(piece)  # a token is a byte or more
            for piece, tokens in pieces.items())):
        pieces = {}
    return counts, pieces


def save(folder, encoding: str, newest: dict[bytes, int], earlier: dict[bytes, int],
         pieces: dict[bytes, int] | None = None) -> None:
    """Keep ``newest`` (this build's counts), then ``earlier`` ones up to :data:`KEPT`, and the
    last :data:`KEPT_PIECES` of ``pieces`` (a counter adds the newest last) up to
    :data:`MAX_PIECE_BYTES` long."""
    counts = dict(list(newest.items())[:KEPT])
    for key, tokens in earlier.items():
        if len(counts) >= KEPT:
            break
        counts.setdefault(key, tokens)
    short = [(piece, tokens) for piece, tokens in (pieces or {}).items() if len(piece) <= MAX_PIECE_BYTES]
    checked_file.write(counts_path(folder, encoding),
                       marshal.dumps({"version": VERSION, "encoding": encoding, "counts": counts,
                                      "pieces": dict(short[-KEPT_PIECES:])}))
