"""Command output: text fitted to the terminal for a person, JSON for scripts.

The conventions every command follows (docs/commands.md, "Output"):

- **width**: a line is at most :func:`line_width` columns ($COLUMNS, else the terminal stdout
  is; a pipe or a file gets whole lines). Tables shrink their widest text columns
  first and shorten ids to a prefix ending in ``…`` (a unique prefix is what ``--thread``
  and CHECKPOINT take; the ``…`` may be pasted with it); other lines wrap with an indent.
  ``--wide`` lifts the limit; ``--json`` prints every value in full.
- **color**: only the states that ask something of the user (:data:`ACTION`), only when
  stdout is a terminal, never when ``NO_COLOR`` is set (https://no-color.org) or TERM is dumb.
- **time**: UTC, ``2026-01-02 03:04:05Z`` (:func:`when`). **size**: ``256.0 MiB``
  (:func:`size`). **position** in a thread: ``event 14`` (:func:`position`), the number
  ``events`` lists and pointers name.
- **counts** come before lists; a list that can be long shows its total and the first
  :data:`LIST_SAMPLE` entries unless ``--verbose`` (:func:`sample`).
"""
from __future__ import annotations

import json
import os
import sys

# the helpers every command uses, from one place (re-exported: commands import them from here)
from continuation.host.textfit import (  # noqa: F401
    ID_WIDTH, MORE, Column, clip, one_line, render_table, short_id, short_path, strip_color,
    visible_len, wrap,
)
from continuation.host.units import size_text as size  # noqa: F401
from continuation.host.units import utc_time as when  # noqa: F401

#: a list printed without --verbose shows this many entries, then how many more there are
LIST_SAMPLE = 10
#: the states (and runtime verdicts) that ask for the user's action, and their ANSI colors
ACTION = {"pending": "33", "reconciling": "35", "interrupted": "31", "killed": "31",
          "crashed": "31", "unknown_outcome": "35"}

_settings = {"wide": False, "show_secrets": True}


def configure(*, wide: bool = False, show_secrets: bool = False) -> None:
    """Set once per command from its arguments (``--wide``, ``--show-secrets``: see
    ``commands.redacting``)."""
    _settings["wide"] = bool(wide)
    _settings["show_secrets"] = bool(show_secrets)


def shown(value):
    """``value`` (text or decoded JSON) as a person may see it: token-like strings redacted
    unless ``--show-secrets`` (before it is laid out: a table stays aligned, and a value cut
    to fit never shows the start of a secret)."""
    if _settings["show_secrets"]:
        return value
    from continuation.host.secret_text import redact_data

    return redact_data(value)


def terminal_width() -> int:
    """What ``shutil.get_terminal_size().columns`` answers: $COLUMNS, else the terminal, else
    80, without importing shutil (which imports zlib, bz2 and lzma)."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


def line_width() -> int | None:
    """The columns a line may take: $COLUMNS when set, else the width of the terminal stdout
    is; None (no limit) with ``--wide`` or when stdout is not a terminal (a pipe or a file
    gets every value whole, as ``git`` and ``ls`` do)."""
    if _settings["wide"]:
        return None
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns > 0:
        return max(columns, 20)
    try:
        if not sys.stdout.isatty():
            return None
        return max(os.get_terminal_size(sys.stdout.fileno()).columns or 80, 20)
    except (AttributeError, ValueError, OSError):
        return None


def color_on(stream=None) -> bool:
    stream = sys.stdout if stream is None else stream
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def paint(text: str, state: str | None = None) -> str:
    """``text`` in the color of ``state`` (default: ``text`` itself) when it asks for action
    and color is on; else unchanged."""
    code = ACTION.get(state if state is not None else text.strip())
    return f"\x1b[{code}m{text}\x1b[0m" if code and color_on() else text


def position(seq, last=None) -> str:
    """A place in a thread's event log: ``event 14``, or ``event 14 of 20``."""
    return f"event {seq}" + (f" of {last}" if last is not None else "")


def emit_json(data) -> None:
    # ASCII escapes: a lone surrogate the runtime sent stays exact and the output stays valid
    sys.stdout.write(json.dumps(shown(data), indent=2, ensure_ascii=True, default=str) + "\n")


def fit(line: str, width: int | None = None) -> list[str]:
    """``line`` wrapped to the width (:func:`line_width` by default)."""
    return wrap(line, line_width() if width is None else width)


def echo(*lines: str) -> None:
    """Print each line (a string may hold several) fitted to the width."""
    limit = line_width()
    out = []
    for text in lines:
        for line in str(text).split("\n"):
            out += fit(line, limit)
    sys.stdout.write("\n".join(out) + "\n")


def note(text: str) -> None:
    """A remark on stderr (``continuation: …``), fitted to the width like stdout's lines; an
    error stays one line (``CommandError``)."""
    sys.stderr.write("\n".join(fit(f"continuation: {text}")) + "\n")


def sample(items: list, verbose: bool) -> tuple[list, int]:
    """The entries of a list to print, and how many are left out (0 with ``verbose``)."""
    if verbose or len(items) <= LIST_SAMPLE:
        return list(items), 0
    return list(items[:LIST_SAMPLE]), len(items) - LIST_SAMPLE


def table(rows: list[dict], columns: list, *, empty: str = "(none)", indent: int = 0) -> None:
    """Rows under a heading line, fitted to :func:`line_width`. ``columns``: :class:`Column` (or the
    older ``(key, heading, max width)``). A ``state`` (or ``status``) column is painted.
    ``indent``: spaces before every line (the table fits in what is left)."""
    pad = " " * indent
    if not rows:
        sys.stdout.write(pad + empty + "\n")
        return
    limit = line_width()
    if limit is not None:
        limit = max(limit - indent, 20)

    def colored(value: str, raw: str, column: Column) -> str:
        return paint(value, raw) if column.key in ("state", "status") else value

    lines = render_table(shown(rows), columns, limit, paint=colored)
    sys.stdout.write("\n".join(pad + line for line in lines) + "\n")


def thread_title(row: dict, *, default: bool = False) -> str:
    """``thread <key> "name"`` (``[default]``: the thread commands take without --thread),
    the key cut to fit; a fork's lineage is :func:`lineage`."""
    name = f' "{one_line(row["name"])}"' if row.get("name") else ""
    tail = name + ("  [default]" if default else "")
    limit = line_width()
    key = row["thread_key"]
    if limit is not None and len("thread ") + len(key) + len(tail) > limit:
        key = short_id(key, max(ID_WIDTH, limit - len("thread ") - len(tail)))
    return f"thread {key}{tail}"


def lineage(row: dict) -> list[str]:
    """``  fork of <key> at event N`` for a fork, else nothing."""
    if not row.get("forked_from"):
        return []
    return [f"  fork of {row['forked_from']} at {position(row.get('forked_at_seq'))}"]
