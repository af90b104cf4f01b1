"""``continuation doctor``: the checks, as data. Each finding has a status and, when something
is wrong, a one-line suggestion. Nothing here changes anything unless ``fix=True``.

Checks: store (file, schema version, ``PRAGMA integrity_check``, derived tables = replay of the
log), checkpoints (stored capsules verify against their sha256; each snapshot ref names the
commit its checkpoint records), workspace locks, orphaned
snapshot refs (``refs/continuation/<thread>`` whose thread no longer exists), disk usage of the
state home, stale temp files, and the hooks (installed? trusted?) of Codex CLI and Claude Code.
"""
from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from continuation.store.sqlite import file_integrity
from continuation.host.units import size_text, utc_time

OK, INFO, WARN, PROBLEM = "ok", "info", "warn", "problem"


@dataclass
class Finding:
    check: str
    status: str
    message: str
    suggestion: str = ""
    data: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"check": self.check, "status": self.status, "message": self.message,
                "suggestion": self.suggestion, "data": self.data}


# -- store -------------------------------------------------------------------------------------
def damaged_store_advice(path: Path) -> str:
    return ("stop the agents, then run `continuation doctor --salvage`: it sets the damaged "
            "store aside (kept) and copies every readable event into a new one")


def check_server_store(home: Path) -> tuple[list[Finding], bool]:
    """A store on a server (CONTINUATION_STORE): reachable, and its schema version."""
    from continuation.store import StoreError, open_store
    from continuation.store.schema import SCHEMA_VERSION

    from continuation.store.spool import pending

    spooled = pending(str(home))
    out = [Finding("store.spool", WARN if spooled else OK,
                   f"{spooled} fact(s) recorded on this machine while the server was "
                   "unreachable wait in the local spool" if spooled else "no spooled facts",
                   "the next hook or command that reaches the server drains them" if spooled
                   else "", data={"spooled": spooled}), check_relay(home)]
    try:
        store = open_store(str(home), create=False)
    except StoreError as exc:
        return out + [Finding("store", PROBLEM, str(exc),
                              "check CONTINUATION_STORE and that the server is up")], False
    if getattr(store, "stale", False):
        store.close()
        return out + [Finding("store", PROBLEM, f"the server {store.server} cannot be reached: "
                              f"{store.reason}", "check CONTINUATION_STORE and that the server "
                              "is up")], False
    try:
        version = store.schema_version
        return out + [Finding("store", OK, f"store at {store.location}"),
                Finding("store.version", OK, f"schema version {version} (current {SCHEMA_VERSION})",
                        data={"version": version, "current": SCHEMA_VERSION})], True
    finally:
        store.close()


def check_relay(home: Path) -> Finding:
    """The local relay hooks reach the server through: running or not, since when, what it
    served (``store.relay``)."""
    from continuation.host.units import utc_time
    from continuation.store import relay_client, relay_wire, store_url

    url = store_url(str(home))
    if not relay_client.enabled():
        return Finding("store.relay", INFO, f"off ({relay_client.ENV}=off): each hook connects "
                       "to the server itself", data={"running": False, "enabled": False})
    if relay_wire.private_dir(create=False) is None and os.path.exists(relay_wire.relay_dir()):
        return Finding("store.relay", WARN, f"the relay folder {relay_wire.relay_dir()} is not "
                       "private to this user (mode 0700, owned by you): hooks connect to the "
                       "server themselves", f"remove it, or set {relay_wire.DIR_ENV}",
                       data={"running": False, "enabled": True})
    if relay_wire.too_long(relay_wire.relay_dir()):
        return Finding("store.relay", WARN, f"the relay folder {relay_wire.relay_dir()} is too "
                       "long a path for a socket's name: hooks connect to the server themselves",
                       f"set {relay_wire.DIR_ENV} to a shorter folder",
                       data={"running": False, "enabled": True})
    state = relay_client.status(url)
    if state is None:
        return Finding("store.relay", INFO, "not running (the next hook starts it; it leaves "
                       "when idle)", data={"running": False, "enabled": True})
    since = utc_time(state["since"])
    return Finding("store.relay", OK,
                   f"running, pid {state['pid']}, since {since}: {state['connections']} "
                   f"connection(s), {state['statements']} statement(s) served"
                   + (f", {state['refused']} refused (another user)" if state["refused"] else ""),
                   data={"running": True, "enabled": True, **state})


