"""``continuation doctor --salvage``: every readable event of a damaged store, in a new store.

The source is the newest damaged store set aside (``damage.set_aside``) and not salvaged yet,
or the live store itself when it is damaged (it is set aside first). Each event is read on its
own (a damaged page loses the rows on it, not the thread), its text checked as UTF-8 and its
data as JSON; the readable ones are folded into a new store at their own sequence numbers (a
lost event leaves a gap, so every later reference - a checkpoint's seq, a capsule's pointer -
still names the same event), with the checkpoint rows that can be read. The facts recorded by
the store that took over since the damage are appended after them, thread by thread, in their
order (new numbers); that store's own checkpoints stay in it, kept beside the new one as
``<store>.before-salvage-<time>``. Nothing is deleted.

It refuses while a session recorded in the live store is still running (its hooks would write
into the file being replaced); ``force`` overrides.
"""
from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import dataclass, field

from continuation.host import jsontext
from continuation.store.damage import damage_of, set_aside, set_aside_copies
from continuation.store.log_store import IllegalFact, StoreError
from continuation.store.sealed import KeyUnavailable

SALVAGED_MARK = ".salvaged"


@dataclass
class SalvageReport:
    source: str
    events_read: int = 0
    events_lost: list[tuple[str, int]] = field(default_factory=list)
    refused: list[tuple[str, int]] = field(default_factory=list)
    threads: int = 0
    checkpoints: int = 0
    checkpoints_lost: int = 0
    carried: int = 0
    carried_checkpoints: int = 0
    kept_as: str | None = None

    def to_dict(self) -> dict:
        return {"source": self.source, "events_read": self.events_read,
                "events_lost": len(self.events_lost),
                "lost": [{"thread": k, "seq": s} for k, s in self.events_lost[:200]],
                "refused": len(self.refused), "threads": self.threads,
                "checkpoints": self.checkpoints, "checkpoints_lost": self.checkpoints_lost,
                "carried": self.carried, "carried_checkpoints": self.carried_checkpoints,
                "kept_as": self.kept_as}


def _pending_source(store_path: str) -> str | None:
    home, name = os.path.split(store_path)
    pending = [p for p in set_aside_copies(home or ".", name)
               if not os.path.exists(p + SALVAGED_MARK)]
    return pending[-1] if pending else None


def _live_damage(store_path: str) -> str | None:
    """How the live store is damaged (every row read), or None."""
    if not os.path.exists(store_path):
        return None
    try:
        conn = sqlite3.connect(f"file:{store_path}?mode=ro", uri=True)
        try:
            rows = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()]
            if rows != ["ok"]:
                return f"integrity_check: {rows[0][:200]}"
            for (data,) in conn.execute("SELECT data FROM events"):
                jsontext.loads(data)
        finally:
            conn.close()
    except Exception as exc:  # noqa: BLE001 - damage_of decides what counts
        return damage_of(exc) or f"{type(exc).__name__}: {exc}"
    return None


def _rows(conn, sql: str, args=()) -> list | None:
    try:
        return conn.execute(sql, args).fetchall()
    except (sqlite3.DatabaseError, UnicodeDecodeError):  # a damaged page, or a column's name
        return None


def _threads(src) -> list[dict]:
    rows = _rows(src, "SELECT thread_key, runtime, session_id, workspace_root, forked_from,"
                      " forked_at_seq, name, last_seq FROM threads")
    names = ("thread_key", "runtime", "session_id", "workspace_root", "forked_from",
             "forked_at_seq", "name", "last_seq")
    if rows is not None:
        return [dict(zip(names, (_text(v) for v in r))) for r in rows]
    # the thread table is unreadable: the keys from the type index, the rest from the key
    rows = _rows(src, "SELECT DISTINCT thread_key FROM events INDEXED BY events_by_type") or []
    out = []
    for (key,) in rows:
        key = _text(key)
        runtime, _, session = key.partition("-")
        out.append(dict(zip(names, (key, runtime, session or key, None, None, None, None, 0))))
    return out


