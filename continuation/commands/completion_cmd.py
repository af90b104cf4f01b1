"""``continuation completion bash|zsh|fish``: the shell completion script, printed.

Generated from the command line's own parser by ``shtab`` (every command, option and choice;
nothing to keep in step by hand). Install it where the shell looks (docs/commands.md):

    continuation completion bash > ~/.local/share/bash-completion/completions/continuation
    continuation completion zsh > ~/.zfunc/_continuation     # with fpath+=(~/.zfunc)
    continuation completion fish > ~/.config/fish/completions/continuation.fish
"""
from __future__ import annotations

from continuation.commands import CommandError

SHELLS = ("bash", "zsh", "fish")


def register(sub) -> None:
    p = sub.add_parser("completion", help="print the shell completion script for bash, zsh "
                       "or fish")
    p.add_argument("shell", choices=SHELLS, metavar="SHELL",
                   help="the shell: " + ", ".join(SHELLS))
    p.set_defaults(func=cmd_completion)


def cmd_completion(args) -> int:
    try:
        import shtab
    except ImportError:
        raise CommandError("shell completion needs the shtab package: pip install shtab") from None
    from continuation.commands import build_parser

    script = shtab.complete(build_parser(), shell=args.shell)
    print(script.rstrip("\n"))
    return 0