def check_store(path: Path, *, read_only: bool = False) -> tuple[list[Finding], bool]:
    """Findings, and whether the store can be opened for the other checks. ``read_only``: the
    state home cannot be written (SQLite may be unable to open its shared-memory file; the
    store is then read as an immutable file when nothing waits in its write-ahead log)."""
    from continuation.store.schema import SCHEMA_VERSION

    if not path.exists():
        return [Finding("store", INFO, f"no store yet at {path} (nothing recorded)")], False
    def read(mode: str):
        return file_integrity(path, mode)

    try:
        wal_bytes = os.path.getsize(f"{path}-wal")
    except OSError:
        wal_bytes = 0
    try:
        version, rows = read("mode=ro")
    except sqlite3.DatabaseError as exc:
        # SQLite could not make or grow its shared-memory file (a full or read-only home). The
        # file alone is the whole store only when no write-ahead log waits to be merged.
        if wal_bytes:
            return [Finding("store", PROBLEM, f"the store {path} cannot be opened now ({exc}) and "
                            f"its write-ahead log holds {wal_bytes} bytes not merged yet, so it "
                            "cannot be checked", "free space in (or make writable) the state "
                            "home, then run `continuation doctor` again")], False
        try:
            version, rows = read("immutable=1")
        except sqlite3.DatabaseError:
            return [Finding("store", PROBLEM, f"the store {path} cannot be read: {exc}",
                            damaged_store_advice(path))], False
        if not read_only:
            return [Finding("store", PROBLEM, f"the store {path} can be read only as an "
                            f"immutable file ({exc}): is the state home full?",
                            "free space in the state home")], False
    out = []
    if version > SCHEMA_VERSION:
        out.append(Finding("store.version", PROBLEM,
                           f"schema version {version} is newer than this continuation "
                           f"({SCHEMA_VERSION})", "upgrade continuation"))
        return out, False
    out.append(Finding("store.version", OK, f"schema version {version} (current {SCHEMA_VERSION})"
                       + ("; it will be migrated on next use" if version < SCHEMA_VERSION else ""),
                       data={"version": version, "current": SCHEMA_VERSION}))
    if rows == ["ok"]:
        out.append(Finding("store.integrity", OK, "PRAGMA integrity_check: ok"))
        return out, True
    out.append(Finding("store.integrity", PROBLEM,
                       f"PRAGMA integrity_check reports {len(rows)} problem(s): {rows[0][:200]}",
                       damaged_store_advice(path), data={"report": rows[:20]}))
    return out, False


def check_set_aside(path: Path) -> list[Finding]:
    """Damaged stores set aside beside ``path`` whose events were not salvaged yet."""
    from continuation.store.damage import set_aside_copies
    from continuation.store.salvage import SALVAGED_MARK

    waiting = [p for p in set_aside_copies(str(path.parent), path.name)
               if not os.path.exists(p + SALVAGED_MARK)]
    if not waiting:
        return []
    why = ""
    try:
        with open(waiting[-1] + ".why", encoding="utf-8") as fh:
            why = fh.readline().strip()
    except OSError:
        pass
    return [Finding("store.set_aside", PROBLEM,
                    f"{len(waiting)} damaged store(s) set aside, not salvaged: {waiting[-1]}"
                    + (f" ({why[:160]})" if why else ""),
                    "run `continuation doctor --salvage` to copy their readable events into "
                    "the store", data={"set_aside": waiting})]


