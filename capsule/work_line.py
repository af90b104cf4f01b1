"""One finished tool call as one short line a model can read and reproduce exactly.

The same grammar serves the capsule's work ledger and the work record's pages
(:mod:`capsule.work_record`)::

    #<event>[ <status>[ exit=<code>]] $ <command, verbatim to the end of the line>
    #<event>[ <status>[ exit=<code>]] <Tool> <arguments as compact JSON>
    #<first>..#<last>[ <status>] ran=<K>x $ <command>            K identical calls
    #<first>..#<last>[ <status>] N=<values> $ <command with {N}>  one call per listed number
    T2 #<event> ...                                             a turn's label, when several

No status means ok (exit 0, or none reported): ``error``, ``error exit=2``, ``ok exit=1`` are
written.

A line starts with ``#`` (or a turn label ``T<k> #``), which no other line of a block does.
``#<event>`` is the call's start event in the thread's log (``continuation source
event:<thread>:<event>`` prints it). A shell call (its arguments a single-line ``command`` or
``cmd`` string, plus at most a description) is written after ``$ `` exactly as the runtime ran
it: no JSON quoting, so ``\\n`` in a command stays two characters. Anything else, a command
with a line break included, is the tool's name and its arguments as one JSON object
(:func:`capsule.textclip.render_json`: sorted keys, line breaks escaped). Either way nothing
in a call can start a line; the block's nonce keeps it from forging an end marker.
"""
from __future__ import annotations

import re

from capsule.textclip import render_json

SHELL_ARGS = ("command", "cmd")
#: argument keys that describe a shell call without changing what it ran
_DESCRIPTIVE = frozenset({"description"})
# characters that end or reorder a line for some reader (textclip escapes the same set)
_UNSAFE = re.compile("[\x00-\x1f\x7f\x85\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")
SHELL_MARK = "$ "
#: the same command as one JSON string literal, for a channel that alters some characters
SHELL_JSON_MARK = "$json "


def shell_command(args) -> str | None:
    """The command of a shell call that can be written verbatim on one line, else None."""
    if not isinstance(args, dict):
        return None
    names = [k for k in SHELL_ARGS if k in args]
    if len(names) != 1 or any(k not in _DESCRIPTIVE for k in args if k != names[0]):
        return None
    value = args[names[0]]
    if not isinstance(value, str) or not value.strip() or _UNSAFE.search(value):
        return None
    return value


def call_text(tool: str, args) -> str:
    """What a call did, as its line writes it after the status: ``$ <command>`` or
    ``<Tool> <json>``."""
    command = shell_command(args)
    if command is not None:
        return SHELL_MARK + command
    return f"{tool} {render_json(args if args is not None else {})}"


def status_text(status: str, exit_code: int | None) -> str:
    """``error exit=2``, ``error``; nothing for an ok call that exited 0 (or has no exit
    code): a line without a status is an ok call."""
    if status == "ok" and exit_code in (None, 0):
        return ""
    return status if exit_code is None else f"{status} exit={exit_code}"


def seq_text(first: int | None, last: int | None = None) -> str:
    head = "#?" if first is None else f"#{first}"
    return head if last is None or last == first else f"{head}..#{last}"


def work_line(first_seq: int | None, status: str, exit_code: int | None, text: str, *,
              last_seq: int | None = None, count: int = 1, values: str | None = None,
              turn: str | None = None, shell_tool: str | None = None, tool: str | None = None,
              clipped: str = "") -> str:
    """One ledger line. ``text``: :func:`call_text` (or a template of it); ``turn``: the
    turn's short label when the list has several turns; ``shell_tool``: the shell tool the
    list's legend names (a ``$`` call of another tool writes that tool's name first)."""
    group = f" N={values}" if values is not None else (f" ran={count}x" if count > 1 else "")
    label = f"{turn} " if turn else ""
    named = f" {tool}" if tool and shell_tool and tool != shell_tool and text.startswith(SHELL_MARK) else ""
    status = status_text(status, exit_code)
    return (f"{label}{seq_text(first_seq, last_seq)}{' ' + status if status else ''}{group}"
            f"{named} {text}{clipped}")


_LINE = re.compile(
    r"^(?:(?P<turn>T\d+) )?#(?P<first>\d+|\?)(?:\.\.#(?P<last>\d+))?(?: (?P<status>ok|error|unknown|in_flight)"
    r"(?: exit=(?P<exit>-?\d+))?)?(?: N=(?P<values>\S+)| ran=(?P<count>\d+)x)?"
    r"(?: (?P<tool>[^\s${]+))?(?: (?P<text>.*))?$")
# ("$json" starts with "$": the tool group never takes it)


def parse_work_line(line: str) -> dict | None:
    """The fields of a line :func:`work_line` wrote (None for any other line): turn, first,
    last, status, exit, values, count, tool, text. A reader's inverse, used by tests and the
    simulated agent."""
    m = _LINE.match(line)
    if m is None:
        return None
    d = m.groupdict()
    tool, text = d["tool"], d["text"] or ""
    if tool is not None and not text.startswith(SHELL_MARK):
        text = f"{tool} {text}"  # a non-shell call's text keeps its tool's name
    if text.startswith(SHELL_JSON_MARK):
        import json

        try:
            text = SHELL_MARK + json.loads(text[len(SHELL_JSON_MARK):])
        except (ValueError, TypeError):
            pass
    d["text"] = text
    d["status"] = d["status"] or "ok"
    d["exit"] = int(d["exit"]) if d["exit"] is not None else None
    d["count"] = int(d["count"]) if d["count"] else 1
    return d
