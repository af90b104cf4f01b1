"""Command registry: each module adds its subcommands with ``register(subparsers)``.

Every handler takes the parsed args and returns an exit code. Errors the user can act on are
:class:`CommandError` (or a store error) and print one line on stderr.
"""
from __future__ import annotations

import argparse
import os
import sys

from continuation import __version__
from continuation.commands.output import terminal_width


class CommandError(Exception):
    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


class _Commands(argparse._SubParsersAction):
    """A command's ``--help`` opens with what the command list says of it."""

    def add_parser(self, name, **kwargs):
        kwargs.setdefault("description", kwargs.get("help"))
        return super().add_parser(name, **kwargs)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", _Commands)

    def error(self, message):  # one line and exit 2, as argparse does, without the usage dump
        hint = did_you_mean(self, message)
        sys.stderr.write(f"continuation: {message}{hint} (see `{self.prog} --help`)\n")
        raise SystemExit(2)

    def _get_formatter(self):
        # argparse builds a formatter for every add_argument, and one without a width imports
        # shutil (with zlib, bz2 and lzma) to ask the terminal: a tenth of a `status`
        return self.formatter_class(prog=self.prog, width=terminal_width() - 2)


def did_you_mean(parser: argparse.ArgumentParser, message: str) -> str:
    """``; did you mean `status`?`` for a mistyped command, choice or option; else ``""``."""
    import difflib
    import re

    if "invalid choice: " in message:
        typed, _, listed = message.split("invalid choice: ", 1)[1].partition(" (choose from")
        typed = typed.strip("'\"")
        choices = re.findall(r"'([^']*)'", listed)
    elif message.startswith("unrecognized arguments: "):
        typed = message.split(": ", 1)[1].split()[0].split("=", 1)[0]
        if not typed.startswith("-"):
            return ""
        choices = _option_strings(parser)
    else:
        return ""
    close = difflib.get_close_matches(typed, choices, n=1, cutoff=0.6)
    return f"; did you mean `{close[0]}`?" if close else ""


def _option_strings(parser: argparse.ArgumentParser) -> list[str]:
    """Every long option of the command line that was typed (its command's parser after the
    top one's): argparse reports an unknown option from the top parser."""
    typed = getattr(parser, "typed_argv", [])
    command = next((a for a in typed if not a.startswith("-")), None)
    found = []
    for action in parser._actions:
        found += [o for o in action.option_strings if o.startswith("--")]
        if isinstance(action, argparse._SubParsersAction):
            subs = [action.choices[command]] if command in action.choices else action.choices.values()
            for sub in subs:
                found += _option_strings(sub)
    return list(dict.fromkeys(found))


MODULES = ("status", "lifecycle_cmd", "prove_cmd", "checkpoint_cmd", "capsule_cmd", "install_cmd", "rewind_cmd", "recover_cmd", "reconcile_cmd", "doctor_cmd", "import_cmd", "completion_cmd",
           "show_cmd", "key_cmd")

#: the module that registers each command. A command line that names one imports only that
#: module: importing every command module (and what each imports at its top) is a visible share
#: of a short command such as ``status``. ``--help``, no command or an unknown one register
#: them all. tests/test_cli.py checks this table against what the modules register.
COMMANDS = {
    "status": "status", "inputs": "status", "events": "status",
    "lifecycle": "lifecycle_cmd", "prove": "prove_cmd",
    "checkpoint": "checkpoint_cmd", "capsule": "capsule_cmd", "context": "capsule_cmd",
    "source": "capsule_cmd",
    "install": "install_cmd", "uninstall": "install_cmd",
    "rewind": "rewind_cmd", "restore": "rewind_cmd",
    "fork": "rewind_cmd", "thread": "rewind_cmd", "drift": "rewind_cmd", "gc": "rewind_cmd",
    "recover": "recover_cmd", "reconcile": "reconcile_cmd", "doctor": "doctor_cmd",
    "import": "import_cmd", "completion": "completion_cmd",
    "show": "show_cmd", "serve": "show_cmd", "key": "key_cmd",
}


#: older spellings, and what they are now: ``checkpoints`` lists, a bare ``checkpoint``
#: (no ACTION) creates
ALIASES = {"checkpoints": ["checkpoint", "list"]}
#: a command's default action when none is named
DEFAULT_ACTIONS = {"checkpoint": ("create", ("create", "list", "-h", "--help"))}


