"""Committing and reading capsules: the checkpoint of a thread at one context generation.

Each capsule is stored once, with its rendering: one store transaction inserts the checkpoint
row (the exact capsule bytes, their sha256 and the rendered block) and appends the
``checkpoint_committed`` fact. That transaction is the atomic, durable write (WAL with
``synchronous=FULL``, or the server's commit) and the commit point: a crash before it leaves
the previous checkpoint current, and every earlier row is kept. Reading verifies the sha256; a
capsule whose hash does not match is reported and the previous good one is used. (Versions
earlier versions also wrote a JSON copy to ``capsules/<thread>/``: nothing read it, the row held
the same bytes; ``continuation gc`` deletes the copies left from then.)

``continuation gc`` may prune a generation's payload (``capsule_retention``): a row beyond
``CONTINUATION_KEEP_GENERATIONS`` loses its rendering (rendered again from the bytes when
asked), and past the byte cap the oldest rows lose their capsule bytes too. Such a row stays
listed (id, generation, events covered, reason, time, workspace snapshot, sha256) and
rewindable from the log; asking for its capsule says it was pruned (``CheckpointPruned``).

A checkpoint is aligned (one id names the event position, the capsule and the workspace
snapshot): ``checkpoint_id`` is derived from thread and generation, ``seq`` is the last event it
covers, ``workspace`` holds the snapshot reference taken with it.
"""
from __future__ import annotations

import hashlib
import json
import time


from continuation.session.engine import Thread
# defined with the store (a backend raises them); their home for callers stays here
from continuation.store import CheckpointError, GenerationTaken  # noqa: F401


class _Fields:
    """Plain classes with the fields ``_FIELDS`` in order (positional or keyword), compared by
    value: not dataclasses, because SessionStart(compact) answers through this module and
    importing ``dataclasses`` (which imports ``inspect``) was a sixth of that hook's time."""

    _FIELDS: tuple = ()
    _DEFAULTS: dict = {}
    _HIDDEN: tuple = ()  # left out of repr

    def __init__(self, *args, **kwargs):
        if len(args) > len(self._FIELDS) or set(kwargs) - set(self._FIELDS[len(args):]):
            raise TypeError(f"{type(self).__name__} takes the fields {self._FIELDS}")
        values = {**self._DEFAULTS, **dict(zip(self._FIELDS, args)), **kwargs}
        missing = [name for name in self._FIELDS if name not in values]
        if missing:
            raise TypeError(f"{type(self).__name__} needs {missing}")
        for name in self._FIELDS:
            setattr(self, name, values[name])

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self._FIELDS)

    __hash__ = None  # mutable, as the dataclasses were

    def __repr__(self):
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._FIELDS
                          if n not in self._HIDDEN)
        return f"{type(self).__name__}({inner})"


class Checkpoint(_Fields):
    _FIELDS = ("checkpoint_id", "thread_key", "generation", "seq", "reason", "created_at",
               "sha256", "capsule_version", "rendered", "workspace", "file_path", "capsule_bytes")
    _DEFAULTS = {"capsule_bytes": b""}
    _HIDDEN = ("capsule_bytes",)

    @property
    def pruned(self) -> bool:
        """``continuation gc`` dropped this capsule's bytes (an encoded capsule is never empty)."""
        return not self.capsule_bytes

    def summary(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("capsule_bytes", "rendered")}


class LoadedCapsule(_Fields):
    """``capsule``: a capsule.model.Capsule, None when loaded with ``decode=False``;
    ``problems``: checkpoints skipped because their bytes did not verify."""

    _FIELDS = ("checkpoint", "capsule", "problems")

    def rendered(self) -> str:
        """The capsule's data block as committed (stored with it); rendered from the model
        only for a row that has none."""
        if self.checkpoint.rendered:
            return self.checkpoint.rendered
        from capsule.render import render_capsule

        capsule = self.capsule
        if capsule is None:
            from capsule.decode import decode_capsule

            capsule = decode_capsule(self.checkpoint.capsule_bytes)
        return render_capsule(capsule)


class CheckpointPruned(CheckpointError):
    """The capsule of a listed checkpoint was pruned by ``continuation gc``."""


def pruned_message(cp: Checkpoint) -> str:
    return (f"the capsule of checkpoint {cp.checkpoint_id} (generation {cp.generation}) was "
            "pruned by `continuation gc` (CONTINUATION_KEEP_BYTES); the checkpoint is still "
            "listed and a rewind to it rebuilds the capsule from the log")