def check_acknowledged(engine, *, fix: bool = False) -> list[Finding]:
    """Each thread holds every fact its commits acknowledged (``store.marks``): a store that
    is behind lost them (a crash copy, a restored backup, a write-ahead log cut short), which
    ``integrity_check`` cannot see."""
    store = engine.store
    if not hasattr(store, "acknowledged_marks"):
        return []  # a server store: the server's own durability
    keys = set(store.thread_keys())
    acked = store.acknowledged_marks()
    behind = [(key, seq, store.last_seq(key) if key in keys else 0)
              for key, seq in sorted(acked.items())]
    behind = [(key, seq, held) for key, seq, held in behind if seq > held]
    if not behind:
        return [Finding("store.acknowledged", OK, f"every thread holds what its commits "
                        f"acknowledged ({len(acked)} thread(s) marked)")]
    if fix:
        from continuation.store import marks

        for key, _, held in behind:
            marks.write(marks.folder_of(str(store.path)), key, held)
        return [Finding("store.acknowledged", OK, f"accepted the store as it is: {len(behind)} "
                        "thread(s) marked at what they hold")]
    return [Finding("store.acknowledged", PROBLEM,
                    f"thread {key}: commits acknowledged facts up to seq {seq}, the store holds "
                    f"up to {held} ({seq - held} lost: a crash copy, a restored backup or a "
                    "write-ahead log cut short)",
                    "put back a copy of the store that holds them if you have one; `continuation "
                    "doctor --fix` accepts the store as it is",
                    data={"thread": key, "acknowledged": seq, "held": held})
            for key, seq, held in behind]


def check_derived(engine, *, fix: bool = False) -> list[Finding]:
    """The derived tables of every thread must equal the replay of its log."""
    bad = []
    for thread in engine.threads():
        try:
            same = engine.store.derived_state(thread.key).snapshot() == \
                engine.store.replay(thread.key).snapshot()
        except Exception as exc:  # an unreadable event: report, never crash the doctor
            bad.append((thread.key, str(exc)))
            continue
        if not same:
            if fix:
                engine.store.rebuild(thread.key)
                continue
            bad.append((thread.key, "derived tables differ from the replay of the log"))
    if not bad:
        return [Finding("store.derived", OK, "derived state equals the replay of the log"
                        + (" (rebuilt where needed)" if fix else ""))]
    return [Finding("store.derived", PROBLEM, f"thread {k}: {why}",
                    "run `continuation doctor --fix` to rebuild the derived tables from the log",
                    data={"thread": k}) for k, why in bad]


def check_checkpoints(engine) -> list[Finding]:
    from continuation.boundary import checkpoints

    out = []
    total = pruned = 0
    for thread in engine.threads():
        cps = checkpoints.list_checkpoints(thread)
        total += len(cps)
        pruned += sum(cp.pruned for cp in cps)
        issues = [checkpoints.verify(cp) for cp in cps]
        bad = [i for i in issues if i]
        if not bad:
            continue
        good_left = len(cps) - len(bad) - sum(cp.pruned for cp in cps)
        newest_bad = issues[-1] is not None if issues else False
        out.append(Finding(
            "checkpoints", PROBLEM if good_left == 0 else WARN,
            f"thread {thread.key}: {len(bad)} of {len(cps)} checkpoint(s) fail their sha256: {bad[0]}",
            "the previous valid checkpoint is used" + (
                "; take a new one with the next boundary" if newest_bad else "")
            if good_left else "no valid checkpoint remains: the next boundary writes a new one",
            data={"thread": thread.key, "corrupt": bad}))
    kept = f" ({pruned} of them pruned by `continuation gc`: listed, no capsule)" if pruned else ""
    return out or [Finding("checkpoints", OK, f"{total} checkpoint(s) verify against their sha256"
                           + kept)]


# -- files -------------------------------------------------------------------------------------
def check_locks(home: Path) -> list[Finding]:
    from filelock import FileLock, Timeout

    out = []
    workspaces = home / "workspaces"
    if workspaces.is_dir():
        for ws in sorted(workspaces.iterdir()):
            lock_path = ws / "lock"
            if not lock_path.exists():
                continue
            lock = FileLock(str(lock_path), timeout=0, mode=0o600)
            try:
                lock.acquire()
                lock.release()
            except Timeout:
                out.append(Finding("locks", INFO, f"workspace {ws.name} is locked now (a snapshot "
                                   "or restore is running)", data={"lock": str(lock_path)}))
    return out or [Finding("locks", OK, "no workspace lock is held")]


