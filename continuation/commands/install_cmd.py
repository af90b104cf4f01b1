"""``install`` / ``uninstall``: put continuation's hooks into Codex CLI, Claude Code or Gemini CLI settings."""
from __future__ import annotations

import sys
from pathlib import Path

from continuation.commands import CommandError, add_json_arg
from continuation.commands.output import echo, emit_json


def register(sub) -> None:
    for name, helptext in (("install", "install the hooks for a runtime"),
                           ("uninstall", "remove the hooks (restores the file as it was)")):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("--runtime", choices=["codex", "claude", "gemini"], required=True,
                       help="the runtime whose settings file gets the hooks")
        p.add_argument("--scope", choices=["user", "project"], default="user",
                       help="user: the runtime's settings in your home (default); project: "
                            "the project folder's")
        p.add_argument("--project-dir", default=".", metavar="DIR",
                       help="project folder (scope project; default: .)")
        add_json_arg(p)
        if name == "install":
            g = p.add_argument_group("recovery loop (written to <project-dir>/.continuation/guard.json)")
            g.add_argument("--guard", metavar="CMD", help="the check command, e.g. 'pytest -q'")
            g.add_argument("--guard-when", choices=["turn", "change"],
                           help="run it at each turn's end (default) or after each change")
            g.add_argument("--guard-every", type=int, metavar="N",
                           help="with --guard-when change: after every N changes")
            g.add_argument("--guard-policy", choices=["report", "rewind", "halt"],
                           help="what a failure does (default rewind)")
            g.add_argument("--guard-timeout", type=float, metavar="S",
                           help="seconds the check may take (default 15)")
        p.set_defaults(func=cmd_install if name == "install" else cmd_uninstall)


def _run(args, action):
    from continuation.install import InstallError, install, uninstall
    from continuation.host.paths import state_home

    kwargs = dict(project_dir=Path(args.project_dir).resolve(), home=Path.home(),
                  state_home=state_home())
    guard_note = None
    try:
        if action == "install":
            hook_seconds, guard_note = _guard(args, kwargs["project_dir"])
            report = install(args.runtime, args.scope, hook_seconds=hook_seconds, **kwargs)
        else:
            report = uninstall(args.runtime, args.scope, **kwargs)
    except InstallError as exc:
        raise CommandError(str(exc)) from None
    if action == "install":
        _prepare_tokenizer(kwargs["state_home"], report.warnings)
    if args.json:
        emit_json({**report.model_dump(mode="json"), **({"guard": guard_note} if guard_note else {})})
    else:
        echo(report.message)
        if guard_note:
            echo(guard_note["message"])
        for warning in report.warnings:
            print(f"warning: {warning}", file=sys.stderr)
    return 0


_GUARD_FLAGS = {"guard_when": "when", "guard_every": "every", "guard_policy": "policy",
                "guard_timeout": "timeout"}


def _guard(args, project_dir: Path) -> tuple[int | None, dict | None]:
    """With ``--guard``: write the project's guard file (settings not given are kept from the
    file already there); either way, the seconds the hooks need for the project's check."""
    from continuation.guard import config

    given = {name: getattr(args, flag) for flag, name in _GUARD_FLAGS.items()
             if getattr(args, flag, None) is not None}
    try:
        current = config.load(str(project_dir))
    except config.GuardConfigError as exc:
        if args.guard is None:
            raise CommandError(f"{exc} (fix it, or give --guard to write a new one)") from None
        current = None
    if args.guard is None:
        if given:
            raise CommandError("--guard-when, --guard-every, --guard-policy and --guard-timeout "
                               "need --guard CMD", code=2)
        return (current.hook_seconds if current is not None else None), None
    settings = {k: v for k, v in (current.to_mapping() if current else {}).items() if k != "command"}
    settings.update(given)
    try:
        guard = config.GuardConfig(args.guard, **settings)
    except config.GuardConfigError as exc:
        raise CommandError(str(exc), code=2) from None
    path = config.write(str(project_dir), guard)
    return guard.hook_seconds, {"path": path, "settings": guard.to_mapping(),
                                "message": f"guard: {path} runs `{guard.command}` "
                                           f"(when {guard.when}, policy {guard.policy})"}


def cmd_install(args) -> int:
    return _run(args, "install")


def cmd_uninstall(args) -> int:
    return _run(args, "uninstall")


def _prepare_tokenizer(state_home: Path, warnings: list[str]) -> None:
    """The tokenizer's parsed ranks into the state home now, not at the first compaction
    (``continuation.boundary.tokenizer_cache``). A failure is a warning: the hooks are installed, and
    the first boundary that counts prepares them itself."""
    from continuation.boundary.tokenizer_cache import prepare

    try:
        prepare(state_home)
    except Exception as exc:  # noqa: BLE001 - never fails the install
        warnings.append(f"the tokenizer was not prepared ({type(exc).__name__}: {exc}); "
                        "the first compaction prepares it")