def checkpoint_id_for(thread_key: str, generation: int) -> str:
    digest = hashlib.sha256(f"{thread_key}\0{generation}".encode()).hexdigest()[:10]
    return f"cp-{generation}-{digest}"


def capsule_dir(home, thread_key: str):
    """Where earlier versions wrote a JSON copy of each capsule (gc deletes them)."""
    from pathlib import Path  # not at import: SessionStart answers without pathlib

    return Path(home) / "capsules" / thread_key


def _row_to_checkpoint(d: dict) -> Checkpoint:
    return Checkpoint(
        checkpoint_id=d["checkpoint_id"], thread_key=d["thread_key"], generation=d["generation"],
        seq=d["seq"], reason=d["reason"], created_at=d["created_at"], sha256=d["sha256"],
        capsule_version=d["capsule_version"], rendered=d["rendered"],
        workspace=json.loads(d["workspace"]) if d["workspace"] else None,
        file_path=d["file_path"], capsule_bytes=bytes(d["capsule"]))


def list_checkpoints(thread: Thread) -> list[Checkpoint]:
    return [_row_to_checkpoint(r) for r in thread.store.checkpoint_rows(thread.key)]


def newest_checkpoint(thread: Thread) -> Checkpoint | None:
    """The thread's newest checkpoint row (one indexed read, whatever the thread's length)."""
    rows = thread.store.checkpoint_rows(thread.key, newest_first=True, limit=1)
    return _row_to_checkpoint(rows[0]) if rows else None


def checkpoints_matching(engine, selector: str) -> list[Checkpoint]:
    """Every checkpoint whose id is ``selector`` or starts with it, across threads."""
    return [_row_to_checkpoint(r) for r in engine.store.find_checkpoint_rows(selector)]


def find_checkpoint(engine, selector: str) -> Checkpoint:
    """By id or unique id prefix, across threads."""
    rows = checkpoints_matching(engine, selector)
    exact = [r for r in rows if r.checkpoint_id == selector]
    if exact:
        return exact[0]
    if len(rows) == 1:
        return rows[0]
    if not rows:
        raise CheckpointError(f"no checkpoint {selector!r} (see `continuation checkpoint list`)")
    raise CheckpointError(ambiguous_message(selector, rows))


#: matches an ambiguous checkpoint error names
AMBIGUOUS_LISTED = 6


def ambiguous_message(selector: str, matches: list[Checkpoint]) -> str:
    """``'cp-1' matches 3 checkpoints: cp-1-… (thread …), …; give more of the id or --thread``"""
    named = ", ".join(f"{cp.checkpoint_id} (thread {cp.thread_key})"
                      for cp in matches[:AMBIGUOUS_LISTED])
    more = f" and {len(matches) - AMBIGUOUS_LISTED} more" if len(matches) > AMBIGUOUS_LISTED else ""
    return (f"{selector!r} matches {len(matches)} checkpoints: {named}{more}; give more of the "
            "id, or --thread")


def with_workspace(thread: Thread, source, *, generation: int, workspace: dict | None):
    """``source`` (a model or plain data) as if gathered with this snapshot and generation."""
    from continuation.boundary.capsule_source import source_workspace

    update = {"generation": generation, "workspace": source_workspace(thread.row, workspace)}
    before = source["generation"] if isinstance(source, dict) else source.generation
    recorded = source.get("work_record") if isinstance(source, dict) else source.work_record
    if recorded is not None and before != generation:  # a lost race: the pages of this generation
        from continuation.boundary import work_pages
        from continuation.boundary.capsule_source import _bounded_inputs, finish_work_record

        inputs = _bounded_inputs(thread.store, thread.key)[0]
        update["work_record"] = finish_work_record(
            thread, generation, work_pages.gather(thread.store, thread.key, inputs))
    if isinstance(source, dict):
        return {**source, **update}
    return source.model_copy(update=update)


