"""Text fitted to a width: one line clipped, a path keeping its end, a long line wrapped, and a
table whose columns give up room in a set order. Plain functions of strings and widths: the
commands (``continuation.commands.output``) decide the width and print; ``prove`` renders its
table with them. ``width`` None means no limit.
"""
from __future__ import annotations

from typing import NamedTuple

#: the ellipsis ending a shortened id or a clipped text
MORE = "…"
#: columns an id is shortened to when it has to give room
ID_WIDTH = 16


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


def wrap(line: str, width: int | None) -> list[str]:
    """``line`` wrapped to ``width`` (each piece indented 2 more than the line), words longer
    than a piece split."""
    if width is None or len(line) <= width:
        return [line]
    import textwrap

    indent = " " * min(len(line) - len(line.lstrip(" ")) + 2, width // 2)
    wrapper = textwrap.TextWrapper(width=width, subsequent_indent=indent, break_on_hyphens=False,
                                   break_long_words=True, drop_whitespace=True)
    return wrapper.wrap(line) or [line[:width]]


class Column(NamedTuple):
    """A table column. ``kind``: ``text`` (clipped at its end), ``id`` (a prefix, never below
    :data:`ID_WIDTH` while other columns can give), ``path`` (its end kept), ``fixed`` (never
    shortened: states, numbers, times). ``limit``: its widest, even with room to spare."""

    key: str
    heading: str
    kind: str = "text"
    limit: int | None = None


#: the order columns give up room, and down to what: free text to a readable width, then
#: paths, then ids to a prefix that still tells them apart; then everything to its minimum
_GIVES = (("text", 24), ("path", 24), ("id", ID_WIDTH), ("text", 12), ("path", 12), ("id", 10))


def as_column(spec) -> Column:
    if isinstance(spec, Column):
        return spec
    key, heading, limit = spec  # the older (key, heading, max width) form
    return Column(key, heading, "text", limit)


def shorten(value: str, column: Column, width: int) -> str:
    if len(value) <= width:
        return value
    return short_path(value, width) if column.kind == "path" else clip(value, width)


def column_widths(natural: list[int], columns: list[Column], width: int | None) -> list[int]:
    """Each column's width so the row (columns two spaces apart) fits ``width``: the kinds
    give up room in :data:`_GIVES` order, the widest of a kind first, down to that step's
    floor (never below a column's heading, except free text)."""
    widths = list(natural)
    if width is None:
        return widths
    excess = sum(widths) + 2 * (len(widths) - 1) - width
    for kind, least in _GIVES:
        while excess > 0:
            floors = {i: max(least, len(c.heading) if kind != "text" else 0)
                      for i, c in enumerate(columns) if c.kind == kind}
            candidates = [i for i, floor in floors.items() if widths[i] > floor]
            if not candidates:
                break
            i = max(candidates, key=lambda j: widths[j])
            others = sorted((widths[j] for j in candidates if j != i), reverse=True)
            floor = max(floors[i], others[0] if others else 0)
            cut = min(excess, widths[i] - floor) or 1
            widths[i] -= cut
            excess -= cut
    return widths


def render_table(rows: list[dict], columns: list, width: int | None, *,
                 paint=lambda value, raw, column: value) -> list[str]:
    """The heading line and one line per row, fitted to ``width``. ``paint(cell, raw value,
    column)`` may add color to a padded cell (the fitting counts only the text)."""
    columns = [as_column(c) for c in columns]
    cells = [[clip(r.get(c.key), None) for c in columns] for r in rows]
    for row in cells:
        for i, c in enumerate(columns):
            if c.limit is not None and len(row[i]) > c.limit:
                row[i] = shorten(row[i], c, c.limit)
    natural = [max(len(c.heading), *(len(row[i]) for row in cells)) if cells else len(c.heading)
               for i, c in enumerate(columns)]
    widths = column_widths(natural, columns, width)
    out = ["  ".join(c.heading[:widths[i]].ljust(widths[i])
                     for i, c in enumerate(columns)).rstrip()]
    for row in cells:
        parts = [paint(shorten(row[i], c, widths[i]).ljust(widths[i]), row[i], c)
                 for i, c in enumerate(columns)]
        out.append("  ".join(parts).rstrip())
    if width is not None:  # the columns' minimums may still not fit a very narrow terminal
        out = [line if visible_len(line) <= width else clip(strip_color(line), width)
               for line in out]
    return out


def visible_len(line: str) -> int:
    """Columns a line takes on the terminal (color codes take none)."""
    return len(strip_color(line))


def strip_color(line: str) -> str:
    if "\x1b[" not in line:
        return line
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", line)
