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
        p.set_defaults(func=cmd_install if name == "install" else cmd_uninstall)


def _run(args, action):
    from continuation.install import InstallError, install, uninstall
    from continuation.host.paths import state_home

    kwargs = dict(project_dir=Path(args.project_dir).resolve(), home=Path.home(),
                  state_home=state_home())
    try:
        if action == "install":
            report = install(args.runtime, args.scope, **kwargs)
        else:
            report = uninstall(args.runtime, args.scope, **kwargs)
    except InstallError as exc:
        raise CommandError(str(exc)) from None
    if action == "install":
        _prepare_tokenizer(kwargs["state_home"], report.warnings)
    if args.json:
        emit_json(report.model_dump(mode="json"))
    else:
        echo(report.message)
        for warning in report.warnings:
            print(f"warning: {warning}", file=sys.stderr)
    return 0


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
