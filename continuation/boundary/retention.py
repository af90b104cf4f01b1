"""Retention of checkpoint data, applied by ``continuation gc``.

What a boundary stores: one checkpoint row holding the capsule once (its exact bytes and their
sha256) plus its rendering (the block a SessionStart answer delivers without building a model),
and, only when the assembled context is longer than the runtime's inline limit, the spill file
``contexts/<thread>/g<generation>.md`` the inline part points the model to. ``continuation
handoff`` adds ``handoff/<thread>/g<generation>.md``. Earlier versions also wrote a JSON
copy ``capsules/<thread>/g<generation>-<hash>.json`` per boundary; nothing ever read it (the row
holds the same bytes, verified by their hash), so ``gc`` deletes every such copy.

The policy, in order (one generation's *payload* = its capsule bytes + rendering + files):

1. ``CONTINUATION_KEEP_GENERATIONS`` (default 20, ``--keep``): the newest N generations of each
   thread keep their whole payload. N is also how many snapshot refs per thread ``gc`` keeps, so
   every generation a files rewind can still reach has it all. Older generations lose their
   rendering and files; the capsule bytes stay, so every checkpoint is still listed, shown
   (rendered again from the bytes) and rewindable.
2. ``CONTINUATION_KEEP_BYTES`` (default 256 MiB, ``--keep-bytes``; ``K``/``M``/``G`` suffixes
   are KiB/MiB/GiB, 0 allowed): a cap on the payload of the whole state home (all threads:
   it is the state home's disk use a user budgets, and a per-thread cap would grow with the
   number of sessions). While the payload left after step 1 is over the cap, whole generations
   are pruned oldest first (by commit time, across threads), never the newest generation of a
   thread: capsule bytes, rendering and files go, the row stays (id, generation, events
   covered, reason, time, workspace snapshot, sha256). It is still listed and a rewind to it
   works (the capsule of a rewind is built from the event log); ``capsule show --generation``
   says it was pruned (``checkpoints.CheckpointPruned``). When the newest generations alone
   exceed the cap, they are kept and the report says by how much.

Why 256 MiB: a capsule is budgeted to 16 KiB and its rendering is about as large; measured
(``scripts/measure_checkpoint_bytes.py``) a whole generation is ~35 KB (capsule, rendering,
spilled context) and an older one ~13 KB, so the whole windows of 100 threads take ~70 MB and
the rest holds ~15,000 older capsules: two years of a heavy user's boundaries (20 a day). The
cap is there to stop unbounded growth, not to be hit by ordinary use.

Not counted: the event log (the durable facts are never pruned by a cap) and git objects of
snapshots (bounded by the refs ``gc`` keeps; git's own gc, or ``gc_shadow`` for shadow
repositories, collects them). With SQLite, freed row space is reused by later rows: the file
stops growing but does not shrink (no VACUUM: it would block every hook while it runs).
With a server store the rows are the team's: the cap applies to all of them.

A pruned capsule is marked by empty bytes (an encoded capsule never is): no schema change, and
older versions reading the row report it as failing its hash rather than misreading it.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_KEEP_GENERATIONS = 20
DEFAULT_KEEP_BYTES = 256 * 1024 ** 2
#: per-thread folders of generation files: spilled contexts, handoff prompts
GENERATION_FOLDERS = ("contexts", "handoff")
#: the per-boundary JSON copies of earlier versions
LEGACY_COPIES = "capsules"
# g<generation>[-<hash>][.work<page>|.part<n>].(json|md): contexts, handoffs, the work record
_GENERATION = re.compile(r"^g(\d+)(?:-[0-9a-f]+)?(?:\.work\d*|\.part\d+)?\.(?:json|md)$")
_SIZE = re.compile(r"^(\d+)\s*([kmg]?)(?:i?b)?$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}


class RetentionError(ValueError):
    pass


def keep_generations(env=None) -> int:
    """``CONTINUATION_KEEP_GENERATIONS`` (a positive integer), else the default."""
    raw = (env if env is not None else os.environ).get("CONTINUATION_KEEP_GENERATIONS", "").strip()
    if not raw:
        return DEFAULT_KEEP_GENERATIONS
    if not raw.isdigit() or int(raw) < 1:
        raise RetentionError(f"CONTINUATION_KEEP_GENERATIONS must be a positive integer, not {raw!r}")
    return int(raw)


def parse_size(raw: str, what: str) -> int:
    """Bytes from ``12345``, ``512K``, ``256M``, ``1G`` (also ``MiB``, ``MB``: powers of 1024)."""
    m = _SIZE.match(raw.strip())
    if m is None:
        raise RetentionError(f"{what} must be a size in bytes (e.g. 268435456, 512K, 256M, 1G), "
                             f"not {raw!r}")
    return int(m.group(1)) * _UNITS[m.group(2).lower()]


def keep_bytes(env=None) -> int:
    """``CONTINUATION_KEEP_BYTES``, else the default."""
    raw = (env if env is not None else os.environ).get("CONTINUATION_KEEP_BYTES", "").strip()
    return parse_size(raw, "CONTINUATION_KEEP_BYTES") if raw else DEFAULT_KEEP_BYTES


@dataclass
class _Generation:
    """One checkpoint's prunable payload."""
    thread_key: str
    generation: int
    created_at: float
    capsule: int  # bytes left in the row
    rendered: int
    files: list[Path] = field(default_factory=list)
    file_bytes: int = 0
    newest: bool = False

    @property
    def size(self) -> int:
        return self.capsule + self.rendered + self.file_bytes