def build(thread: Thread, *, generation: int, reason: str, workspace: dict | None = None,
          transcript: dict | None = None, notices=(), budget=None, upto_seq: int | None = None,
          source=None):
    """Build (not commit) the capsule for the thread's current state (or from ``source``,
    gathered earlier by :func:`continuation.boundary.capsule_source.gather` and completed by :func:`with_workspace`).

    Tokens are counted first by an upper bound that loads no tokenizer, the UTF-8 length, when
    the texts are that small (``capsule.tokens.ByteBoundCounter``): when that build made no
    budget cut (a "(not gathered)" cut of unread history does not depend on the counter) and
    its bound fits, the capsule is the one an exact count gives, and its budget records the
    bound as its encoding. Otherwise it is built with exact counts (``get_token_counter``:
    the encoding's ranks, cached parsed under the state home, without tiktoken's BPE table). A
    thread whose newest capsule needed an exact count goes straight to it (a thread only
    grows)."""
    from capsule.budget import Budget
    from capsule.fitted import build_fitted
    from capsule.tokens import set_ranks_cache

    if source is None:
        from continuation.boundary.capsule_source import gather

        source = gather(thread, generation=generation, reason=reason, workspace=workspace,
                        transcript=transcript, notices=notices, upto_seq=upto_seq)
    elif isinstance(source, dict):
        from capsule.source import CapsuleSource

        source = CapsuleSource.model_validate(source)
    set_ranks_cache(thread.engine.home / "cache")
    return build_fitted(source, budget or Budget(), exact_first=counts_exactly(thread))


def warm_up(thread: Thread) -> None:
    """Do ahead what the next build in this process will need (no capsule worker builds it),
    while a boundary waits for git: the capsule models' schemas (pydantic builds them on first
    use) and, when this thread's next capsule will be counted exactly, the tokenizer.
    Called in the boundary's own thread: a background load would hold the interpreter lock
    against the git worker's process starts."""
    from capsule.schemas import build_schemas
    from capsule.tokens import get_token_counter, set_ranks_cache

    build_schemas()
    if counts_exactly(thread):
        set_ranks_cache(thread.engine.home / "cache")
        try:
            get_token_counter()
        except Exception:  # noqa: BLE001 - the build's own load reports it
            pass


#: a thread with no capsule yet has its first one counted exactly from this many events on: the
#: byte bound (a token per byte) holds only the smallest capsules (measured on turns of a
#: prompt, a call and a claim: 10 events fit it, 25 did not); a first compaction is of a session
#: long enough to fill a context window, whose build otherwise tried the bound in vain and loaded
#: the tokenizer mid-build (a worker loads it while it waits for git instead)
EXACT_FROM_EVENTS = 20


def counts_exactly(thread: Thread) -> bool:
    """Whether this thread's next capsule will be counted exactly: as its newest one was (a
    thread only grows, so its next one will be too); with none yet, when the thread has
    :data:`EXACT_FROM_EVENTS` events or more."""
    from capsule.tokens import is_bound

    rows = thread.store.checkpoint_rows(thread.key, newest_first=True, limit=1)
    if not rows:
        return int(thread.row["last_seq"]) >= EXACT_FROM_EVENTS
    try:
        encoding = json.loads(bytes(rows[0]["capsule"]))["budget"]["encoding"]
    except (ValueError, KeyError, TypeError):
        return False
    return bool(encoding) and not is_bound(encoding)


def prefetch_tokenizer(thread: Thread) -> bool:
    """Load the tokenizer in the background when this thread's next capsule will need it
    (:func:`counts_exactly`). Called before git work that the load then overlaps. True when a
    load was started."""
    from capsule.tokens import preload_in_background, set_ranks_cache

    if not counts_exactly(thread):
        return False
    set_ranks_cache(thread.engine.home / "cache")
    preload_in_background()
    return True


