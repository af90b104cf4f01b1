"""``continuation hook --runtime codex|claude|gemini``: one hook payload in (JSON on stdin), one answer out.

Fail-open: any error of ours is logged under the state home (``logs/hooks.log``) and the hook
answers "continue" (``{}``) with exit 0, so the user's agent goes on. Strict mode
(``CONTINUATION_STRICT=1``) turns our errors into exit 2 with the message on stderr, for
debugging an installation.

The hot path (UserPromptSubmit, PreToolUse, PostToolUse) imports only sqlite3, json's C codec
(:mod:`continuation.host.jsontext`) and the reducer: no pydantic, no tokenizer, no GitPython, no
transcript scan, not even ``re``.
"""
from __future__ import annotations

import os
import sys
import time

from continuation.host import jsontext

MAX_STDIN_BYTES = 64 * 1024 * 1024  # a runtime never sends this much; refuse, don't swallow RAM
CONTINUE = "{}"
RUNTIMES = ("codex", "claude", "gemini")

HELP = """usage: continuation hook --runtime {codex,claude,gemini}

Handle one runtime hook payload: JSON on stdin, the runtime's answer on
stdout. The runtime runs this itself for each hook event; `continuation
install --runtime R` writes the command into its settings. Errors of ours are
logged to <state home>/logs/hooks.log and the agent goes on
(CONTINUATION_STRICT=1: exit 2 instead).

options:
  -h, --help            show this help and exit (stdin is not read)
  --runtime {codex,claude,gemini}
                        the runtime that sends the payload (required)
"""


class HookInputError(ValueError):
    """The payload is not a hook payload we can read (empty, malformed, not an object)."""


