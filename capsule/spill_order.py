"""Which lines of a rendered checkpoint block stay inline when the block must be shortened.

A runtime limits hook context to 10,000 characters; past it the full text goes to a spill file
and the inline part keeps what matters most. Reading only the rendered text (no capsule model:
SessionStart answers from the stored rendering), each item of the block gets a priority from
its section and, where it says so, its own line; items are kept from the highest priority down,
and inside one priority the newest (lowest in the block: every section lists oldest first) go
first. So old session start/end facts move out before a crash fact, and the work ledger, open
inputs and unsettled calls stay inline longest. A section that lost items says how many, in one
line, where they were; the block keeps its order, markers and preamble.

Priorities (higher stays inline longer):

=======================================================  ========
preamble, thread, objective, next action, cursor          always
the work ledger's legend and turns, the work record       always
the guard's line (the recovery loop's state)              always
unsettled tool calls                                      95
open inputs (pending, interrupted, reconciling, queued)   92
failed calls (work already done)                          91
work already done for an open input                       90
notices from the engine                                   85
background work                                           70
plan                                                      60
runtime facts: crash, abort, boundary, reconcile, rewind  58
assistant claims                                          50
workspace                                                 45
handled / superseded / rolled-back inputs                 40
work already done for other inputs                        38
cuts                                                      35
attachments                                               34
permissions and model                                     30
source pointers                                           25
runtime facts: everything else (session start/end, ...)   20
=======================================================  ========
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable

ALWAYS = 1000
_SECTION_PRIORITY = (  # heading prefix -> priority of its items
    ("## thread", ALWAYS), ("## objective", ALWAYS), ("## next action", ALWAYS),
    ("## execution cursor", ALWAYS), ("## work record", ALWAYS), ("## guard", ALWAYS),
    ("## unsettled tool calls", 95), ("## tool calls", 95),
    ("## notices", 85), ("## background", 70), ("## plan", 60),
    ("## assistant claims", 50), ("## workspace", 45), ("## cuts", 35), ("## attachments", 34),
    ("## permissions", 30), ("## source pointers", 25),
)
_OPEN_INPUT = 92
_OPEN_WORK = 90
_FAILED_WORK = 91
_OTHER_WORK = 38
_OTHER_INPUT = 40
_KEY_FACT = 58
_OTHER_FACT = 20
#: facts kept longer than the others (session starts and ends, deliveries, finished-call facts)
KEY_FACT_KINDS = frozenset({"crash_detected", "turn_aborted", "boundary", "reconciled", "rolled_back"})
_STATE = re.compile(r" state=(\w+)")
_KIND = re.compile(r' kind="([^"\\]*)"')
_INPUT_ID = re.compile(r'^- input=("(?:[^"\\]|\\.)*")')
_WORK_INPUTS = re.compile(r' inputs=(\[(?:"(?:[^"\\]|\\.)*",?)*\])')
_OPEN = frozenset({"pending", "interrupted", "reconciling", "queued"})
_WORK_LINE = re.compile(r"^(?:(T\d+) )?#\d\S*(?: (error|ok|unknown|in_flight))?( exit=-?[1-9]\d*)?")
_TURN_LINE = re.compile(r"^- turn (T\d+) .* open=(yes|no) ")


def _open_turns(body: list[str]) -> dict[str, bool]:
    """The ledger legend's turns: label -> open; "" for lines without a label (one turn)."""
    out: dict[str, bool] = {}
    for line in body:
        m = _TURN_LINE.match(line)
        if m:
            out[m.group(1)] = m.group(2) == "yes"
    if len(out) == 1:
        out[""] = next(iter(out.values()))
    elif not out:
        out[""] = True  # a ledger with no legend lists the work of the open input
    return out


def _open_inputs(body: list[str]) -> set[str]:
    """The ids of the inputs the block lists as open."""
    out = set()
    for line in body:
        m, state = _INPUT_ID.match(line), _STATE.search(line)
        if m and state and state.group(1) in _OPEN:
            out.update(_decoded(m.group(1)))
    return out


def _item_priority(section: str, first_line: str, open_ids: set[str], open_turns: dict) -> int:
    if section.startswith("## work already done"):
        if first_line.startswith(("legend:", "- turn ")):
            return ALWAYS
        work = _WORK_LINE.match(first_line)
        if work is not None:  # capsule.work_line's lines: the legend says which turns are open
            if work.group(2) in ("error",) or work.group(3):
                return _FAILED_WORK
            label = work.group(1) or ""
            return _OPEN_WORK if open_turns.get(label, open_turns.get("", False)) else _OTHER_WORK
        m = _WORK_INPUTS.search(first_line)
        ids = set(_decoded(m.group(1))) if m else set()
        return _OPEN_WORK if ids & open_ids else _OTHER_WORK
    if section.startswith("## user inputs"):
        m = _STATE.search(first_line)
        return _OPEN_INPUT if m and m.group(1) in _OPEN else _OTHER_INPUT
    if section.startswith("## runtime facts"):
        m = _KIND.search(first_line)
        return _KEY_FACT if m and m.group(1) in KEY_FACT_KINDS else _OTHER_FACT
    for prefix, priority in _SECTION_PRIORITY:
        if section.startswith(prefix):
            return priority
    return 50  # a section this table does not know: in the middle


