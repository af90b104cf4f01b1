"""A compaction's transcript pointer (path, size and sha256 of the prefix read), hashed by a
child process forked as soon as the hook has parsed its payload.

The pointer is the one part of a boundary whose cost grows with the session: hashing the
transcript is ~1 ms per MB (sha256 at ~1.1 GB/s here), and it sat on the boundary's path before
its snapshot started. Measured: a PreCompact hook of the benchmarks' thread with a
20 MB transcript 181 ms against 158 with none (medians of 8 alternating rounds). A hook's
process spends its first ~30 ms on one core (importing what it shares with its capsule worker
before forking it: ``capsule_worker.SHARED_MODULES``), so a child forked first hashes on the
other core meanwhile, and the boundary reads its answer from a pipe.

:func:`start_early` forks the child (Linux, a single-threaded process: as the capsule worker,
``capsule_worker.can_fork``); :func:`pointer` is the boundary's: the early child's answer for
the same path, else (no child, another path, a child that failed or answered nothing usable)
the file hashed in this process, as before. The child holds none of the hook's standard
descriptors (the runtime waits for EOF on its stdout and stderr) and ends with ``os._exit``.
"""
from __future__ import annotations

import os

#: the child's answer: ``<size> <sha256 hex>``, or this when the file could not be read
UNREADABLE = b"-"

_early: tuple[str, int, int] | None = None  # (path, child pid, read end of its pipe)


def compute(path) -> dict | None:
    """Path, byte size and sha256 of the transcript prefix read (the file's size when opened);
    the path alone when it cannot be read; None without a path (a payload's value that is no
    string names none)."""
    if not path or not isinstance(path, str):
        return None
    import hashlib

    from continuation.host.userfiles import hash_prefix

    try:
        h = hashlib.sha256()
        size = hash_prefix(path, h)  # a regular file only, up to its size when opened
        return {"transcript_path": path, "transcript_offset": size,
                "transcript_prefix_sha256": h.hexdigest()}
    except OSError:  # gone, not a regular file, or a name no file can have (a NUL in it)
        return {"transcript_path": path}


def start_early(path) -> None:
    """Fork the child that hashes ``path`` (a string naming the transcript), where forking is
    safe; otherwise nothing (the boundary hashes it). Never raises."""
    global _early
    if _early is not None or not isinstance(path, str) or not path:
        return
    try:
        from continuation.boundary.capsule_worker import can_fork

        if not can_fork():
            return
        read_end, write_end = os.pipe()
    except Exception:  # noqa: BLE001 - the boundary hashes it itself
        return
    try:
        pid = os.fork()
    except OSError:  # no process to be had: the boundary hashes it itself
        os.close(read_end)
        os.close(write_end)
        return
    if pid == 0:  # the child: never returns into the hook's code
        try:
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.close(read_end)
            found = compute(path)
            answer = (f"{found['transcript_offset']} {found['transcript_prefix_sha256']}".encode()
                      if found and "transcript_offset" in found else UNREADABLE)
            os.write(write_end, answer)
        finally:
            os._exit(0)
    os.close(write_end)
    _early = (path, pid, read_end)


def pointer(path) -> dict | None:
    """The transcript pointer of ``path``: the early child's when it hashed this path, else
    :func:`compute`."""
    global _early
    early, _early = _early, None
    if early is not None:
        found = _answer(*early)
        if found is not None and early[0] == path:
            return found
    return compute(path)


def _answer(path: str, pid: int, read_end: int) -> dict | None:
    """The child's answer as a pointer (None: none usable); the child reaped."""
    chunks = []
    try:
        while True:
            chunk = os.read(read_end, 256)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError:
        chunks = []
    finally:
        os.close(read_end)
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
    answer = b"".join(chunks)
    if answer == UNREADABLE:
        return {"transcript_path": path}
    size, _, digest = answer.partition(b" ")
    if not size.isdigit() or len(digest) != 64 or not all(c in b"0123456789abcdef" for c in digest):
        return None
    return {"transcript_path": path, "transcript_offset": int(size),
            "transcript_prefix_sha256": digest.decode()}


def discard_early() -> None:
    """Reap and drop a child no boundary took: a process that handles more than one payload
    (the in-process hooks) must not hand one payload's hash to a later boundary."""
    global _early
    early, _early = _early, None
    if early is not None:
        _answer(*early)
