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
from typing import NamedTuple

from continuation.host.units import size_text as size  # noqa: F401 - one style, re-exported
from continuation.host.units import utc_time as when  # noqa: F401

#: the ellipsis ending a shortened id or a clipped text
MORE = "…"
#: columns an id is shortened to in a table that does not fit
ID_WIDTH = 16
#: a list printed without --verbose shows this many entries, then how many more there are
LIST_SAMPLE = 10
#: the states (and runtime verdicts) that ask for the user's action, and their ANSI colors
ACTION = {"pending": "33", "reconciling": "35", "interrupted": "31", "killed": "31",
          "crashed": "31", "unknown_outcome": "35"}

_settings = {"wide": False}


def configure(*, wide: bool = False) -> None:
    """Set once per command from its arguments (``--wide``)."""
    _settings["wide"] = bool(wide)


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
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=True, default=str) + "\n")


def one_line(text) -> str:
    text = "" if text is None else str(text)
    text = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text.replace("\r", " ").replace("\n", " ").replace("\t", " ")


def clip(text, width: int | None) -> str:
    """One line of ``text``, at most ``width`` columns, ending in ``…`` when cut."""
    text = one_line(text)
    if width is None or len(text) <= width:
        return text
    return text[: max(width - 1, 0)] + MORE


def short_id(value, width: int | None = ID_WIDTH) -> str:
    """An id cut to a prefix ending in ``…`` (a prefix is what the selectors take)."""
    return clip(value, width)


def short_path(path, width: int | None) -> str:
    """A path keeping its end (the file name): ``…/deep/folder/file.py``."""
    text = one_line(path)
    if width is None or len(text) <= width:
        return text
    return MORE + text[len(text) - max(width - 1, 0):] if width > 1 else MORE[:width]


def fit(line: str, width: int | None = None) -> list[str]:
    """``line`` wrapped to the width (each piece indented 2 more than the line), words longer
    than a piece split."""
    width = line_width() if width is None else width
    if width is None or len(line) <= width:
        return [line]
    import textwrap

    indent = " " * min(len(line) - len(line.lstrip(" ")) + 2, width // 2)
    wrapper = textwrap.TextWrapper(width=width, subsequent_indent=indent, break_on_hyphens=False,
                                   break_long_words=True, drop_whitespace=True)
    return wrapper.wrap(line) or [line[:width]]


def echo(*lines: str) -> None:
    """Print each line (a string may hold several) fitted to the width."""
    limit = line_width()
    out = []
    for text in lines:
        for line in str(text).split("\n"):
            out += fit(line, limit)
    sys.stdout.write("\n".join(out) + "\n")


def sample(items: list, verbose: bool) -> tuple[list, int]:
    """The entries of a list to print, and how many are left out (0 with ``verbose``)."""
    if verbose or len(items) <= LIST_SAMPLE:
        return list(items), 0
    return list(items[:LIST_SAMPLE]), len(items) - LIST_SAMPLE


class Column(NamedTuple):
    """A table column. ``kind``: ``text`` (clipped at its end), ``id`` (a prefix, never below
    :data:`ID_WIDTH` while other columns can give), ``path`` (its end kept), ``fixed`` (never
    shortened: states, numbers, times). ``limit``: its widest, even with room to spare."""

    key: str
    heading: str
    kind: str = "text"
    limit: int | None = None


#: a column is never shrunk below this (its heading may be longer)
_MIN = {"text": 12, "id": 10, "path": 12, "fixed": 0}
#: the order columns give up room: free text first, then paths, then ids
_GIVES = ("text", "path", "id")


def _column(spec) -> Column:
    if isinstance(spec, Column):
        return spec
    key, heading, limit = spec  # the older (key, heading, max width) form
    return Column(key, heading, "text", limit)


def _shorten(value: str, column: Column, width: int) -> str:
    if len(value) <= width:
        return value
    return short_path(value, width) if column.kind == "path" else clip(value, width)


def column_widths(natural: list[int], columns: list[Column], width: int | None) -> list[int]:
    """Each column's width so the row (columns two spaces apart) fits ``width``: the kinds in
    :data:`_GIVES` order give up room, the widest of a kind first, down to their minimum."""
    widths = list(natural)
    if width is None:
        return widths
    excess = sum(widths) + 2 * (len(widths) - 1) - width
    for kind in _GIVES:
        while excess > 0:
            candidates = [i for i, c in enumerate(columns) if c.kind == kind
                          and widths[i] > max(_MIN[kind], len(c.heading) if kind != "text" else 0)]
            if not candidates:
                break
            i = max(candidates, key=lambda j: widths[j])
            others = sorted((widths[j] for j in candidates if j != i), reverse=True)
            floor = max(_MIN[kind], others[0] if others else 0,
                        len(columns[i].heading) if kind != "text" else 0)
            cut = min(excess, widths[i] - floor) or 1
            widths[i] -= cut
            excess -= cut
    return widths


def table(rows: list[dict], columns: list, *, empty: str = "(none)") -> None:
    """Rows under a heading line, fitted to :func:`line_width`. ``columns``: :class:`Column` (or the
    older ``(key, heading, max width)``). A ``state`` (or ``status``) column is painted."""
    if not rows:
        sys.stdout.write(empty + "\n")
        return
    limit = line_width()
    columns = [_column(c) for c in columns]
    cells = [[clip(r.get(c.key), None) for c in columns] for r in rows]
    for row in cells:
        for i, c in enumerate(columns):
            if c.limit is not None and len(row[i]) > c.limit:
                row[i] = _shorten(row[i], c, c.limit)
    natural = [max(len(c.heading), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    widths = column_widths(natural, columns, limit)
    out = ["  ".join(c.heading[:widths[i]].ljust(widths[i])
                     for i, c in enumerate(columns)).rstrip()]
    for row in cells:
        parts = []
        for i, c in enumerate(columns):
            value = _shorten(row[i], c, widths[i]).ljust(widths[i])
            parts.append(paint(value, row[i]) if c.key in ("state", "status") else value)
        out.append("  ".join(parts).rstrip())
    if limit is not None:  # the columns' minimums may still not fit a very narrow terminal
        out = [line if visible_len(line) <= limit else clip_visible(line, limit) for line in out]
    sys.stdout.write("\n".join(out) + "\n")


def visible_len(line: str) -> int:
    """Columns a line takes on the terminal (color codes take none)."""
    return len(strip_color(line))


def strip_color(line: str) -> str:
    if "\x1b[" not in line:
        return line
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", line)


def clip_visible(line: str, width: int) -> str:
    return clip(strip_color(line), width)
