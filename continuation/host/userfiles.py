"""Reading files that someone else named: transcripts and rollouts from a hook payload, the files
an interrupted edit targeted, a transcript given to ``import``, an instructions file.

Such a path may name a FIFO (``open`` blocks until a writer comes, forever), ``/dev/zero`` (a
read never ends and fills memory), a socket or a terminal. Every read of a user-named file in
the engine goes through here: the file is opened without blocking (``O_NONBLOCK``), checked
with ``fstat`` on the open descriptor (no race with a rename), refused unless it is a regular
file, and read only up to a bound. Where the OS has no ``O_NONBLOCK`` (Windows) the path is
checked with ``stat`` before opening, which leaves a small race but Windows has no FIFOs on
ordinary paths.
"""
from __future__ import annotations

import os
import stat

_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_BINARY = getattr(os, "O_BINARY", 0)
_NOCTTY = getattr(os, "O_NOCTTY", 0)  # a terminal named as a transcript never becomes ours


class NotRegularFile(OSError):
    """The path names a FIFO, a device, a socket or a folder: we never read those."""


class FileTooLarge(OSError):
    """The file is larger than the caller's bound."""


class NoSuchName(OSError):
    """The name cannot name a file at all (a NUL in it, or not a path): for the callers, who
    handle ``OSError``, the same as a file that is not there."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path):
    """A binary file object for ``path``, which must be a regular file (symbolic links are
    followed to what they name). Raises :class:`NotRegularFile` (an ``OSError``) otherwise,
    and :class:`NoSuchName` (one too) for a name that cannot be a path (a hook payload's value
    may be anything: ``os`` raises ``TypeError`` or ``ValueError`` for those)."""
    try:
        path = os.fspath(path)
        if "\0" in (path if isinstance(path, str) else path.decode("latin-1")):
            raise ValueError("embedded null byte")
    except (TypeError, ValueError) as exc:
        raise NoSuchName(f"{path!r} names no file ({exc})") from None
    if not _NONBLOCK:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(f"{path} is {_kind(mode)}, not a regular file")
    fd = os.open(path, os.O_RDONLY | _NONBLOCK | _BINARY | _NOCTTY)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(f"{path} is {_kind(mode)}, not a regular file")
        if _NONBLOCK:
            try:  # regular files ignore it; clear it anyway so reads behave the ordinary way
                os.set_blocking(fd, True)
            except (OSError, AttributeError):
                pass
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bounded(path, limit: int) -> bytes:
    """The whole file; :class:`FileTooLarge` when it holds more than ``limit`` bytes (read
    stops there, whatever the file claims its size is)."""
    with open_regular(path) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise FileTooLarge(f"{os.fspath(path)} is larger than {limit} bytes")
    return data


def read_tail(path, limit: int) -> tuple[bytes, int]:
    """The last ``limit`` bytes of the file as it was when opened, and where they start."""
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        start = max(0, size - limit)
        fh.seek(start)
        return fh.read(size - start), start


def hash_prefix(path, hasher, limit: int | None = None, chunk: int = 1 << 20) -> int:
    """Feed the file (its size when opened, at most ``limit`` bytes) to ``hasher``; returns the
    number of bytes read. A file still being appended is read up to where it was."""
    with open_regular(path) as fh:
        left = os.fstat(fh.fileno()).st_size
        if limit is not None:
            left = min(left, limit)
        read = 0
        while left > 0:
            block = fh.read(min(chunk, left))
            if not block:
                break
            hasher.update(block)
            read += len(block)
            left -= len(block)
        return read
