"""The engine facade: open a thread, record what the runtime did, read the state back.

Everything a runtime adapter, an importer or a command records goes through :class:`Thread`;
every state it reads is derived from the log by the reducer. This module stays light (no
pydantic, no tokenizer, no GitPython) because the hook hot path uses it.
"""
from __future__ import annotations

import os
import time

from statemachine import events as ev
from statemachine.lifecycle import ACTIONABLE

from continuation.host.paths import holds_git, state_home_str
from continuation.session import facts
from continuation.store import STORE_FILE, Appended, UnknownThread, open_store

__all__ = ["STORE_FILE", "Engine", "Thread", "workspace_root"]


class Engine:
    def __init__(self, home=None, *, create: bool = True):
        self._home = os.fspath(home) if home is not None else state_home_str()
        self.store = open_store(self._home, create=create)  # the backend CONTINUATION_STORE names

    @property
    def home_str(self) -> str:
        """The state home as a string (what boundary hooks join paths to without pathlib)."""
        return self._home

    @property
    def home(self):
        """The state home as a ``pathlib.Path`` (imported on first use: not on the hot path)."""
        from pathlib import Path

        return Path(self._home)

    def close(self) -> None:
        self.store.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def thread(self, runtime: str, session_id: str, *, workspace_root: str | None = None,
               forked_from: str | None = None, forked_at_seq: int | None = None,
               name: str | None = None) -> "Thread":
        """Open (creating on first use) the thread of ``(runtime, session_id)``."""
        key = self.store.ensure_thread(
            runtime, session_id, workspace_root=workspace_root, forked_from=forked_from,
            forked_at_seq=forked_at_seq, name=name)
        return Thread(self, key)

    def get_thread(self, selector: str) -> "Thread":
        return Thread(self, self.store.thread(selector)["thread_key"])

    def find_thread(self, runtime: str, session_id: str) -> "Thread | None":
        row = self.store.thread_by_session(runtime, session_id)
        return Thread(self, row["thread_key"]) if row else None

    def threads(self) -> list["Thread"]:
        return [Thread(self, row["thread_key"]) for row in self.store.threads()]

    def select(self, selector: str | None, cwd: str | None = None) -> "Thread":
        """``--thread`` semantics: the named thread; without one, the most recently active
        thread of the workspace you are in (``cwd``, default the current folder), else the
        most recently active thread of the store."""
        if selector:
            return self.get_thread(selector)
        rows = self.by_workspace(cwd)
        if not rows:
            raise UnknownThread("no threads yet (nothing has been recorded)")
        return Thread(self, rows[0]["thread_key"])

    def by_workspace(self, cwd: str | None = None) -> list[dict]:
        """Every thread row: those of the workspace holding ``cwd`` first (the innermost
        workspace when they nest), each group most recently active first."""
        rows = sorted(self.store.threads(), key=lambda r: -(r["updated_at"] or 0))
        here = _workspace_depths(cwd if cwd is not None else os.getcwd())
        return sorted(rows, key=lambda r: -here.get(r["workspace_root"] or "", -1))

    def workspace_threads(self, cwd: str | None = None) -> list[dict]:
        """The thread rows of the workspace holding ``cwd`` (the innermost when they nest),
        most recently active first; [] outside every thread's workspace."""
        here = _workspace_depths(cwd if cwd is not None else os.getcwd())
        rows = [r for r in self.by_workspace(cwd) if (r["workspace_root"] or "") in here]
        deepest = max((here[r["workspace_root"]] for r in rows), default=None)
        return [r for r in rows if here[r["workspace_root"]] == deepest]