def check_temps(home: Path, *, fix: bool = False, min_age: float | None = None) -> list[Finding]:
    from continuation.recovery.cleanup import STALE_AFTER_S, remove_stale, stale_temps

    age = STALE_AFTER_S if min_age is None else min_age
    stale = stale_temps(home, min_age=age)
    if not stale:
        return [Finding("temps", OK, "no stale temp files")]
    if fix:
        removed = remove_stale(home, min_age=age)
        left = [p for p in stale if p.exists()]
        return [Finding("temps", OK if not left else WARN,
                        f"removed {len(removed)} stale temp file(s)" + (
                            f"; {len(left)} left (busy workspace)" if left else ""),
                        data={"removed": [str(p) for p in removed]})]
    return [Finding("temps", WARN, f"{len(stale)} stale temp file(s) left by killed writers, "
                    f"e.g. {stale[0]}", "run `continuation doctor --fix` to remove them",
                    data={"files": [str(p) for p in stale[:50]]})]


def disk_usage(home: Path) -> Finding:
    sizes: dict[str, int] = {}
    total = 0
    for folder, _dirs, files in os.walk(home):
        rel = Path(folder).relative_to(home).parts
        key = rel[0] if rel else "."
        for name in files:
            try:
                size = os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                continue
            sizes[key] = sizes.get(key, 0) + size
            total += size
    parts = ", ".join(f"{k} {size_text(v)}" for k, v in sorted(sizes.items(), key=lambda kv: -kv[1])[:6])
    return Finding("disk", INFO, f"state home {home} uses {size_text(total)}" + (f" ({parts})" if parts else ""),
                   data={"total_bytes": total, "by_folder": sizes})


# -- workspace refs ------------------------------------------------------------------------------
def check_refs(engine, *, fix: bool = False) -> list[Finding]:
    from continuation.workspace import list_snapshot_refs
    from continuation.workspace import delete_thread_refs

    rows = engine.store.threads()
    known = {r["thread_key"] for r in rows}
    roots = sorted({r["workspace_root"] for r in rows if r["workspace_root"]})
    out = []
    for root in roots:
        if not Path(root).is_dir():
            continue
        try:
            refs = list_snapshot_refs(root, state_home=engine.home)
        except Exception as exc:
            out.append(Finding("refs", WARN, f"cannot list snapshot refs in {root}: {exc}"))
            continue
        # refs another state home wrote in this repository are not orphans of this one
        refs = [r for r in refs if r.owned_by(engine.home)]
        orphans = sorted({r.thread_key for r in refs if r.thread_key not in known})
        for key in orphans:
            names = [r.ref for r in refs if r.thread_key == key]
            if fix:
                try:
                    delete_thread_refs(root, key, state_home=engine.home, lock_timeout=10)
                    out.append(Finding("refs", OK, f"deleted {len(names)} orphaned ref(s) of "
                                       f"{key} in {root}"))
                    continue
                except Exception as exc:
                    out.append(Finding("refs", WARN, f"cannot delete refs of {key}: {exc}"))
                    continue
            out.append(Finding("refs", WARN, f"{len(names)} orphaned snapshot ref(s) in {root} for "
                               f"thread {key}, which no longer exists (e.g. {names[0]})",
                               "run `continuation doctor --fix` to delete them (git gc then frees "
                               "the objects)", data={"root": root, "thread": key, "refs": names}))
    return out or [Finding("refs", OK, f"no orphaned snapshot refs in {len(roots)} workspace(s)")]


def _recorded_snapshots(engine) -> dict[str, list[tuple[str, str, str, int]]]:
    """root -> (checkpoint id, ref, recorded commit, generation) of every checkpoint with a
    snapshot ref."""
    import json

    by_root: dict[str, list[tuple[str, str, str, int]]] = {}
    for cp_id, generation, text in engine.store.snapshot_workspaces():
        try:
            ws = json.loads(text)
        except ValueError:
            continue
        if not isinstance(ws, dict):
            continue
        ref, commit, root = ws.get("snapshot_ref"), ws.get("snapshot_commit"), ws.get("root")
        if all(isinstance(v, str) and v for v in (ref, commit, root)):
            by_root.setdefault(root, []).append((cp_id, ref, commit, generation))
    return by_root


