"""How the model's shell runs our own command: ``continuation source POINTER`` for the sealed
work record and spilled contexts (docs/encryption.md), named by the script's absolute path.

Not the bare name alone: Codex runs the model's commands in a login shell, whose profile sets
PATH anew (Debian's /etc/profile does), so a ``continuation`` that the runtime's own PATH finds
(an activated venv) is "command not found" in the model's shell. The script is the one
installed for the interpreter running now (beside it, as in a venv or pipx's, else in its
scripts folders): it runs the package the hooks run, installed for the same interpreter.
"""
from __future__ import annotations

import os
import sys

BARE = "continuation"
_NAMES = ("continuation.exe", "continuation") if os.name == "nt" else ("continuation",)
_found: list[str] = []  # script(), once per process


def script() -> str:
    """The ``continuation`` script as a shell word: its absolute path, quoted when it must be;
    the bare name when this interpreter has none (an embedding host)."""
    if not _found:
        _found.append(_find())
    return _found[0]


def source_command() -> str:
    """``<script> source``: the command printing what a pointer names."""
    return f"{script()} source"


def _find() -> str:
    folders = [os.path.dirname(sys.executable)] if sys.executable else []
    try:
        import sysconfig

        folders += [sysconfig.get_path("scripts"), sysconfig.get_path("scripts", f"{os.name}_user")]
    except (KeyError, ValueError, OSError):
        pass
    for folder in filter(None, folders):
        for name in _NAMES:
            path = os.path.join(folder, name)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                import shlex

                return shlex.quote(path)
    return BARE
