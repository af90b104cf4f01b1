"""Token counts of texts that an earlier boundary counted, kept in the state home's cache.

A capsule's texts mostly repeat from one boundary to the next (the earlier inputs, claims and
tool calls): the capsule worker counted ~500 texts afresh per build, ~6.5 ms of its ~20 ms
build, which a boundary waits for after git. The worker reads the counts its predecessor wrote
while it waits for its request (``_RememberingCounter.recall``), and writes back what it
counted after it has replied.

Keys are 16-byte BLAKE2b digests of a text's UTF-8 (lone surrogates passed through), one file
per encoding; only texts the counter remembers are kept (up to ``REMEMBERED_TEXT_CHARS``). The
file is ``marshal`` data after its own digest, in the private cache folder (trusted as the
ranks cache beside it is); a missing, torn, damaged, foreign or future-version file is ignored
and its texts counted afresh.
"""

from __future__ import annotations

import hashlib
import marshal
import os
from pathlib import Path

VERSION = 1
#: counts kept in a file: the newest build's texts, then earlier ones up to this many (~0.5 MB)
KEPT = 20_000
DIGEST_BYTES = 16


def digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=DIGEST_BYTES).digest()


def _checksum(blob: bytes) -> bytes:
    return hashlib.blake2b(blob, digest_size=DIGEST_BYTES).digest()


def counts_path(folder, encoding: str) -> Path:
    return Path(folder) / f"token-counts-{encoding}.marshal"


def load(folder, encoding: str) -> dict[bytes, int]:
    """The counts kept for ``encoding``, or none when the file is missing or not ours."""
    try:
        raw = counts_path(folder, encoding).read_bytes()
        if _checksum(raw[DIGEST_BYTES:]) != raw[:DIGEST_BYTES]:
            return {}
        data = marshal.loads(raw[DIGEST_BYTES:])
    except (OSError, ValueError, EOFError, TypeError):
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
    """Keep ``newest`` (this build's counts), then ``earlier`` ones up to :data:`KEPT`. A cache:
    written whole to a temporary file and renamed; a failure leaves the old file or none."""
    counts = dict(list(newest.items())[:KEPT])
    for key, tokens in earlier.items():
        if len(counts) >= KEPT:
            break
        counts.setdefault(key, tokens)
    path = counts_path(folder, encoding)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        blob = marshal.dumps({"version": VERSION, "encoding": encoding, "counts": counts})
        with os.fdopen(descriptor, "wb") as out:
            out.write(_checksum(blob) + blob)
        os.replace(temporary, path)
    except OSError:
        try:
            temporary.unlink()
        except OSError:
            pass