def check_checkpoint_refs(engine, *, fix: bool = False) -> list[Finding]:
    """Every checkpoint's snapshot ref must name the commit the checkpoint records: a ref moved
    by another snapshot leaves the recorded commit unprotected, and ``git gc`` then deletes the
    files a rewind of that checkpoint needs. A ref that is gone (``gc --keep`` pruned it, or it
    was deleted) is counted, not blamed. ``fix``: point the ref back at the recorded commit
    while git still has it, unless the commit it names now is another checkpoint's."""
    from continuation.workspace import list_snapshot_refs, repoint_snapshot_ref

    out: list[Finding] = []
    checked = gone = 0
    for root, items in sorted(_recorded_snapshots(engine).items()):
        if not Path(root).is_dir():
            continue
        try:
            names = {r.ref: r.commit for r in list_snapshot_refs(root, state_home=engine.home)}
        except Exception as exc:
            out.append(Finding("checkpoints.refs", WARN, f"cannot list snapshot refs in {root}: {exc}"))
            continue
        recorded = {commit for _, _, commit, _ in items}
        for cp_id, ref, commit, generation in items:
            checked += 1
            named = names.get(ref)
            if named is None:
                gone += 1
                continue
            if named == commit:
                continue
            what = (f"checkpoint {cp_id} (generation {generation}) records snapshot {commit[:12]} "
                    f"but its ref {ref} names {named[:12]} in {root}")
            if fix and named not in recorded and repoint_snapshot_ref(
                    root, ref, commit, named, state_home=engine.home):
                out.append(Finding("checkpoints.refs", OK, f"{what}: pointed the ref back at "
                                   "the recorded snapshot"))
                continue
            out.append(Finding(
                "checkpoints.refs", PROBLEM,
                f"{what}: nothing keeps the recorded snapshot, and after `git gc` its files "
                "cannot be restored" + (" (git no longer has it, or the ref is another "
                                        "checkpoint's)" if fix else ""),
                "run `continuation doctor --fix` to point the ref back at it while git still has "
                "it; take a new checkpoint (`continuation checkpoint`) to protect the current files",
                data={"checkpoint": cp_id, "ref": ref, "recorded": commit, "ref_names": named,
                      "root": root}))
    if not any(f.status != OK for f in out):
        message = f"{checked} checkpoint snapshot ref(s) name the commit their checkpoint records"
        if gone:
            message += f"; {gone} ref(s) are gone (pruned or deleted: those files cannot be restored)"
        out.append(Finding("checkpoints.refs", OK if not gone else INFO, message,
                           data={"checked": checked, "gone": gone}))
    return out


def check_interrupted(engine) -> list[Finding]:
    """Threads whose owner is gone without a clean end (reported, never recorded here)."""
    from continuation.recovery.interrupted import detect

    items = detect(engine)
    if not items:
        return [Finding("sessions", OK, "no interrupted threads")]
    return [Finding("sessions", INFO, f"{len(items)} interrupted thread(s): "
                    + ", ".join(i.thread_key for i in items[:5]),
                    "run `continuation recover` to look at them",
                    data={"threads": [i.thread_key for i in items]})]