@dataclass
class Pruned:
    """What gc deleted (or, dry, would delete), and what the payload is after it."""
    files: list[str] = field(default_factory=list)
    file_bytes: int = 0
    legacy_copies: int = 0
    renderings: int = 0
    rendering_bytes: int = 0
    capsules: int = 0
    capsule_bytes: int = 0
    kept_bytes: int = 0
    cap: int = 0
    over_cap: int = 0  # bytes above the cap held by the newest generations, which always stay

    @property
    def freed(self) -> int:
        return self.file_bytes + self.rendering_bytes + self.capsule_bytes

    @property
    def anything(self) -> bool:
        return bool(self.files or self.renderings or self.capsules)

    def to_dict(self) -> dict:
        return {"files": self.files, "file_bytes": self.file_bytes,
                "legacy_copies": self.legacy_copies, "renderings": self.renderings,
                "rendering_bytes": self.rendering_bytes, "capsules": self.capsules,
                "capsule_bytes": self.capsule_bytes, "bytes": self.freed,
                "kept_bytes": self.kept_bytes, "cap": self.cap, "over_cap": self.over_cap}


def _generations(engine) -> dict[tuple[str, int], _Generation]:
    """Every checkpoint's payload, sizes read by the database (no blob is loaded)."""
    rows = engine.store.checkpoint_sizes()
    out = {(k, g): _Generation(k, g, float(t or 0), int(c or 0), int(r or 0))
           for k, g, t, c, r in rows}
    newest: dict[str, int] = {}
    for k, g in out:
        newest[k] = max(g, newest.get(k, g))
    for k, g in newest.items():
        out[(k, g)].newest = True
    return out


def _files(home: Path, folder: str, thread_key: str):
    """(generation, path, bytes) of a thread's generation files in ``folder``; temp files are
    doctor's (it knows whether a writer still runs)."""
    base = home / folder / thread_key
    if not base.is_dir():
        return
    for path in sorted(base.iterdir()):
        m = _GENERATION.match(path.name)
        if m is None or not path.is_file() or path.is_symlink():
            continue
        try:
            size = path.stat().st_size
        except OSError:  # gone meanwhile (another gc, a thread delete)
            continue
        yield int(m.group(1)), path, size


