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
"""

from __future__ import annotations

import hashlib
import marshal
from pathlib import Path

from . import checked_file

VERSION = 1
#: counts kept in a file: the newest build's texts, then earlier ones up to this many (~0.5 MB)
KEPT = 20_000
DIGEST_BYTES = 16


def digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=DIGEST_BYTES).digest()


def counts_path(folder, encoding: str) -> Path:
    return Path(folder) / f"token-counts-{encoding}.marshal"


def load(folder, encoding: str) -> dict[bytes, int]:
    """The counts kept for ``encoding``, or none when the file is missing or not ours."""
    blob = checked_file.read(counts_path(folder, encoding))
    try:
        data = marshal.loads(blob) if blob is not None else None
    except (ValueError, EOFError, TypeError):
        return {}
    if not (isinstance(data, dict) and data.get("version") == VERSION
            and data.get("encoding") == encoding and isinstance(data.get("counts"), dict)):
        return {}
    counts = data["counts"]
    if not all(type(key) is bytes and len(key) == DIGEST_BYTES and type(tokens) is int and tokens >= 0
               for key, tokens in counts.items()):
        return {}
    return counts


def save(folder, encoding: str, newest: dict[bytes, int], earlier: dict[bytes, int]) -> None:
    """Keep ``newest`` (this build's counts), then ``earlier`` ones up to :data:`KEPT`."""
    counts = dict(list(newest.items())[:KEPT])
    for key, tokens in earlier.items():
        if len(counts) >= KEPT:
            break
        counts.setdefault(key, tokens)
    checked_file.write(counts_path(folder, encoding),
                       marshal.dumps({"version": VERSION, "encoding": encoding, "counts": counts}))