# -- hooks ------------------------------------------------------------------------------------
def check_hooks(home: Path, project_dir: Path, user_home: Path | None = None) -> list[Finding]:
    try:
        from continuation.install import status
    except Exception as exc:  # the installer is optional for the doctor
        return [Finding("hooks", INFO, f"cannot check the hooks: {exc}")]
    user_home = user_home or Path.home()
    out = []
    installed_any = False
    for runtime in ("codex", "claude", "gemini"):
        for scope in ("user", "project"):
            try:
                st = status(runtime, scope, project_dir=project_dir, home=user_home, state_home=home)
            except Exception as exc:
                out.append(Finding("hooks", WARN, f"{runtime} ({scope}): cannot read: {exc}"))
                continue
            where = f"{runtime} {scope} hooks ({st['path']})"
            if not st.get("valid", True):
                out.append(Finding("hooks", PROBLEM, f"{where}: unreadable: {st.get('error')}",
                                   f"fix the JSON of {st['path']}"))
                continue
            if not st["events"]:
                continue
            installed_any = True
            if st["missing_events"]:
                out.append(Finding("hooks", PROBLEM, f"{where}: missing events "
                                   f"{', '.join(st['missing_events'])}",
                                   f"run `continuation install --runtime {runtime} --scope {scope}`"))
                continue
            trust = st.get("trust")
            if runtime == "gemini" and trust and not trust.get("all_trusted"):
                out.append(Finding("hooks", PROBLEM, f"{where}: installed but switched off in the "
                                   "Gemini CLI settings (hooksConfig.enabled false, or 'continuation' "
                                   "in hooksConfig.disabled)", trust.get("howto")))
                continue
            if trust and not trust.get("all_trusted"):
                states = ", ".join(f"{e}={s}" for e, s in sorted(trust.get("hooks", {}).items())
                                   if s != "trusted")
                out.append(Finding("hooks", PROBLEM, f"{where}: installed but not trusted by "
                                   f"Codex ({states}); Codex skips them silently",
                                   trust.get("howto") or "trust them with /hooks in codex"))
                continue
            if trust and scope == "project" and trust.get("project_trusted") is False:
                out.append(Finding("hooks", WARN, f"{where}: the project is not trusted by Codex, "
                                   "so its .codex/ folder is not loaded",
                                   "trust the folder when Codex asks"))
                continue
            out.append(Finding("hooks", OK, f"{where}: installed" + (" and trusted" if trust else ""),
                               data={"runtime": runtime, "scope": scope}))
            slower = _slower_launched(st.get("commands") or [])
            if slower:
                command, why = slower[0]
                again = " (Codex then asks to trust them again: /hooks)" if runtime == "codex" else ""
                out.append(Finding("hooks", INFO, f"{where}: started through {command!r}, {why}",
                                   f"run `continuation install --runtime {runtime} --scope "
                                   f"{scope}` again for `<python> -P <package>/__main__.py`"
                                   f"{again}"))
    if not installed_any:
        out.append(Finding("hooks", PROBLEM, "no continuation hooks are installed for Codex CLI, "
                           "Claude Code or Gemini CLI", "run `continuation install --runtime codex`, "
                           "`--runtime claude` or `--runtime gemini`"))
    return out


#: hook launchers from the slowest: pip's script (imports ``re``), ``-m continuation``
#: (imports ``runpy``), the package's ``__main__.py`` by its path (``install.core.default_command``)
_LAUNCHERS = ("script", "module", "main")
_LAUNCHER_COST = {"script": "a console-script launcher that imports `re` (~4.5 ms more per hook)",
                  "module": "which imports `runpy` (~1.5 ms more per hook)"}


def _launcher(command: str) -> str:
    import re

    if re.search(r"[/\\]__main__\.py['\"]?\s+hook\s", command):
        return "main"
    return "module" if " -m continuation hook" in command else "script"


def _slower_launched(commands: list[str]) -> list[tuple[str, str]]:
    """Our hook commands that start through a slower launcher than the one ``continuation
    install`` would write now (``install.core.default_command``: the package's ``__main__.py``,
    or ``-m continuation`` for a package in a zip), each with what it costs; earlier installs
    wrote the ``continuation`` script, then ``-m continuation``."""
    slower = [c for c in commands if _launcher(c) != "main"]
    if not slower:
        return []
    from continuation.install.core import render_command, default_command

    try:
        best = _launcher(f"{render_command(default_command())} hook ")
    except Exception:  # noqa: BLE001 - no interpreter to ask: compare with the fastest
        best = "main"
    kinds = {c: _launcher(c) for c in slower}
    return [(c, _LAUNCHER_COST[kind]) for c, kind in kinds.items()
            if _LAUNCHERS.index(kind) < _LAUNCHERS.index(best)]


