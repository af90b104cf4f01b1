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


def read(path: Path) -> memoryview | None:
    """The blob, mapped rather than read: the tokenizer's rank table (2.5 MB) is used where it
    lies (a read and the copy after the digest took ~4 ms of a capsule worker's ~6; mapped,
    ~2.4, the hash included). :func:`write` only ever replaces a file whole (a new file
    renamed over it), never changes one in place, so a mapping stays what was checked."""
    try:
        with open(path, "rb") as file:
            if os.fstat(file.fileno()).st_size <= _DIGEST:
                return None
            data = _mapped(file)
    except OSError:
        return None
    blob = data[_DIGEST:]
    return blob if hashlib.sha256(blob).hexdigest().encode() == bytes(data[:_DIGEST]) else None


def _mapped(file) -> memoryview:
    """The file's bytes mapped, else read (a file system that cannot map it: each boundary
    would otherwise parse the tokenizer's file again, ~100 ms)."""
    import mmap

    try:
        return memoryview(mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ))
    except (OSError, ValueError):
        return memoryview(file.read())


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