def _text(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _seqs(src, key: str, last_seq) -> list[int]:
    found = set()
    for sql in ("SELECT seq FROM events WHERE thread_key=?",
                "SELECT seq FROM events INDEXED BY events_by_type WHERE thread_key=?"):
        rows = _rows(src, sql, (key,))
        if rows is not None:
            found.update(int(r[0]) for r in rows)
    top = max([int(last_seq or 0), *found], default=0)
    return list(range(1, top + 1))


def _source_codec(src, home: str):
    """How the damaged store's rows are encoded: its own encryption meta when readable, else
    the state home's remembered one (``sealed.REMEMBERED``)."""
    from continuation.store import sealed

    rows = _rows(src, "SELECT value FROM store_meta WHERE key=?", (sealed.META_KEY,))
    meta = sealed.parse_meta(_text(rows[0][0])) if rows else None
    return sealed.codec_for(meta or sealed.parse_meta(sealed.remembered_text(home)))


def _event(src, key: str, seq: int, codec) -> dict | None:
    rows = _rows(src, "SELECT type, data, ts, source FROM events WHERE thread_key=? AND seq=?",
                 (key, seq))
    if rows is None:  # a column's name damaged in the schema: the columns by their place
        rows = [(r[2], r[4], r[5], r[6]) for r in _rows(
            src, "SELECT * FROM events WHERE thread_key=? AND seq=?", (key, seq)) or ()
            if len(r) == 7]
    if not rows:
        return None
    etype, data, ts, source = rows[0]
    try:
        return {"seq": seq, "type": etype.decode("utf-8"), "data": codec.load(
            data.decode("utf-8")), "ts": float(ts), "source": source.decode("utf-8")}
    except (UnicodeDecodeError, ValueError, TypeError, AttributeError, KeyUnavailable):
        # (a missing key stopped the salvage before any row: a row that does not open now
        # was changed by the damage)
        return None


def _checkpoint_rows(src, report: SalvageReport) -> list[dict]:
    ids = _rows(src, "SELECT checkpoint_id FROM checkpoints") or []
    out = []
    for (cid,) in ids:
        cur = None
        try:
            cur = src.execute("SELECT * FROM checkpoints WHERE checkpoint_id=?", (cid,))
            row = cur.fetchone()
            names = [d[0] for d in cur.description]
            row = {n: (v if n == "capsule" else _text(v)) for n, v in zip(names, row)}
        except (sqlite3.DatabaseError, UnicodeDecodeError, TypeError):
            report.checkpoints_lost += 1
            continue
        out.append(row)
    return out


def salvage(store_path: str, *, force: bool = False) -> SalvageReport:
    """Salvage the damaged store of ``store_path`` (see the module docstring)."""
    from continuation.store.sqlite import SqliteStore

    live_damage = _live_damage(store_path)
    source = store_path if live_damage is not None else _pending_source(store_path)
    if source is None:
        raise StoreError(f"nothing to salvage: the store {store_path} reads whole and no damaged"
                         " store was set aside beside it")
    _refuse_while_running(store_path, force, readable=live_damage is None)
    report = SalvageReport(source=source)
    new_path = f"{store_path}.salvage-{os.getpid()}.new"
    for leftover in (new_path, new_path + "-wal", new_path + "-shm"):
        if os.path.exists(leftover):
            os.unlink(leftover)  # an earlier salvage of this pid that stopped half-way
    repaired = _with_known_schema(source, new_path + ".source")
    src = sqlite3.connect(f"file:{repaired}?mode=ro", uri=True)
    src.text_factory = bytes
    new = SqliteStore(new_path)
    try:
        _copy_source(src, new, report)
        if source != store_path and os.path.exists(store_path):
            _carry_live(store_path, new, report)
    finally:
        src.close()
        new.close()
        for leftover in (repaired, repaired + "-wal", repaired + "-shm"):
            try:
                os.unlink(leftover)
            except OSError:
                pass
    if source == store_path:  # the live store was the damaged one: keep it aside
        report.source = source = set_aside(store_path, live_damage) or store_path
    elif os.path.exists(store_path):
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        report.kept_as = f"{store_path}.before-salvage-{stamp}"
        for suffix in ("-wal", "-shm", "-marks", ""):
            try:
                os.rename(store_path + suffix, report.kept_as + suffix)
            except FileNotFoundError:
                pass
    os.rename(new_path, store_path)
    _mark_whole(store_path)
    with open(source + SALVAGED_MARK, "w", encoding="utf-8") as fh:
        fh.write(jsontext.dumps(report.to_dict()) + "\n")
    from continuation.host import lost_writes

    lost_writes.forget_store_reset(os.path.dirname(store_path) or ".")
    return report


def _with_known_schema(source: str, copy: str) -> str:
    """A copy of ``source`` whose schema entries are the ones this version writes: the store's
    schema is known, so an entry a damaged page garbled (a table's name or column list) is put
    back from a store made afresh, entry by entry in creation order (migrations always make
    them in the same order), keeping each entry's root page; the rows stay untouched."""
    import shutil

    from continuation.store.schema import MIGRATIONS

    shutil.copyfile(source, copy)
    for suffix in ("-wal",):
        if os.path.exists(source + suffix):
            shutil.copyfile(source + suffix, copy + suffix)
    fresh = sqlite3.connect(":memory:")
    for statement in ";".join(MIGRATIONS).split(";"):
        if statement.strip():
            fresh.execute(statement)
    known = fresh.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY rowid"
                          ).fetchall()
    fresh.close()
    conn = sqlite3.connect(copy, isolation_level=None)
    try:
        conn.text_factory = bytes
        conn.execute("PRAGMA writable_schema=ON")
        rows = _rows(conn, "SELECT rowid, type, name, tbl_name, sql FROM sqlite_master"
                           " ORDER BY rowid")
        if rows is not None and len(rows) <= len(known):  # a store of this schema or older
            for (rowid, *found), want in zip(rows, known):
                if [_text(v) for v in found] != list(want):
                    conn.execute("UPDATE sqlite_master SET type=?, name=?, tbl_name=?, sql=?"
                                 " WHERE rowid=?", (*want, rowid))
    except sqlite3.DatabaseError:
        pass  # the schema cannot be put back: read what the damaged one allows
    finally:
        conn.close()
    return copy