def prune(engine, *, keep: int, cap: int, dry_run: bool = False) -> Pruned:
    """Apply the policy (module docstring) to the whole state home."""
    if keep < 1:
        raise RetentionError("keep at least 1 generation (the newest capsule)")
    if cap < 0:
        raise RetentionError("the byte cap cannot be negative")
    home = Path(engine.home)
    gens = _generations(engine)
    out = Pruned(cap=cap)
    doomed_files: list[Path] = []
    forget_copy: list[tuple[str, int]] = []
    newest = {k: g for (k, g), gen in gens.items() if gen.newest}
    for thread_key in newest:
        for generation, path, size in _files(home, LEGACY_COPIES, thread_key):
            doomed_files.append(path)
            out.file_bytes += size
            out.legacy_copies += 1
            forget_copy.append((thread_key, generation))
        for folder in GENERATION_FOLDERS:
            for generation, path, size in _files(home, folder, thread_key):
                gen = gens.get((thread_key, generation))
                if gen is None:  # no checkpoint of that generation: nothing can name the file
                    if generation <= newest[thread_key]:
                        doomed_files.append(path)
                        out.file_bytes += size
                    continue
                gen.files.append(path)
                gen.file_bytes += size

    drop_rendering: list[_Generation] = []
    drop_capsule: list[_Generation] = []

    def drop_files(gen: _Generation) -> None:
        doomed_files.extend(gen.files)
        out.file_bytes += gen.file_bytes
        gen.files, gen.file_bytes = [], 0

    def drop_rendered(gen: _Generation) -> None:
        if gen.rendered:
            drop_rendering.append(gen)
            out.renderings += 1
            out.rendering_bytes += gen.rendered
            gen.rendered = 0

    # 1. beyond the newest `keep` generations of a thread: the capsule bytes alone stay
    for gen in gens.values():
        if gen.generation <= newest[gen.thread_key] - keep:
            drop_files(gen)
            drop_rendered(gen)
    # 2. the cap: whole generations, oldest first, never a thread's newest
    total = sum(g.size for g in gens.values())
    for gen in sorted(gens.values(), key=lambda g: (g.created_at, g.thread_key, g.generation)):
        if total <= cap:
            break
        if gen.newest or gen.size == 0:
            continue
        total -= gen.size
        drop_files(gen)
        drop_rendered(gen)
        if gen.capsule:
            drop_capsule.append(gen)
            out.capsules += 1
            out.capsule_bytes += gen.capsule
            gen.capsule = 0
    out.kept_bytes = total
    out.over_cap = max(0, total - cap)
    out.files = [str(p) for p in doomed_files]
    if dry_run:
        return out
    for path in doomed_files:
        path.unlink(missing_ok=True)
    if forget_copy or drop_rendering or drop_capsule:
        engine.store.prune_checkpoint_data(
            forget_copy=forget_copy,
            drop_rendering=[(g.thread_key, g.generation) for g in drop_rendering],
            drop_capsule=[(g.thread_key, g.generation) for g in drop_capsule])
    return out


def describe(pruned: Pruned, keep: int, dry_run: bool) -> list[str]:
    """The lines ``gc`` prints about checkpoint data (sizes as :mod:`continuation.host.units`
    writes them; ``--json`` gives bytes)."""
    from continuation.host.units import size_text

    lines = []
    if pruned.anything:
        legacy = f", {pruned.legacy_copies} of them old capsule copies" if pruned.legacy_copies else ""
        parts = [(len(pruned.files), "file(s)", pruned.file_bytes, legacy),
                 (pruned.renderings, "rendering(s)", pruned.rendering_bytes, ""),
                 (pruned.capsules, "capsule(s)", pruned.capsule_bytes, "")]
        lines.append(f"{'would free' if dry_run else 'freed'} {size_text(pruned.freed)} of "
                     "checkpoint data: " + ", ".join(f"{n} {what} ({size_text(nbytes)}{extra})"
                                                     for n, what, nbytes, extra in parts if n))
    lines.append(f"checkpoint data {'left' if dry_run else 'kept'}: {size_text(pruned.kept_bytes)} "
                 f"(cap {size_text(pruned.cap)}; the newest {keep} generation(s) of each thread "
                 "whole, older ones as capsule bytes)")
    if pruned.over_cap:
        lines.append(f"warning: the newest generation of each thread alone is "
                     f"{size_text(pruned.over_cap)} over the cap (the newest is never pruned)")
    return lines