class Thread:
    def __init__(self, engine: Engine, key: str):
        self.engine = engine
        self.store = engine.store
        self.key = key

    def __repr__(self):
        return f"Thread({self.key!r})"

    @property
    def row(self) -> dict:
        return self.store.thread(self.key)

    # -- recording ---------------------------------------------------------------------------
    def record(self, etype: str, data: dict, *, source: str = "api",
               session: dict | None = None) -> Appended:
        return self.store.append(self.key, etype, data, source=source, session=session)

    def admit(self, text: str, *, input_id: str | None = None, turn_id: str | None = None,
              ordinal: int = 0, queued: bool = False, attachments: list | None = None,
              source: str = "api", session: dict | None = None) -> Appended:
        """Admit one user input exactly once. Without a runtime id, the id is a hash of
        (thread, turn, ordinal, text)."""
        input_id, id_source = facts.input_identity(self.key, turn_id, ordinal, text, input_id)
        result = self.record(*facts.input_admitted(input_id, text, turn_id=turn_id,
                                                   ordinal=ordinal, queued=queued,
                                                   id_source=id_source, attachments=attachments),
                             source=source, session=session)
        result.input_id = input_id
        return result

    def deliver(self, input_id: str, turn_id: str | None = None, **kw) -> Appended:
        return self.record(*facts.input_delivered(input_id, turn_id), **kw)

    def tool_started(self, call_id: str, tool: str = "", args: dict | None = None,
                     turn_id: str | None = None, **kw) -> Appended:
        return self.record(*facts.tool_started(call_id, tool, args or {}, turn_id,
                                               started_at=time.time()), **kw)

    def tool_finished(self, call_id: str, status: str = "ok", *, exit_code: int | None = None,
                      output: str | None = None, turn_id: str | None = None, **kw) -> Appended:
        return self.record(*facts.tool_finished(call_id, status, exit_code=exit_code,
                                                output=output, turn_id=turn_id), **kw)

    def turn_completed(self, turn_id: str, **kw) -> Appended:
        return self.record(*facts.turn_completed(turn_id), **kw)

    def turn_aborted(self, turn_id: str, reason: str = "interrupted", **kw) -> Appended:
        return self.record(*facts.turn_aborted(turn_id, reason), **kw)

    def claim(self, text: str, turn_id: str | None = None, **kw) -> Appended:
        return self.record(*facts.assistant_claim(text, turn_id), **kw)

    def crash_detected(self, reason: str, **kw) -> Appended:
        return self.record(ev.CRASH_DETECTED, {"reason": reason}, **kw)

    def reconcile(self, call_id: str, decision: str, note: str = "", **kw) -> Appended:
        return self.record(ev.RECONCILED, {"call_id": call_id, "decision": decision,
                                           "note": note}, **kw)

    # -- reading -----------------------------------------------------------------------------
    def inputs(self, states=None):
        return self.store.inputs(self.key, states)

    def actionable_inputs(self):
        return self.store.inputs(self.key, sorted(ACTIONABLE))

    def tool_calls(self, statuses=None, *, after_seq: int | None = None):
        return self.store.tool_calls(self.key, statuses, after_seq=after_seq)

    def claims(self):
        return self.store.claims(self.key)

    def events(self, **kw):
        return self.store.events(self.key, **kw)

    def meta(self) -> dict:
        return self.store.meta(self.key)

    def view(self) -> dict:
        """The full state view as plain data (``continuation status --json``)."""
        row = self.row
        return {
            "thread": row,
            "inputs": [r.to_row() for r in self.inputs()],
            "tool_calls": [c.to_row() for c in self.tool_calls()],
            "claims": self.claims(),
            "facts": self.meta(),
        }


def workspace_root(cwd: str | None) -> str | None:
    """The canonical root a thread records for ``cwd``: the nearest folder holding ``.git``
    above it, else ``cwd`` itself. A path walk, not a git call, because this runs on every
    prompt."""
    if not cwd or not isinstance(cwd, str):
        return None
    try:
        start = os.path.realpath(cwd)
    except (OSError, ValueError):
        return cwd
    folder = start
    while True:
        if holds_git(folder):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return start
        folder = parent


def _workspace_depths(cwd: str) -> dict[str, int]:
    """The folders that can be the workspace root of a thread for ``cwd``: ``cwd`` and every
    folder above it (the hooks record the real path of the git root, or of the cwd outside
    git), each with its depth: the deeper, the closer."""
    try:
        folder = os.path.realpath(cwd)
    except (OSError, ValueError):
        return {}
    chain = []
    while True:
        chain.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return {path: depth for depth, path in enumerate(reversed(chain))}