def commit(thread: Thread, *, reason: str, workspace: dict | None = None,
           transcript: dict | None = None, notices=(), budget=None,
           generation: int | None = None, source=None, seq: int | None = None,
           built: tuple[bytes, str, int] | None = None, then=None) -> Checkpoint:
    """Commit the capsule as ``generation`` (default: the next one). Generations only grow:
    when the thread already has this generation or a later one, ``GenerationTaken`` is raised
    and nothing is committed (``boundary.commit_checkpoint`` retries with the next).
    ``source`` and ``seq``: the capsule's input gathered earlier (a model or plain data) and
    the last event it covers (read before it was gathered). ``built``: the capsule already
    built from that source with this generation and workspace (bytes, rendering, schema
    version: ``continuation.boundary.capsule_worker``). ``then(checkpoint_id, generation)``: the fact
    (type, data, source) appended after the checkpoint's in its transaction: the boundary the
    checkpoint was taken for (one durable commit, and never a checkpoint without its
    boundary)."""
    store = thread.store
    row = thread.row
    if generation is None:
        generation = int(row["generation"]) + 1
    if seq is None:
        seq = int(row["last_seq"])
    if built is not None:
        data, rendered, version = built
    else:
        from capsule.model import SCHEMA_VERSION, encode_capsule
        from capsule.render import render_capsule

        if source is not None:
            source = with_workspace(thread, source, generation=generation, workspace=workspace)
        capsule = build(thread, generation=generation, reason=reason, workspace=workspace,
                        transcript=transcript, notices=notices, budget=budget, source=source)
        data, rendered, version = encode_capsule(capsule), render_capsule(capsule), SCHEMA_VERSION
    digest = hashlib.sha256(data).hexdigest()
    cp_id = checkpoint_id_for(thread.key, generation)
    now = time.time()
    store.commit_checkpoint(
        {"checkpoint_id": cp_id, "thread_key": thread.key, "generation": generation, "seq": seq,
         "reason": reason, "created_at": now, "capsule": data, "sha256": digest,
         "capsule_version": version, "rendered": rendered,
         "workspace": json.dumps(workspace) if workspace else None, "file_path": None},
        {"checkpoint_id": cp_id, "generation": generation, "reason": reason, "sha256": digest,
         "covers_seq": seq, "snapshot_ref": (workspace or {}).get("snapshot_ref")},
        then(cp_id, generation) if then is not None else None)
    return Checkpoint(cp_id, thread.key, generation, seq, reason, now, digest, version,
                      rendered, workspace, None, data)


def verify(cp: Checkpoint) -> str | None:
    """None when the stored bytes match their hash, else what is wrong (a pruned capsule is
    not corrupt: see ``Checkpoint.pruned``)."""
    if cp.pruned:
        return None
    actual = hashlib.sha256(cp.capsule_bytes).hexdigest()
    if actual != cp.sha256:
        return (f"checkpoint {cp.checkpoint_id} (generation {cp.generation}) is corrupt: "
                f"sha256 {actual[:12]} != recorded {cp.sha256[:12]}")
    return None


def _newest_first(thread: Thread, generation: int | None):
    """Checkpoints from ``generation`` (or the newest) down, read one at a time: the common
    case (the newest verifies) reads one row."""
    upto = generation if generation is not None else 2**62
    while True:
        rows = thread.store.checkpoint_rows(thread.key, upto_generation=upto, newest_first=True,
                                            limit=1)
        if not rows:
            return
        yield _row_to_checkpoint(rows[0])
        upto = rows[0]["generation"] - 1


def load(thread: Thread, generation: int | None = None, *, decode: bool = True) -> LoadedCapsule | None:
    """The newest checkpoint (or the one of ``generation``) whose bytes verify and decode,
    falling back to older ones; ``problems`` says what was skipped.

    A capsule pruned by ``continuation gc`` is never silently replaced by an older one when it
    was asked for by ``generation``: ``CheckpointPruned`` says so. On the fallback (the asked
    one failed its hash), pruned generations are skipped and named once in ``problems``.

    ``decode=False`` (a boundary answering with the stored rendering) only verifies the hash:
    no capsule model is imported or built, and ``capsule`` is None."""
    problems: list[str] = []
    pruned: list[Checkpoint] = []
    for cp in _newest_first(thread, generation):
        if cp.pruned:
            if not problems:  # the one asked for (or the newest) itself
                raise CheckpointPruned(pruned_message(cp))
            pruned.append(cp)
            continue
        if pruned:
            problems.append(_pruned_run(pruned))
            pruned = []
        issue = verify(cp)
        if issue is None and not decode and cp.rendered:
            return LoadedCapsule(cp, None, problems)
        if issue is None:
            from capsule.model import CapsuleFormatError
            from capsule.decode import decode_capsule

            try:
                return LoadedCapsule(cp, decode_capsule(cp.capsule_bytes), problems)
            except CapsuleFormatError as exc:
                issue = f"checkpoint {cp.checkpoint_id} cannot be read: {exc}"
        problems.append(issue + "; using the previous one")
    if pruned:
        problems.append(_pruned_run(pruned))
    if problems:
        raise CheckpointError("; ".join(problems) + " - no valid checkpoint remains")
    return None


def _pruned_run(run: list[Checkpoint]) -> str:
    low, high = run[-1].generation, run[0].generation
    span = f"generation {low}" if low == high else f"generations {low}-{high}"
    return f"the capsules of {span} were pruned by `continuation gc`; skipped"