def home_writable(home: Path) -> str | None:
    """None when the state home can be written, else why not (one line)."""
    if not home.is_dir():
        return None
    probe = home / f".doctor-probe-{os.getpid()}"
    try:
        os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        os.unlink(probe)
        return None
    except OSError as exc:
        return exc.strerror or str(exc)


#: below this, the next boundary (a capsule, a snapshot) may not fit
LOW_SPACE_BYTES = 1024 * 1024


def check_home(home: Path) -> list[Finding]:
    import shutil

    why = home_writable(home)
    if why is None:
        free = shutil.disk_usage(home).free
        if free < LOW_SPACE_BYTES:
            return [Finding("home", PROBLEM, f"the state home {home} is full ({size_text(free)} "
                            "free): hooks cannot record what happens",
                            "free space on its file system or point CONTINUATION_HOME elsewhere",
                            data={"free_bytes": free})]
        return [Finding("home", OK, f"state home {home} is writable ({size_text(free)} free)",
                        data={"free_bytes": free})]
    return [Finding("home", PROBLEM, f"the state home {home} cannot be written ({why}): hooks "
                    "record nothing until it can (they still answer, so your agent goes on)",
                    "remount it read-write, free space, or point CONTINUATION_HOME at a "
                    "writable folder", data={"error": why})]


def check_lost_writes(home: Path, *, fix: bool = False) -> list[Finding]:
    """What the trace that survives a full disk says (:mod:`continuation.host.lost_writes`)."""
    from continuation.host import lost_writes

    record = lost_writes.read(home)
    out = []

    def when(ts) -> str:
        return utc_time(ts) if ts else "?"

    if record.get("lost"):
        by_event = ", ".join(f"{k} {v}" for k, v in sorted((record.get("events") or {}).items()))
        out.append(Finding(
            "lost_writes", PROBLEM,
            f"{record['lost']} hook event(s) could not be recorded between "
            f"{when(record.get('first_at'))} and {when(record.get('last_at'))}"
            + (f" ({by_event})" if by_event else "")
            + f"; last error: {record.get('last_error')}",
            "free space in (or make writable) the state home; the inputs and tool calls of those "
            "events are missing from the record. `continuation doctor --fix` clears this report",
            data={k: record.get(k) for k in ("lost", "first_at", "last_at", "events",
                                             "last_error")}))
    reset = record.get("store_reset")
    if reset:
        aside = "set aside as" in str(reset.get("detail"))
        out.append(Finding(
            "store.reset", PROBLEM,
            f"the store {reset.get('path')} was {reset.get('detail')} at {when(reset.get('at'))} "
            + ("and a new store recorded from then on" if aside else
               "and recreated empty: everything recorded before is lost"),
            ("run `continuation doctor --salvage` to copy its readable events into the store"
             if aside else "restore it from a backup if you have one")
            + ". `continuation doctor --fix` clears this report",
            data=reset))
    if out and fix:
        lost_writes.clear(home)
        return [Finding(f.check, OK, f"cleared the report: {f.message}") for f in out]
    return out or [Finding("lost_writes", OK, "no hook event was lost")]


def _guarded(check: str, run, *args, **kwargs) -> list[Finding]:
    """A check that cannot run (an unreadable or read-only folder) is one finding, never a
    crash of the doctor."""
    try:
        found = run(*args, **kwargs)
    except OSError as exc:
        return [Finding(check, PROBLEM, f"cannot check: {exc.strerror or exc}"
                        + (f" ({exc.filename})" if getattr(exc, "filename", None) else ""))]
    except Exception as exc:  # a damaged store, or anything else: a finding, never a crash
        from continuation.store.damage import damage_of

        detail = damage_of(exc)
        if detail is not None:
            return [Finding(check, PROBLEM, f"the store is damaged: {detail[:200]}",
                            "run `continuation doctor --salvage` to copy its readable events "
                            "into a new store")]
        return [Finding(check, PROBLEM, f"cannot check: {type(exc).__name__}: {exc}"[:300])]
    return found if isinstance(found, list) else [found]


