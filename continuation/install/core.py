"""install / uninstall / status for any :class:`HookTarget`.

Install: read the file (refuse malformed JSON, write nothing), merge our
groups, and write only when the bytes change. Before the first write the
original bytes (or "absent") are kept in a :class:`BackupRecord` under the
state home. Uninstall: if the file still holds exactly what we wrote, put the
original back byte for byte (or delete the file and the folders we created);
if someone changed it since, take out only our entries.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from continuation.install import hooks_section
from continuation.install.backup import BackupRecord, BackupStore, sha256_hex
from continuation.install.claude import CLAUDE
from continuation.install.codex import CODEX
from continuation.install.errors import InstallError
from continuation.install.gemini import GEMINI
from continuation.install.jsonfile import (
    JsonDocument,
    atomic_write,
    fsync_dir,
    read_config,
    read_json_object,
    render,
)
from continuation.install.target import (
    SIDE_FILE_MARK,
    HookTarget,
    Runtime,
    Scope,
    hook_command_line,
    render_command,
)

TARGETS: dict[str, HookTarget] = {"codex": CODEX, "claude": CLAUDE, "gemini": GEMINI}

Outcome = Literal["installed", "updated", "already-installed", "restored", "removed-entries", "not-installed"]


class InstallReport(BaseModel):
    runtime: Runtime
    scope: Scope
    action: Literal["install", "uninstall"]
    path: Path
    outcome: Outcome
    changed: bool
    events: list[str]
    hook_command: str | None = None
    record_path: Path | None = None
    message: str
    warnings: list[str] = []


def default_command() -> list[str]:
    """The hook launcher: this interpreter running the package's ``__main__.py`` by its path,
    ``<python> -P <package folder>/__main__.py``.

    Not ``-m continuation``: ``-m`` imports ``runpy`` and the ``importlib.util`` it uses to find
    the package, which a script path does not (1.2-1.9 ms of a ~16 ms hook process, paid at
    every prompt and tool call; measured over 40 interleaved runs of each, three times).
    Nor the ``continuation`` script pip writes: that launcher imports ``re`` (~4.5 ms), which
    the hook itself never needs (see :mod:`continuation.host.jsontext`). ``-P`` keeps the script's
    folder and the working directory off ``sys.path``, so neither a module of this package nor
    a folder in the user's project can stand in for the installed package. The interpreter is
    the one running now, which imports this very package (a ``pipx``/``uv tool`` venv
    included), and the script is the ``__main__.py`` of the package installed for it
    (:func:`package_main`). A package that is not a folder of files (a zip), or one this
    interpreter finds only through ``PYTHONPATH``, is run with ``-m continuation``; the script
    on ``PATH`` is the fallback when there is no interpreter (an embedding host)."""
    if sys.executable:
        main = package_main()
        if main is None:
            return [sys.executable, "-P", "-m", "continuation"]
        return [sys.executable, "-P", str(main)]
    found = shutil.which("continuation")
    if found:
        return [str(Path(found).absolute())]
    raise InstallError("no Python interpreter and no `continuation` script on PATH to run the hooks")


def package_main() -> Path | None:
    """The ``__main__.py`` of the ``continuation`` package installed for this interpreter: asked
    of it started with ``-P`` (as the hook is) and ``-E``, rather than taken from this process,
    which may have imported a checkout through the working directory (``python -m continuation
    install`` run in a folder holding a ``continuation/``) or through ``PYTHONPATH`` (which the
    runtime's environment may not have): a command naming such a file would break once the
    folder moves. None when that package is not a folder of files (a zip) or not installed for
    this interpreter (then ``-m continuation`` finds it at each hook, as before)."""
    import subprocess

    try:
        found = subprocess.run(
            [sys.executable, "-E", "-P", "-c", "import continuation; print(continuation.__file__)"],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = found.stdout.strip().splitlines()
    if found.returncode != 0 or not lines:
        return None
    main = Path(lines[-1]).absolute().parent / "__main__.py"
    return main if main.is_file() else None


def _target(runtime: str) -> HookTarget:
    try:
        return TARGETS[runtime]
    except KeyError:
        raise InstallError(f"unknown runtime {runtime!r}; expected one of {sorted(TARGETS)}") from None


def _check_scope(scope: str) -> None:
    if scope not in ("user", "project"):
        raise InstallError(f"unknown scope {scope!r}; expected 'user' or 'project'")


def _missing_dirs(path: Path) -> list[Path]:
    """Folders between the nearest existing ancestor and ``path`` (outermost first)."""
    missing = []
    folder = path.parent
    while not folder.exists():
        missing.append(folder)
        if folder.parent == folder:
            break
        folder = folder.parent
    return list(reversed(missing))


def _render_like(doc: JsonDocument, data: dict[str, Any]) -> bytes:
    return render(data, doc.style, doc.raw)


#: the hooks the recovery loop runs its check in, per runtime
GUARD_EVENTS = {"claude": ("Stop", "PostToolUse", "SessionStart"),
                "codex": ("Stop", "PostToolUse", "SessionStart"),
                "gemini": ("AfterAgent", "AfterTool", "SessionStart")}


def _with_guard_time(target: HookTarget, hook_seconds: int | None) -> HookTarget:
    if not hook_seconds:
        return target
    import dataclasses

    timeouts = dict(target.timeouts)
    for event in GUARD_EVENTS.get(target.runtime, ()):
        timeouts[event] = max(int(hook_seconds), timeouts.get(event, target.default_timeout))
    return dataclasses.replace(target, timeouts=timeouts)


def install(
    runtime: Runtime,
    scope: Scope,
    *,
    project_dir: Path,
    home: Path,
    state_home: Path,
    command: list[str] | str | None = None,
    env: Mapping[str, str] | None = None,
    hook_seconds: int | None = None,
) -> InstallReport:
    """Merge our hooks into the runtime's config file; idempotent. ``hook_seconds``: the
    recovery loop's check runs in the turn-end, tool and session-start hooks and needs this
    long (``continuation.guard.config.GuardConfig.hook_seconds``): their timeouts are raised
    to it where they are shorter."""
    target = _with_guard_time(_target(runtime), hook_seconds)
    _check_scope(scope)
    env = os.environ if env is None else env
    path = target.config_path(scope, project_dir=project_dir, home=home, env=env)
    hook_command = hook_command_line(default_command() if command is None else command, runtime)
    if not target.is_ours(hook_command):
        raise InstallError(
            f"the hook command {hook_command!r} would not be recognised as ours later "
            "(the launcher must be named 'continuation', be 'python -m continuation' or run "
            "continuation/__main__.py)"
        )
    store = BackupStore(state_home, runtime, scope, path)
    with store.lock():
        doc = read_json_object(path)
        where, skip = str(path), target.hook_settings_keys
        merged = hooks_section.merge_ours(doc.data, target.desired_groups(hook_command), target.is_ours,
                                          where, skip)
        merged, enabled = target.enable(merged)
        folder = contexts_folder(state_home)
        merged, granted = target.grant_reads(merged, folder)
        if target.read_grant_path is not None:
            _ensure_folder(folder)  # Gemini CLI refuses to start when a listed folder is missing
        had_ours = bool(hooks_section.events_with_ours(doc.data, target.is_ours, where, skip))
        message = target.install_message(path, scope, project_dir=project_dir)
        if granted or (target.read_grant_path is not None and folder in _listed(merged, target)):
            message += (f" {'.'.join(target.read_grant_path)} lists {folder}: the model reads the "
                        "work record and spilled contexts there with its own file tools, without "
                        "a prompt (uninstall takes it out).")
        if target.command_grant_path is not None:
            message += (f" {'.'.join(target.command_grant_path)} lists "
                        f"{target.grants(folder)[-1][1]}: with encryption on the model prints its "
                        "sealed record with it, without a prompt.")
        if doc.exists and merged == doc.data:
            message += _write_side_file(target, path)
            return InstallReport(
                runtime=runtime, scope=scope, action="install", path=path, outcome="already-installed",
                changed=False, events=list(target.events), hook_command=hook_command,
                record_path=store.path if store.path.exists() else None, message=message,
            )
        new_bytes = _render_like(doc, merged)
        record, warnings = _load_record(store)
        current_sha = sha256_hex(doc.raw)
        if record is not None and not had_ours and current_sha != record.installed_sha256:
            record = None  # our entries were removed by hand since: that record no longer describes this file
        created = _missing_dirs(path)
        atomic_write(path, new_bytes, mode_from=path if doc.exists else None)
        message += _write_side_file(target, path)  # after: a folder made for the file is recorded
        if record is None:
            original = doc.raw
            if had_ours:
                # Our entries are there but nothing says what the file was before them
                # (state home wiped, older install): "before" is this file without them.
                original = _render_like(doc, hooks_section.remove_ours(doc.data, target.is_ours, where, skip))
            record = BackupRecord.for_original(runtime, scope, path, original, created, new_bytes)
            record.enabled_settings = {**enabled, **granted}
        else:
            record = record.model_copy(update={"installed_sha256": sha256_hex(new_bytes),
                                               "enabled_settings": {**enabled, **granted,
                                                                    **record.enabled_settings}})
        store.save(record)
        if enabled:
            warnings.append(f"set {', '.join(sorted(enabled))} to true so that {runtime} runs hooks "
                            "(uninstall puts the old value back)")
        warnings += target.warnings(merged)
        warnings += _other_scope_warning(target, scope, project_dir=project_dir, home=home, env=env)
        return InstallReport(
            runtime=runtime, scope=scope, action="install", path=path,
            outcome="updated" if had_ours else "installed", changed=True, events=list(target.events),
            hook_command=hook_command, record_path=store.path, message=message, warnings=warnings,
        )


def _write_side_file(target: HookTarget, settings_path: Path) -> str:
    """Write the target's side file (:meth:`HookTarget.side_file`) unless it holds those bytes
    already; what it is for, for the install message."""
    side = target.side_file(settings_path)
    if side is None:
        return ""
    file, data = side
    try:
        current = file.read_bytes()
    except OSError:
        current = None
    if current != data:
        file.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(file, data)
    return f" {file} lets `continuation source` run without a confirmation (uninstall removes it)."


def _remove_side_file(target: HookTarget, settings_path: Path) -> None:
    """Remove the target's side file while it is ours (a file the user rewrote is left), and
    its folder when that leaves it empty."""
    side = target.side_file(settings_path)
    if side is None:
        return
    file = side[0]
    try:
        with open(file, "rb") as fh:
            ours = fh.read(len(SIDE_FILE_MARK)) == SIDE_FILE_MARK.encode()
        if ours:
            file.unlink()
            file.parent.rmdir()  # only when empty
    except OSError:
        pass


def _listed(data: dict, target: HookTarget) -> list:
    node = data
    for key in target.read_grant_path:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, list) else []


def contexts_folder(state_home: Path) -> str:
    """Where the hooks write what a model reads with its own tools (``continuation.boundary.work_pages``)."""
    return str(Path(state_home).absolute() / "contexts")


def _ensure_folder(folder: str) -> None:
    from continuation.host.paths import ensure_private_dir

    try:
        ensure_private_dir(folder)
    except OSError:
        pass  # the first boundary creates it; install says nothing more about it


def _other_scope_warning(target, scope: str, *, project_dir: Path, home: Path,
                         env: Mapping[str, str]) -> list[str]:
    """Hooks of ours in both scopes run twice per event (a second context block on resume)."""
    other = "project" if scope == "user" else "user"
    other_path = target.config_path(other, project_dir=project_dir, home=home, env=env)
    try:
        doc = read_json_object(other_path)
        ours = hooks_section.events_with_ours(doc.data, target.is_ours, str(other_path),
                                              target.hook_settings_keys)
    except InstallError:
        return []
    if not ours:
        return []
    return [f"continuation hooks are also installed in {other_path} ({other} scope): every event "
            f"would be handled twice; run `continuation uninstall --runtime {target.runtime} "
            f"--scope {other}` or skip this one"]


def _load_record(store: BackupStore) -> tuple[BackupRecord | None, list[str]]:
    """The install record, or ``None`` plus a warning when it is unreadable (never fatal)."""
    try:
        return store.load(), []
    except InstallError as exc:
        return None, [f"ignored the install record: {exc}"]


def _remove_created_dirs(record: BackupRecord) -> list[str]:
    warnings = []
    for folder in reversed([Path(d) for d in record.created_dirs]):
        try:
            folder.rmdir()  # only when empty: never delete anything that is not ours
        except FileNotFoundError:
            pass
        except OSError:
            warnings.append(f"left {folder} in place: it is not empty")
            break
    return warnings


def uninstall(
    runtime: Runtime,
    scope: Scope,
    *,
    project_dir: Path,
    home: Path,
    state_home: Path,
    command: list[str] | str | None = None,
    env: Mapping[str, str] | None = None,
) -> InstallReport:
    """Undo :func:`install`: the original bytes when the file is as we left it, else only our entries out."""
    del command  # any launcher of ours is removed, whatever path it had
    target = _target(runtime)
    _check_scope(scope)
    env = os.environ if env is None else env
    path = target.config_path(scope, project_dir=project_dir, home=home, env=env)
    store = BackupStore(state_home, runtime, scope, path)
    with store.lock():
        _remove_side_file(target, path)
        try:
            raw = read_config(path)
        except FileNotFoundError:
            raw = None
        record, record_warnings = _load_record(store)
        events: list[str] = []
        if record is not None and raw is not None and sha256_hex(raw) == record.installed_sha256:
            original = record.original_bytes()
            warnings: list[str] = list(record_warnings)
            if original is None:
                path.unlink()
                fsync_dir(path.parent)
                warnings = _remove_created_dirs(record)
                what = f"removed {path} (it did not exist before install)"
            else:
                atomic_write(path, original, mode_from=path)
                what = f"restored {path} to its bytes from before install"
            store.delete()
            return InstallReport(
                runtime=runtime, scope=scope, action="uninstall", path=path, outcome="restored", changed=True,
                events=list(target.events), message=f"continuation hooks uninstalled: {what}.", warnings=warnings,
            )
        doc = read_json_object(path)
        where, skip = str(path), target.hook_settings_keys
        found = hooks_section.events_with_ours(doc.data, target.is_ours, where, skip)
        if not found:
            store.delete()
            return InstallReport(
                runtime=runtime, scope=scope, action="uninstall", path=path, outcome="not-installed", changed=False,
                events=events, message=f"no continuation hooks in {path}; nothing changed.",
                warnings=record_warnings,
            )
        cleaned = hooks_section.remove_ours(doc.data, target.is_ours, where, skip)
        if record is not None:
            cleaned = target.restore(cleaned, record.enabled_settings)
        # ours whatever the record says: the state home's folder, this installation's command
        cleaned = target.revoke_reads(
            cleaned, {"+" + ".".join(path): value for path, value in target.grants(contexts_folder(state_home))})
        atomic_write(path, _render_like(doc, cleaned), mode_from=path)
        store.delete()
        warnings = list(record_warnings)
        if record is not None:
            warnings.append(f"{path} changed since install; removed only the continuation entries")
        return InstallReport(
            runtime=runtime, scope=scope, action="uninstall", path=path, outcome="removed-entries", changed=True,
            events=sorted(found), message=f"continuation hooks removed from {path}; everything else kept.",
            warnings=warnings,
        )


def status(
    runtime: Runtime,
    scope: Scope,
    *,
    project_dir: Path,
    home: Path,
    state_home: Path,
    command: list[str] | str | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Installed? which events? (Codex) trusted? — for ``continuation doctor``. Never raises for bad files."""
    target = _target(runtime)
    _check_scope(scope)
    env = os.environ if env is None else env
    path = target.config_path(scope, project_dir=project_dir, home=home, env=env)
    store = BackupStore(state_home, runtime, scope, path)
    result: dict[str, Any] = {
        "runtime": runtime,
        "scope": scope,
        "path": str(path),
        "exists": path.exists(),
        "valid": True,
        "error": None,
        "installed": False,
        "events": [],
        "missing_events": list(target.events),
        "commands": [],
        "command_matches": None,
        "record": str(store.path) if store.path.exists() else None,
    }
    try:
        doc = read_json_object(path)
        found = hooks_section.events_with_ours(doc.data, target.is_ours, str(path),
                                               target.hook_settings_keys)
    except InstallError as exc:
        result.update(valid=False, error=str(exc))
        return result
    result["events"] = [e for e in target.events if e in found] + sorted(set(found) - set(target.events))
    result["missing_events"] = [e for e in target.events if e not in found]
    result["installed"] = not result["missing_events"]
    result["commands"] = sorted({c for cs in found.values() for c in cs})
    if command is not None:
        expected = hook_command_line(command, runtime)
        result["command_matches"] = result["commands"] == [expected]
    trust = target.trust(path, scope, doc.data, project_dir=project_dir, home=home, env=env)
    if trust is not None:
        result["trust"] = trust
    return result


__all__ = ["InstallReport", "InstallError", "default_command", "install", "uninstall", "status", "render_command"]