def parse_payload(raw: bytes) -> dict:
    if not raw.strip():
        raise HookInputError("empty hook payload on stdin")
    if len(raw) > MAX_STDIN_BYTES:
        raise HookInputError(f"hook payload of {len(raw)} bytes exceeds {MAX_STDIN_BYTES}")
    try:
        payload = jsontext.loads(raw.decode("utf-8", "surrogateescape"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise HookInputError(f"malformed hook payload: {exc}") from None
    if not isinstance(payload, dict):
        raise HookInputError(f"hook payload is a JSON {type(payload).__name__}, not an object")
    return payload


def strict_mode() -> bool:
    return os.environ.get("CONTINUATION_STRICT", "").strip().lower() in ("1", "true", "yes")


def payload_digest(raw: bytes) -> str:
    """What the log keeps of a payload: its length and sha256, never its text (a prompt may
    hold secrets, and the log outlives the session)."""
    import hashlib

    return f"payload_bytes={len(raw)} payload_sha256={hashlib.sha256(raw).hexdigest()}"


def _log_error(runtime: str, raw: bytes, exc: BaseException) -> None:
    try:
        import traceback

        from continuation.host.paths import append_log, state_home_str

        append_log(state_home_str(), "hooks.log",
                   f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} runtime={runtime} "
                   f"error={exc!r}\n{payload_digest(raw)}\n{traceback.format_exc()}\n")
    except Exception:
        pass  # logging must never turn a fail-open hook into a failing one


def _storage_failure(exc: BaseException) -> bool:
    """An error that means the event could not be written (disk full, read-only or damaged
    state home), as opposed to a payload we cannot read."""
    if isinstance(exc, OSError):
        return True
    import sqlite3

    from continuation.store.damage import damage_of

    if damage_of(exc) is not None:
        return True
    from continuation.store import StoreError, StoreVersionError, UnknownThread

    if isinstance(exc, (sqlite3.OperationalError, sqlite3.DatabaseError)):
        return not isinstance(exc, (sqlite3.IntegrityError, sqlite3.ProgrammingError))
    sqlstate = getattr(exc, "sqlstate", None)  # the PostgreSQL server refused the write
    if isinstance(sqlstate, str) and sqlstate:  # (the driver's error, or the relay's word)
        return not sqlstate.startswith(("23", "42"))  # as SQLite's: not a key or SQL error
    return isinstance(exc, StoreError) and not isinstance(exc, (StoreVersionError, UnknownThread))


def _with_notices(answer: dict | None, notices: list[str]) -> dict | None:
    if not notices:
        return answer
    answer = dict(answer or {})
    answer["systemMessage"] = "\n".join(filter(None, [answer.get("systemMessage"), *notices]))
    return answer


def _pending_notices() -> list[str]:
    """Notices raised while handling (see :mod:`continuation.host.lost_writes`); that module is
    loaded only when something raised one, so the hot path does not import it."""
    module = sys.modules.get("continuation.host.lost_writes")
    return list(module.NOTICES) if module is not None else []


def run(runtime: str, raw: bytes, *, ending: bool = False) -> tuple[str, int]:
    """Handle one payload; returns (stdout text, exit code). ``ending``: the process exits
    right after (see :func:`main`)."""
    payload = None
    try:
        payload = parse_payload(raw)
        _start_worker_for_payload(payload)  # unless main() did
        from continuation.store import log_store

        log_store.STAMPS = log_store.WriteStamps()
        try:
            answer = _handle(runtime, payload, ending)
        except log_store.ServerUnreachable as lost:
            # The server went away inside a write. The payload is still here: record it
            # into the local spool (drained later, exactly once: the stamps let the drain
            # skip what the lost commit wrote after all) rather than lose it.
            _log_error(runtime, raw, lost)
            from continuation.store import factory

            factory.spool_from_now(str(lost))
            log_store.STAMPS.restart()
            answer = _handle(runtime, payload, ending)
        except Exception as exc:
            if not _set_aside_damaged(runtime, raw, exc):
                raise
            answer = _handle(runtime, payload, ending)  # into a new store
        answer = _with_notices(answer, _pending_notices())
        return (jsontext.dumps(answer, ensure_ascii=False) if answer else CONTINUE), 0
    except Exception as exc:  # fail open: the user's agent must go on
        _log_error(runtime, raw, exc)
        notices = _pending_notices()
        if payload is not None and _storage_failure(exc):
            # the log line above may be lost too (no room): leave a trace that survives
            from continuation.host import lost_writes
            from continuation.host.paths import state_home_str

            home = state_home_str()
            if lost_writes.note_lost(home, str(payload.get("hook_event_name") or ""), exc):
                from continuation.store.sealed import KeyUnavailable

                notices.append(lost_writes.lost_message(
                    home, str(exc) if isinstance(exc, KeyUnavailable) else None))
        if strict_mode():
            sys.stderr.write(f"continuation hook: {exc}\n")
            return CONTINUE, 2
        answer = _with_notices(None, notices)
        return (jsontext.dumps(answer, ensure_ascii=False) if answer else CONTINUE), 0
    finally:
        if not ending:  # a process handling more payloads: no hash outlives its own
            _discard_early_hash()


def _set_aside_damaged(runtime: str, raw: bytes, exc: BaseException) -> bool:
    """When ``exc`` says the SQLite store is damaged: set it aside (kept) so a new store takes
    this payload and the next ones, remember it for ``doctor`` and tell the user once. False
    when it is no damage (or not a local store)."""
    from continuation.store.damage import damage_of

    detail = damage_of(exc)
    if detail is None:
        return False
    from continuation.host import lost_writes
    from continuation.host.paths import state_home_str
    from continuation.store import store_file
    from continuation.store.damage import set_aside
    from continuation.store.sqlite import OPENED

    home = state_home_str()
    path = store_file(home)
    if path is None:
        return False
    _log_error(runtime, raw, exc)
    target = set_aside(path, detail, seen_inode=OPENED.get(path))
    if target is not None:
        lost_writes.note_store_reset(
            home, path, f"found damaged ({detail[:200]}) and set aside as {target}",
            notice=f"continuation: the store {path} is damaged ({detail[:120]}); it was set "
                   f"aside as {target} (kept) and a new store records from now on. Run "
                   "`continuation doctor --salvage` to recover its readable events.")
    return True


def _handle(runtime: str, payload: dict, ending: bool) -> dict | None:
    if runtime == "gemini":  # its own event names and ids (see .gemini)
        from continuation.hooks.gemini import handle as handle_gemini

        return handle_gemini(payload)
    from continuation.hooks.handlers import handle

    return handle(runtime, payload, ending=ending)


def _discard_early_hash() -> None:
    module = sys.modules.get("continuation.boundary.transcript_hash")
    if module is not None:
        module.discard_early()


#: boundary hooks (they read transcripts, snapshot the workspace, verify edits) and the seconds
#: each may take before it answers with what it has: under the runtime's own timeout (the
#: Claude install gives PreCompact and SessionStart 60 s, other hooks 30 s), so the user's
#: agent never waits on us until it kills the hook. ``CONTINUATION_HOOK_DEADLINE`` overrides.
BOUNDARY_DEADLINES_S = {"PreCompact": 50.0, "SessionStart": 50.0, "Stop": 25.0,
                        "StopFailure": 25.0, "SessionEnd": 25.0,
                        "PreCompress": 50.0, "AfterAgent": 25.0}  # Gemini CLI's names


def boundary_deadline(raw: bytes) -> float | None:
    """The deadline of a boundary hook's payload, None for the hot path. A byte search, not a
    parse: a prompt that merely mentions "Stop" only costs a thread."""
    found = [s for name, s in BOUNDARY_DEADLINES_S.items() if f'"{name}"'.encode() in raw]
    if not found:
        return None
    try:
        return float(os.environ["CONTINUATION_HOOK_DEADLINE"])
    except (KeyError, ValueError):
        return min(found)


def _guard_deadline(raw: bytes, deadline: float) -> float:
    """A boundary hook of a workspace with a guard runs its check: the deadline leaves it the
    check's timeout and a margin (``continuation.guard.config``); unchanged otherwise, and
    when ``CONTINUATION_HOOK_DEADLINE`` sets it."""
    if "CONTINUATION_HOOK_DEADLINE" in os.environ:
        return deadline
    try:
        from continuation.hooks.handlers import guard_present
        from continuation.session.engine import workspace_root

        root = workspace_root(parse_payload(raw).get("cwd"))
        if not guard_present(root):
            return deadline
        from continuation.guard.config import DEADLINE_MARGIN_S, load

        config = load(root)
    except Exception:  # noqa: BLE001 - the hook reports a bad payload or guard file itself
        return deadline
    return max(deadline, float(config.timeout) + DEADLINE_MARGIN_S) if config else deadline


def _is_compaction(payload: dict) -> bool:
    """The payload's hook commits a checkpoint first thing: Claude Code's and Codex's
    PreCompact, Gemini CLI's manual PreCompress (``/compress``). Not Gemini's ``auto`` one: it
    fires before every model request and is a boundary only past the CLI's own threshold
    (:mod:`.gemini_compress`); a worker started for each would import the capsule stack on
    every request, so the boundary, when there is one, starts its own."""
    event = payload.get("hook_event_name")
    return event == "PreCompact" or (event == "PreCompress" and payload.get("trigger") == "manual")


def _start_worker_for_payload(payload: dict) -> None:
    """When ``payload`` is a compaction's: the child hashing its transcript (first: it works
    on the core this process leaves idle until the worker is forked; see
    ``continuation.boundary.transcript_hash``), then :func:`_start_capsule_worker`."""
    if _is_compaction(payload):
        try:
            from continuation.boundary import transcript_hash

            transcript_hash.start_early(payload.get("transcript_path"))
        except Exception:  # noqa: BLE001 - the boundary hashes it itself
            pass
        _start_capsule_worker()


def _start_capsule_worker() -> None:
    """A compaction's capsule worker, started as soon as the payload names the event: it
    imports the capsule stack on another core while this process opens the store, finds the
    thread and gathers (``continuation.boundary.capsule_worker``)."""
    try:
        from continuation.boundary.capsule_worker import start_early
        from continuation.host.paths import state_home_str

        start_early(state_home_str())
    except Exception:  # noqa: BLE001 - the boundary starts its own, or builds itself
        pass


def _start_worker_for_raw(raw: bytes) -> None:
    """:func:`_start_capsule_worker` when ``raw`` is a compaction's payload. Never raises: a
    payload :func:`run` cannot parse (malformed, too deeply nested) is its to report."""
    try:
        payload = parse_payload(raw)
    except Exception:  # noqa: BLE001 - fail open, in run()
        return
    _start_worker_for_payload(payload)


def run_with_deadline(runtime: str, raw: bytes, seconds: float) -> tuple[str, int, bool]:
    """:func:`run` in a worker thread; past ``seconds`` the answer is what we have: nothing
    more than a note for the user. Returns (stdout text, exit code, timed out). The caller
    exits the process on a time-out (the store and the atomic writes are safe to abandon
    mid-way: a killed hook loses nothing it acknowledged)."""
    import threading

    box: list = []
    worker = threading.Thread(target=lambda: box.append(run(runtime, raw, ending=True)),
                              daemon=True, name="continuation-boundary")
    worker.start()
    worker.join(seconds)
    if box:
        return (*box[0], False)
    _log_error(runtime, raw, TimeoutError(f"boundary hook still busy after {seconds:g}s: "
                                          "answered without its result"))
    note = (f"continuation: this hook did not finish within {seconds:g}s and answered without "
            "its work (see logs/hooks.log under the state home).")
    return jsontext.dumps({"systemMessage": note}), 0, True


def main(argv: list[str]) -> int:
    # No cyclic garbage collection in a hook process: it lives for one payload and ends with
    # os._exit (end_process), so what collections would find is freed with the process anyway,
    # while the ~40 of them its imports and reads set off took ~4 ms of a PreCompact hook's
    # Python (measured with gc.callbacks). A forked capsule worker inherits it.
    import gc

    gc.disable()
    if "-h" in argv or "--help" in argv:  # answered before stdin is read: it may be a terminal
        sys.stdout.write(HELP)
        return 0
    runtime = None
    if "--runtime" in argv:
        i = argv.index("--runtime")
        runtime = argv[i + 1] if i + 1 < len(argv) else ""
    else:
        for arg in argv:
            if arg.startswith("--runtime="):
                runtime = arg.split("=", 1)[1]
    if runtime not in RUNTIMES:
        # a hook command always names its runtime (`continuation install` writes it): a
        # payload read as the wrong dialect would be recorded wrong, so none is assumed
        sys.stderr.write("continuation hook: --runtime codex|claude|gemini is required"
                         if runtime is None else
                         f"continuation hook: --runtime must be codex, claude or gemini, not "
                         f"{runtime!r}")
        sys.stderr.write(" (see `continuation hook --help`)\n")
        return 2
    raw = sys.stdin.buffer.read(MAX_STDIN_BYTES + 1)
    deadline = boundary_deadline(raw)
    if deadline is None:
        out, code = run(runtime, raw, ending=True)
    else:
        from continuation.host.phase_marks import mark

        mark("hook: payload read")
        # before the deadline's thread starts: a single-threaded process may fork its worker
        _start_worker_for_raw(raw)
        # after the fork: the store's modules this reads would be imported twice otherwise
        deadline = _guard_deadline(raw, deadline)
        out, code, _late = run_with_deadline(runtime, raw, deadline)
    sys.stdout.write(out + "\n")
    sys.stdout.flush()
    if deadline is not None:
        mark("hook: answered")
        from continuation.host.phase_marks import mark_modules

        mark_modules("the boundary")
    end_process(code)  # also leaves behind a boundary worker stuck past its deadline
    return code  # only where the process did not end (tests replacing end_process)


def end_process(code: int) -> None:
    """End the hook process now: its answer is flushed and every fact it recorded was committed
    durably (SQLite WAL with ``synchronous=FULL`` syncs the log at each commit; files are written
    with fsync). What a normal interpreter exit would add is teardown: freeing every module's
    objects (a tokenizer's ranks take ~130 ms) and closing the store, which as the last
    connection checkpoints the WAL into the database (5 fdatasync calls per PreToolUse), not
    needed for durability; the store's ``leave_open`` folds the WAL only once it has grown
    past a bound (``store.sqlite.WAL_FOLD_BYTES``). A hook process exits with ``os._exit``
    instead; stderr is flushed first."""
    try:
        sys.stderr.flush()
    finally:
        os._exit(code)