def _mark_whole(store_path: str) -> None:
    """The salvaged store's marks: what it holds now (the lost events are counted already)."""
    import shutil

    from continuation.store import marks
    from continuation.store.sqlite import SqliteStore

    shutil.rmtree(marks.folder_of(store_path), ignore_errors=True)
    shutil.rmtree(marks.folder_of(store_path + f".salvage-{os.getpid()}.new"), ignore_errors=True)
    store = SqliteStore(store_path, create=False)
    try:
        for key in store.thread_keys():
            marks.write(marks.folder_of(store_path), key, store.last_seq(key))
    finally:
        store.close()


def _copy_source(src, new, report: SalvageReport) -> None:
    codec = _source_codec(src, os.path.dirname(new.location) or ".")
    for thread in _threads(src):
        key = new.ensure_thread(thread["runtime"], thread["session_id"],
                                workspace_root=thread["workspace_root"],
                                forked_from=thread["forked_from"],
                                forked_at_seq=thread["forked_at_seq"], name=thread["name"])
        report.threads += 1
        for seq in _seqs(src, thread["thread_key"], thread["last_seq"]):
            event = _event(src, thread["thread_key"], seq, codec)
            if event is None:
                report.events_lost.append((key, seq))
                continue
            try:
                done = new.append_at_seq(key, event)
            except Exception:  # noqa: BLE001 - damaged data the reducer cannot fold
                done = None
            if done is None:
                report.refused.append((key, seq))
            else:
                report.events_read += 1
    for row in _checkpoint_rows(src, report):
        try:
            new.store_checkpoint_row_as_is(row)
            report.checkpoints += 1
        except sqlite3.DatabaseError:
            report.checkpoints_lost += 1


def _carry_live(store_path: str, new, report: SalvageReport) -> None:
    """The facts the store that took over recorded, after the salvaged ones."""
    from continuation.store.sqlite import SqliteStore

    live = SqliteStore(store_path, create=False)
    try:
        for thread in live.threads():
            key = new.ensure_thread(thread["runtime"], thread["session_id"],
                                    workspace_root=thread["workspace_root"],
                                    forked_from=thread["forked_from"],
                                    forked_at_seq=thread["forked_at_seq"], name=thread["name"])
            for event in live.events(thread["thread_key"]):
                try:
                    if new.append(key, event["type"], event["data"], source=event["source"],
                                  ts=event["ts"]).seq is not None:
                        report.carried += 1
                except (IllegalFact, KeyError, TypeError, ValueError):
                    report.refused.append((key, event["seq"]))
            report.carried_checkpoints += len(live.checkpoint_rows(thread["thread_key"]))
    finally:
        live.close()


def _refuse_while_running(store_path: str, force: bool, *, readable: bool) -> None:
    if force or not readable:
        return
    from continuation.host import liveness
    from continuation.store.sqlite import SqliteStore

    live = SqliteStore(store_path, create=False)
    try:
        running = [s for s in live.sessions() if s.get("ended_at") is None
                   and liveness.owner_status(s) == liveness.ALIVE]
    finally:
        live.close()
    if running:
        raise StoreError(f"{len(running)} session(s) recorded in {store_path} are still running "
                         f"(pid {', '.join(str(s['pid']) for s in running[:5])}): stop the agents "
                         "first (their hooks write into the store being replaced), or pass --force")
