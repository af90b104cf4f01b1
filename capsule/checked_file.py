"""Cache files that check themselves: a blob after the hex sha256 of it, written whole to a
temporary file and renamed. A torn, altered or missing file reads as absent (None), and a write
that fails leaves the old file or none: the caller computes the value again. Used for the
tokenizer's parsed ranks and the token counts kept between boundaries, in the state home's
private cache folder."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

_DIGEST = 64  # hex characters of a sha256


def read(path: Path) -> bytes | None:
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    blob = raw[_DIGEST:]
    return blob if hashlib.sha256(blob).hexdigest().encode() == raw[:_DIGEST] else None


def write(path: Path, blob: bytes) -> bool:
    """True when ``path`` now holds ``blob`` (a private file in a private folder)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "wb") as out:
            out.write(hashlib.sha256(blob).hexdigest().encode() + blob)
        os.replace(temporary, path)
        return True
    except OSError:
        try:
            temporary.unlink()
        except OSError:
            pass
        return False