def run_checks(home: Path, *, project_dir: Path, fix: bool = False, hooks: bool = True,
               user_home: Path | None = None, min_temp_age: float | None = None) -> list[Finding]:
    from continuation.session.engine import Engine
    from continuation.store import store_file

    home = Path(home)
    read_only = home_writable(home) is not None
    findings = check_home(home) if home.is_dir() else []
    local = store_file(str(home))
    if local is not None:
        found, usable = check_store(Path(local), read_only=read_only)
    else:
        found, usable = check_server_store(home)
    findings += found
    if local is not None:
        findings += _guarded("store.set_aside", check_set_aside, Path(local))
    if usable and read_only:
        findings.append(Finding("store", INFO, "the derived state, checkpoints, refs and "
                                "sessions are not checked while the state home is read-only"))
    elif usable:
        try:
            with Engine(home, create=False) as engine:
                keyed = check_encryption(engine)
                findings += keyed
                if any(f.status == PROBLEM for f in keyed):
                    return findings  # nothing more can be read without the key
                findings += _guarded("store.acknowledged", check_acknowledged, engine, fix=fix)
                findings += _guarded("store.derived", check_derived, engine, fix=fix)
                findings += _guarded("checkpoints", check_checkpoints, engine)
                findings += _guarded("refs", check_refs, engine, fix=fix)
                findings += _guarded("checkpoint_refs", check_checkpoint_refs, engine, fix=fix)
                findings += _guarded("interrupted", check_interrupted, engine)
        except Exception as exc:
            findings.append(Finding("store", PROBLEM, f"cannot open the store: {exc}",
                                    damaged_store_advice(Path(local)) if local else
                                    "check CONTINUATION_STORE and that the server is up"))
    if home.is_dir():
        findings += _guarded("lost_writes", check_lost_writes, home, fix=fix and not read_only)
        if not read_only:  # taking a lock needs a writable file
            findings += _guarded("locks", check_locks, home)
        findings += _guarded("temps", check_temps, home, fix=fix and not read_only,
                             min_age=min_temp_age)
        findings += _guarded("disk", disk_usage, home)
        if not read_only:
            from continuation.host import lost_writes

            lost_writes.ensure(home)  # allocate the trace while there is room
    if hooks:
        findings += _guarded("hooks", check_hooks, home, project_dir, user_home)
    return findings


def check_encryption(engine) -> list[Finding]:
    """Encryption at rest (docs/encryption.md): off, or on with its key found and the right
    one; the boundary files under the state home all sealed."""
    from continuation.boundary import sealed_files
    from continuation.store.sealed import KeyUnavailable

    try:
        meta = engine.store.encryption()
    except Exception as exc:  # noqa: BLE001 - a store older than the meta table says so elsewhere
        return [Finding("encryption", INFO, f"cannot read the store's encryption setting: {exc}")]
    if meta is None:
        return [Finding("encryption", INFO, "off: the store and the files under the state home "
                        "are in clear (0600)", "`continuation key init` encrypts them")]
    try:
        engine.store.codec
    except KeyUnavailable as exc:
        return [Finding("encryption", PROBLEM, str(exc),
                        "set $CONTINUATION_KEY or restore the key file; `continuation key "
                        "status` says where the key is looked for", {"key_id": meta["key_id"]})]
    clear = [p for p in sealed_files.files(engine.home_str) if not _sealed_file(p)]
    found = [Finding("encryption", OK, f"on: {meta['cipher']}, key {meta['key_id']} found",
                     data={"key_id": meta["key_id"]})]
    if clear:
        found.append(Finding("encryption.files", WARN, f"{len(clear)} file(s) under the state "
                             f"home are in clear (e.g. {clear[0]})",
                             "`continuation key rotate` seals every file again"))
    return found


def _sealed_file(path: str) -> bool:
    from continuation.host.sealing import FILE_MARK

    try:
        with open(path, "rb") as fh:
            return fh.read(len(FILE_MARK)) == FILE_MARK
    except OSError:
        return True  # gone since it was listed


def healthy(findings: list[Finding]) -> bool:
    return not any(f.status in (PROBLEM, WARN) for f in findings)