def spelled_out(argv: list[str]) -> list[str]:
    """``argv`` with an older spelling or an omitted default action written in full."""
    if argv and argv[0] in ALIASES:
        argv = ALIASES[argv[0]] + argv[1:]
    if argv and argv[0] in DEFAULT_ACTIONS:
        action, known = DEFAULT_ACTIONS[argv[0]]
        if len(argv) == 1 or argv[1] not in known:
            argv = [argv[0], action, *argv[1:]]
    return argv


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or only of ``command``'s module when it is a known one."""
    parser = _Parser(prog="continuation",
                     description="Context-boundary continuation engine for coding agents.")
    parser.add_argument("--version", action="version", version=f"continuation {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    hook = sub.add_parser("hook", help="handle one runtime hook payload (JSON on stdin; the "
                          "runtime runs it, `install` sets it up)")
    hook.add_argument("--runtime", choices=["codex", "claude", "gemini"], required=True,
                      help="the runtime that sends the payload")
    import importlib

    for name in [COMMANDS[command]] if command in COMMANDS else MODULES:
        importlib.import_module(f".{name}", __name__).register(sub)
    from continuation.commands import redacting

    redacting.add_flag(parser)
    return parser


def run(argv: list[str]) -> int:
    try:
        return _run(argv)
    finally:
        # e.g. a store found truncated: said once, here (the module is only loaded when
        # something raised a notice)
        lost_writes = sys.modules.get("continuation.host.lost_writes")
        for notice in lost_writes.NOTICES if lost_writes is not None else ():
            sys.stderr.write(notice + "\n")


def _run(argv: list[str]) -> int:
    argv = spelled_out(argv)
    parser = build_parser(argv[0] if argv else None)
    parser.typed_argv = argv
    args = parser.parse_args(argv)
    from continuation.commands import output, redacting

    show = redacting.verbatim(args)
    output.configure(wide=getattr(args, "wide", False), show_secrets=show)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0 if not argv else 2
    wrapped = redacting.install(args)
    try:
        return _call(args)
    finally:
        if wrapped:
            redacting.uninstall()


def _call(args) -> int:
    from continuation.store import StoreError

    try:
        return int(args.func(args) or 0)
    except (CommandError, StoreError) as exc:
        sys.stderr.write(f"continuation: {exc}\n")
        return getattr(exc, "code", 1)
    except KeyboardInterrupt:
        sys.stderr.write("continuation: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # an internal error: one line, the traceback only on request
        if os.environ.get("CONTINUATION_DEBUG"):
            raise
        damaged = _damaged_store(exc)
        if damaged is not None:
            sys.stderr.write(f"continuation: {damaged}\n")
            return 1
        sys.stderr.write(f"continuation: internal error: {type(exc).__name__}: {exc}\n")
        return 1


def _damaged_store(exc: BaseException):
    """A damaged store read by a command: the damage, said as the store's own error."""
    from continuation.store.damage import StoreDamaged, damage_of

    detail = damage_of(exc)
    if detail is None:
        return None
    from continuation.host.paths import state_home_str
    from continuation.store import store_file

    return StoreDamaged(store_file(state_home_str()) or "(server)", detail[:300])


def open_engine(create: bool = True, *, keyed: bool = True):
    """The engine of the state home. ``keyed``: an encrypted store's key is looked up now, so a
    missing or wrong key is the command's one error line whatever it reads (``key`` commands
    look for themselves)."""
    from continuation.session.engine import Engine

    engine = Engine(create=create)
    if keyed:
        try:
            engine.store.codec
        except BaseException:
            engine.close()
            raise
    return engine


def add_thread_arg(p: argparse.ArgumentParser, help: str | None = None) -> None:
    p.add_argument("--thread", help=help or "thread key or session id (or a unique prefix); "
                   "default: the most recently active thread of the workspace you are in, "
                   "else of the store")


def add_json_arg(p: argparse.ArgumentParser) -> None:
    """``--json``, and ``--wide`` for the text: the two ways to every value in full."""
    p.add_argument("--json", action="store_true", help="print JSON (every value in full)")
    add_wide_arg(p)


def add_wide_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--wide", action="store_true",
                   help="do not fit the output to the terminal: full ids and texts")


def add_verbose_arg(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("-v", "--verbose", action="store_true", help=f"list {what} in full "
                   "(by default: the totals and the first few)")
