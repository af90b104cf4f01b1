"""The store interface: the operations the engine, hooks, importers and commands use.

A backend (SQLite, the embedded default; PostgreSQL for teams) implements every method with
the same meaning, and ``tests/test_store_conformance.py`` holds the tests that define it:

- ``append`` writes one fact in one transaction and folds it into the derived tables with the
  same reducer a full replay uses; a duplicate (an input id or tool call already known) writes
  nothing (``Appended.seq is None``): admission is exactly-once, whatever process or host
  appends;
- a thread's sequence numbers are contiguous (1, 2, 3, ...) under concurrent writers;
- reads are by thread and by state (``inputs(key, states)``, ``tool_calls(key, statuses)``)
  and never depend on which process wrote;
- checkpoints are committed together with their ``checkpoint_committed`` fact, each generation
  once, and keep the capsule bytes with their sha256.

Only ``continuation.store`` knows which backend is in use (``open_store``).
"""
from __future__ import annotations

from typing import Any, Iterable, Protocol, runtime_checkable


@runtime_checkable
class Store(Protocol):
    """What every backend provides (see the module docstring for the contract)."""

    #: where the facts live, for messages (a file path, or a server URL without password)
    location: str

    @property
    def schema_version(self) -> int: ...

    def close(self) -> None: ...

    def leave_open(self) -> None:
        """The process ends right after without :meth:`close` (``os._exit``): leave nothing
        that makes the next process's open slower (every commit is already durable)."""

    # threads
    def ensure_thread(self, runtime: str, session_id: str, *, workspace_root: str | None = None,
                      forked_from: str | None = None, forked_at_seq: int | None = None,
                      name: str | None = None) -> str: ...

    def threads(self) -> list[dict]: ...

    def thread(self, selector: str) -> dict: ...

    def thread_by_session(self, runtime: str, session_id: str) -> dict | None: ...

    # the log
    def append(self, thread_key: str, etype: str, data: dict, *, source: str,
               ts: float | None = None, session: dict | None = None) -> Any: ...

    def append_many(self, thread_key: str, items: Iterable, *, source: str,
                    ts: float | None = None, session: dict | None = None) -> list: ...

    def events(self, thread_key: str, *, after: int = 0, upto: int | None = None,
               limit: int | None = None) -> list[dict]: ...

    def events_of_types(self, thread_key: str, types, *, upto: int | None = None,
                        newest: int | None = None, after: int | None = None) -> list[dict]: ...

    # live-session markers
    def end_sessions(self, thread_key: str, now: float | None = None) -> None: ...

    def sessions(self, thread_key: str | None = None) -> list[dict]: ...

    # derived reads
    def inputs(self, thread_key: str, states=None) -> list: ...

    def newest_inputs(self, thread_key: str, limit: int) -> list: ...

    def input_counts(self, thread_key: str) -> dict: ...

    def tool_calls(self, thread_key: str, statuses=None, *, after_seq: int | None = None) -> list:
        """Calls in ``statuses`` (None: all), started after ``after_seq`` when given (a rewind
        reads only the calls past its checkpoint, however long the thread), in start order."""
        ...

    def turns(self, thread_key: str) -> list: ...

    def claims(self, thread_key: str) -> list[dict]: ...

    def meta(self, thread_key: str) -> dict: ...

    def replay(self, thread_key: str) -> Any: ...

    def derived_state(self, thread_key: str) -> Any: ...

    def rebuild(self, thread_key: str) -> None: ...

    # checkpoints
    def commit_checkpoint(self, row: dict, fact: dict,
                          then: tuple[str, dict, str] | None = None) -> None: ...

    def checkpoint_rows(self, thread_key: str, *, upto_generation: int | None = None,
                        newest_first: bool = False, limit: int | None = None) -> list[dict]: ...

    def find_checkpoint_rows(self, selector: str) -> list[dict]: ...

    # maintenance
    def thread_tables(self) -> list[str]: ...

    # every other read or write is a named operation of ``thread_reads.ThreadReads``,
    # ``boundary_reads.BoundaryReads`` and ``timeline_reads.TimelineReads`` (mixed into both
    # backends); the connection and the transactions stay inside the store
