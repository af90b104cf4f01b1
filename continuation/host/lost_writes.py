"""A trace of writes we lost, kept where a full disk cannot erase it.

Hooks fail open: when the disk is full (or the state home read-only, or the store unreadable)
the hook still answers and the agent goes on, but its event is not recorded, and neither is a
line in ``logs/hooks.log`` (appending needs space too). So the state home holds one small
record, ``lost-writes.json``, allocated at full size while there was room (with the store) and
afterwards only ever overwritten in place: overwriting allocated bytes needs no new space.

It counts the hook events lost and remembers whether the user was told (once, through the
hook answer's ``systemMessage``, which Claude Code and Codex CLI 0.171.0 both show), and a
store found truncated to 0 bytes. ``continuation doctor`` reports it; ``doctor --fix`` clears
it once the user has seen it. Light imports only: the hook hot path loads this on failure.
"""
from __future__ import annotations

import os
import time

from continuation.host import jsontext

TRACE_FILE = "lost-writes.json"
RECORD_BYTES = 4096
ERROR_CHARS = 300

#: notices for the user raised in this process (a store reset found while opening it); the
#: hook command puts them in its answer's ``systemMessage``
NOTICES: list[str] = []


def trace_path(home: str) -> str:
    return os.path.join(os.fspath(home), TRACE_FILE)


def _empty() -> dict:
    return {"version": 1, "lost": 0, "first_at": None, "last_at": None, "events": {},
            "last_error": None, "told": False, "store_reset": None}


def _encode(record: dict) -> bytes:
    data = jsontext.dumps(record, ensure_ascii=True, sort_keys=True).encode("ascii")
    if len(data) > RECORD_BYTES - 1:  # never grow the file: trim the free text
        record = {**record, "last_error": (record.get("last_error") or "")[:80], "events": {}}
        data = jsontext.dumps(record, ensure_ascii=True, sort_keys=True).encode("ascii")[
            :RECORD_BYTES - 1]
    return data + b" " * (RECORD_BYTES - 1 - len(data)) + b"\n"


def ensure(home) -> bool:
    """Allocate the record if it is missing (while there is room). True when it exists."""
    path = trace_path(home)
    if os.path.exists(path):
        return True
    try:
        from continuation.host.paths import open_private

        fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    except FileExistsError:
        return True
    except OSError:
        return False
    try:
        os.write(fd, _encode(_empty()))
        os.fsync(fd)
        return True
    except OSError:
        os.close(fd)
        fd = -1
        try:
            os.unlink(path)  # a short record would need new space later: none rather than torn
        except OSError:
            pass
        return False
    finally:
        if fd >= 0:
            os.close(fd)


def read(home) -> dict:
    """The record (an empty one when missing or unreadable)."""
    try:
        with open(trace_path(home), "rb") as fh:
            raw = fh.read(RECORD_BYTES * 2)
        record = jsontext.loads(raw.decode("ascii").strip() or "{}")
    except (OSError, ValueError):
        return _empty()
    return {**_empty(), **record} if isinstance(record, dict) else _empty()


def _update(home, change) -> dict | None:
    """Read, change and overwrite the record in place under an advisory lock (several hooks
    may fail at once). None when it cannot be written (missing and no room to create it)."""
    if not ensure(home):
        return None
    try:
        fd = os.open(trace_path(home), os.O_RDWR)
    except OSError:
        return None
    try:
        _lock(fd)
        raw = b""
        while len(raw) < RECORD_BYTES * 2:
            chunk = os.read(fd, RECORD_BYTES * 2 - len(raw))
            if not chunk:
                break
            raw += chunk
        try:
            record = {**_empty(), **jsontext.loads(raw.decode("ascii").strip() or "{}")}
        except (ValueError, TypeError):
            record = _empty()
        before = dict(record)
        change(record)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, _encode(record))
        os.fsync(fd)
        return before
    except OSError:
        return None
    finally:
        os.close(fd)  # closing releases the lock


def _lock(fd: int) -> None:
    try:
        import fcntl
    except ImportError:  # Windows: no advisory lock; a lost count under a race is the cost
        return
    fcntl.lockf(fd, fcntl.LOCK_EX)


#: events that tell the user about a loss the record cannot remember (a read-only home):
#: once per prompt or session start, not on every tool call
TELL_UNRECORDED_AT = ("UserPromptSubmit", "SessionStart")


def note_lost(home, event: str, error: BaseException | str) -> bool:
    """Count one hook event that was not recorded. True when the user should be told now: the
    first loss since the record was cleared, or, when the record itself cannot be written,
    at each prompt and session start."""
    now = time.time()
    text = f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else str(error)
    from continuation.host.secret_text import redact  # the trace is shown by doctor

    text = redact(text)

    def change(record: dict) -> None:
        record["lost"] = int(record.get("lost") or 0) + 1
        record["first_at"] = record.get("first_at") or now
        record["last_at"] = now
        events = dict(record.get("events") or {})
        events[event or "?"] = int(events.get(event or "?", 0)) + 1
        record["events"] = events
        record["last_error"] = text[:ERROR_CHARS]
        record["told"] = True

    before = _update(home, change)
    if before is None:
        return event in TELL_UNRECORDED_AT
    return not before.get("told")


def note_store_reset(home, store_path: str, detail: str, notice: str | None = None) -> None:
    """The store was found empty though it had been created (its events are gone), or
    damaged and set aside (``notice`` then says where). Remembered for ``doctor`` and told
    once (:data:`NOTICES`)."""
    now = time.time()
    told = {}

    def change(record: dict) -> None:
        told["before"] = bool(record.get("store_reset"))
        if not record.get("store_reset"):
            record["store_reset"] = {"at": now, "path": store_path, "detail": detail}

    _update(home, change)
    if not told.get("before"):
        NOTICES.append(notice or f"continuation: the store {store_path} was {detail}; it was "
                       "recreated empty, so what it recorded before is lost. Run `continuation "
                       "doctor`.")


def forget_store_reset(home) -> None:
    """The store reset was dealt with (a damaged store's events were salvaged)."""
    _update(home, lambda record: record.update(store_reset=None))


def clear(home) -> None:
    """Forget the record (``doctor --fix``, after the user saw the report)."""
    _update(home, lambda record: (record.clear(), record.update(_empty())))


def lost_message(home, why: str | None = None) -> str:
    """``why``: what the user can act on, when known (an encrypted store's key is missing)."""
    why = why or (f"the state home {os.fspath(home)} is full, read-only or damaged, or the "
                  "store's server refused the write")
    return (f"continuation could not record this hook event ({why}); your agent goes on, but "
            "until this is fixed the continuation record is incomplete. Run `continuation doctor`.")
