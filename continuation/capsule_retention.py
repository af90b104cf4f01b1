"""Retention of the per-generation files under the state home, applied by ``continuation gc``.

Every checkpoint's capsule is stored once in the store: its exact bytes, their sha256 and its
rendering, in the row that ``continuation checkpoints``, ``capsule show --generation``, rewind
and the fallback to a previous capsule read. Two files per generation are conveniences on top:
the human-readable copy ``capsules/<thread>/g<generation>-<hash>.json`` and, when a context was
longer than a runtime's inline limit, its spill file ``contexts/<thread>/g<generation>.md`` that
the inline part points the model to.

Policy: ``gc`` keeps those files for the newest ``CONTINUATION_KEEP_GENERATIONS`` generations of
each thread (default 20, the number of snapshot refs it keeps, so every generation a files
rewind can still name keeps its copy) and deletes older ones; their rows stay, so every
generation is still listed, shown and rewindable (a row whose copy was pruned forgets its
path). A copy no row names (a commit that lost a race, or a crash between the file and the
row) is deleted once its generation is committed or passed.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

DEFAULT_KEEP_GENERATIONS = 20
_GENERATION = re.compile(r"^g(\d+)(?:-[0-9a-f]+)?\.(?:json|md)$")


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


@dataclass
class Pruned:
    files: list[str] = field(default_factory=list)
    bytes: int = 0

    def to_dict(self) -> dict:
        return {"files": self.files, "bytes": self.bytes}


def prune_generation_files(engine, *, keep: int, dry_run: bool = False) -> Pruned:
    """Delete capsule copies and context spill files older than the newest ``keep``
    generations of each thread, and copies no checkpoint row names."""
    if keep < 1:
        raise RetentionError("keep at least 1 generation (the newest capsule's copy)")
    out = Pruned()
    conn = engine.store.conn
    for (thread_key,) in conn.execute("SELECT thread_key FROM threads").fetchall():
        rows = conn.execute("SELECT generation, file_path FROM checkpoints WHERE thread_key=?",
                            (thread_key,)).fetchall()
        if not rows:
            continue
        newest = max(g for g, _ in rows)
        oldest_kept = newest - keep + 1
        named = {os.path.realpath(p): g for g, p in rows if p}
        forget: list[int] = []
        for folder in ("capsules", "contexts"):
            base = engine.home / folder / thread_key
            if not base.is_dir():
                continue
            for path in sorted(base.iterdir()):
                m = _GENERATION.match(path.name)
                if m is None or not path.is_file():
                    continue  # temp files are doctor's (it knows whether a writer still runs)
                generation = int(m.group(1))
                real = os.path.realpath(path)
                orphan = folder == "capsules" and real not in named and generation <= newest
                if generation >= oldest_kept and not orphan:
                    continue
                out.files.append(str(path))
                out.bytes += path.stat().st_size
                if real in named:
                    forget.append(named[real])
                if not dry_run:
                    path.unlink(missing_ok=True)
        if forget and not dry_run:
            with engine.store.transaction() as c:
                c.executemany("UPDATE checkpoints SET file_path=NULL WHERE thread_key=? AND generation=?",
                              [(thread_key, g) for g in forget])
    return out


def describe(pruned: Pruned, keep: int, dry_run: bool) -> str:
    verb = "would delete" if dry_run else "deleted"
    return (f"{verb} {len(pruned.files)} capsule copy / context file(s), {pruned.bytes} bytes "
            f"(keeping the newest {keep} generation(s) per thread; every capsule stays in the store)")