def _decoded(text: str) -> list[str]:
    """The string(s) of a rendered JSON literal or list of them ([] when it does not parse)."""
    try:
        value = json.loads(text)
    except ValueError:
        return []
    return [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str)]


def _items(body: list[str]) -> list[tuple[int, list[str], int]]:
    """(section index, lines, priority) per item; a heading is an item of its own section with
    no priority (kept when any of its items is); "  " lines continue the item above."""
    out: list[tuple[int, list[str], int]] = []
    section, index = "", -1
    open_ids = _open_inputs(body)
    open_turns = _open_turns(body)
    for line in body:
        if line.startswith("## "):
            section, index = line, index + 1
            out.append((index, [line], -1))
        elif line.startswith("  ") and out and out[-1][2] >= 0:
            out[-1][1].append(line)
        elif index < 0:  # the preamble
            out.append((index, [line], ALWAYS))
        else:
            out.append((index, [line], _item_priority(section, line, open_ids, open_turns)))
    return out


def shorten_block(lines: list[str], room: int, measure: Callable[[str], int]) -> str | None:
    """The block (``lines``: BEGIN marker, body, END marker) within ``room`` characters, or None
    when not even the lines that are always kept fit."""
    head, body, end = lines[0], lines[1:-1], lines[-1]
    items = _items(body)
    cost = [sum(measure(x) + 1 for x in lines_) for _, lines_, _ in items]
    fixed = measure(head) + measure(end) + 1
    order = sorted((k for k, it in enumerate(items) if it[2] >= 0), key=lambda k: (-items[k][2], -k))
    budget = room - fixed
    for attempt in range(10):  # the notes' size is known only after a choice: shrink, retry
        kept = _choose(items, cost, order, budget)
        if kept is None:
            return None
        text = _compose(head, end, items, kept)
        if measure(text) <= room:
            return _refill(head, end, items, cost, order, kept, text, room, measure)
        budget -= (measure(text) - room + 16) * 2**attempt
    return None


def _refill(head, end, items, cost, order, kept: set[int], text: str, room: int, measure) -> str:
    """The retry above shrinks the budget by whole overshoots, so it can leave out more than the
    notes needed: items left out that fit in what is still free go back in, highest priority
    first (only those no larger than the room left are tried)."""
    heading_of = _headings(items)
    free = room - measure(text)
    for k in order:
        if k in kept:
            continue
        heading = heading_of.get(items[k][0])
        extra = cost[k] + (cost[heading] if heading is not None and heading not in kept else 0)
        if extra > free:
            continue
        trial = kept | {k} | ({heading} if heading is not None else set())
        composed = _compose(head, end, items, trial)
        size = measure(composed)
        if size <= room:
            kept, text, free = trial, composed, room - size
    return text


def _headings(items) -> dict[int, int]:
    """Section index -> index of its heading item."""
    return {section: k for k, (section, _, priority) in enumerate(items) if priority < 0}


def _choose(items, cost, order, budget: int) -> set[int] | None:
    """Items kept, highest priority first, skipping what does not fit (None: an always-kept
    line does not fit)."""
    heading_of = _headings(items)
    kept: set[int] = set()
    used = 0
    for k in order:
        section, _, priority = items[k]
        heading = heading_of.get(section)
        extra = cost[k] + (cost[heading] if heading is not None and heading not in kept else 0)
        if used + extra > budget:
            if priority >= ALWAYS:
                return None
            continue
        kept.add(k)
        if heading is not None:
            kept.add(heading)
        used += extra
    return kept


def _compose(head: str, end: str, items, kept: set[int]) -> str:
    """Kept items in block order; after a section's kept items, how many of it moved."""
    heading_of = _headings(items)
    moved: dict[int, int] = {}
    last_of: dict[int, int] = {}
    for k, (section, _, priority) in enumerate(items):
        last_of[section] = k
        if priority >= 0 and k not in kept:
            moved[section] = moved.get(section, 0) + 1
    out = [head]
    untold = 0
    for k, (section, lines_, _) in enumerate(items):
        if k in kept:
            out += lines_
        if k == last_of[section] and moved.get(section):
            if heading_of.get(section) in kept:
                out.append(f"[{moved[section]} more item(s) of this section: in the full text file]")
            else:
                untold += moved[section]
    if untold:
        out.append(f"[{untold} item(s) of other sections: in the full text file]")
    out.append(end)
    return "\n".join(out)


_OBJECTIVE = re.compile(r'^(input=("(?:[^"\\]|\\.)*") .* text=)"(?:[^"\\]|\\.)*"(?: \[clipped[^\]]*\])?$')
OBJECTIVE_BELOW = "(verbatim in the user input below)"


def objective_once(lines: list[str], quoted: set[str]) -> list[str]:
    """The block's lines with the objective's text left out when that input is quoted verbatim
    after the block (``quoted``: the ids of the inputs that are): a shortened context never
    spends its room on the same request twice."""
    out = list(lines)
    for k, line in enumerate(out):
        if line.startswith("## objective") and k + 1 < len(out):
            m = _OBJECTIVE.match(out[k + 1])
            if m is not None:
                try:
                    ident = json.loads(m.group(2))
                except ValueError:
                    break
                if ident in quoted:
                    out[k + 1] = m.group(1) + OBJECTIVE_BELOW
            break
    return out
