"""The model's side of a simulated session: a deterministic scripted agent.

The agent knows a *catalog*: for each request text, the tool calls doing it takes. What it
knows about the session is its *memory*: the conversation it can see. A compaction replaces
that memory with whatever the continuation policy hands over (for continuation: the context
block the hook answered with), and the agent decides from it alone:

- a request whose state looks actionable (pending, interrupted, queued, or a plain user message
  with no state) is done: every planned tool call not already listed as finished is executed
  (a call planned k times is done once per finished listing: the work ledger's ``ran=Kx`` and
  ``N=...`` groups count each call);
- a request in ``reconciling`` is never re-executed: the agent verifies instead and waits;
- handled, superseded and rolled-back requests are left alone.

That rule ("do every request that looks actionable") is what makes repeated tool calls and lost
requests measurable: the agent is only as good as what it is told.

It reads as a model with a runtime's file tool does: the inline context, then each file the
context names (the spilled full text, the work record's pages), each with one read that
returns at most :data:`READ_LIMIT` characters (Codex cuts a tool's output at 10,000 bytes), and
nothing else. A finished call counts when a line shows it (:mod:`capsule.work_line`, or an
older capsule's ``- done`` line) with the exact call text the agent would run.
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

#: States the agent acts on. ``new`` is a plain user message the runtime just delivered.
DO_STATES = {"new", "pending", "interrupted", "queued", "open"}
VERIFY_STATES = {"reconciling"}
#: What the agent writes into its memory once it has answered a request in this context.
ANSWERED = "answered"

_BEGIN = re.compile(r"^<<<CONTINUATION-CHECKPOINT (\w+) BEGIN>>>$")
_FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\([^)]*\)|\S+)')
#: the inline part of a context shortened to fit a runtime's limit names the file with all of it
_SPILL = re.compile(r'The full text \(\d+ characters\) is in the file ("(?:[^"\\]|\\.)*")')
_SPILL_PARTS = re.compile(r'The full text \(\d+ characters\) is in (\d+) parts of one file read each: '
                          r'("(?:[^"\\]|\\.)*")')
_FOLDER = re.compile(r'^folder=("(?:[^"\\]|\\.)*")')
_PAGE = re.compile(r'^- page ("(?:[^"\\]|\\.)*")')
#: what one read of a file returns at most (a runtime tool's output limit)
READ_LIMIT = 10_000


@dataclass
class Item:
    """One request as the agent sees it."""

    text: str
    state: str = "new"
    key: str | None = None
    input_id: str | None = None
    done_args: list = field(default_factory=list)  # canonical args of calls known finished
    unknown_args: list = field(default_factory=list)  # started, outcome unknown

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Item":
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


_SURROGATE = re.compile("[\ud800-\udfff]")


def normal(text: str) -> str:
    """Text as a store keeps it: lone surrogates become U+FFFD (they cannot be UTF-8)."""
    return _SURROGATE.sub("\ufffd", text)


def canon(args) -> str:
    return json.dumps(args, sort_keys=True, ensure_ascii=True)


def _literal(raw: str):
    if raw.startswith('"'):
        try:
            return json.loads(raw)
        except ValueError:
            return raw.strip('"')
    return raw


def _fields(line: str) -> dict:
    return {m.group(1): _literal(m.group(2)) for m in _FIELD.finditer(line)}


@dataclass
class ParsedContext:
    inputs: list[dict]
    calls: list[dict]  # unsettled calls listed one by one, and every finished call of the ledger
    objective: dict | None
    objective_text: str | None
    full_texts: dict = field(default_factory=dict)


def read_file_limited(path: str, limit: int = READ_LIMIT) -> str:
    """One read of a file through a runtime's tool: at most ``limit`` characters ('' if it
    cannot be read)."""
    try:
        return Path(path).read_text(encoding="utf-8", errors="surrogateescape")[:limit]
    except OSError:
        return ""


def read_context(text: str, reader=read_file_limited) -> ParsedContext | None:
    """The checkpoint block of an additionalContext, or None if there is none.

    Only lines between the BEGIN marker and the END marker carrying the same nonce count; a
    spilled context (the inline part points to a file) is read from that file, and every work
    record page the block names is read too, each with one ``reader`` call."""
    if not text:
        return None
    if "[[[CONTINUATION-" in text:  # Gemini's channel (capsule.channel): markers back, &lt; read as <
        from capsule.channel import from_gemini_marker

        text = "\n".join(from_gemini_marker(x) for x in text.split("\n"))
        text = text.replace("&lt;", "<").replace("&gt;", ">")
    spill, parts = _SPILL.search(text), _SPILL_PARTS.search(text)
    if spill:
        try:
            text = reader(json.loads(spill.group(1))) or text
        except ValueError:
            pass
    elif parts:  # part1's path; the others are numbered beside it
        first = json.loads(parts.group(2))
        base = first[: -len("1.md")]
        text = "".join(reader(f"{base}{k}.md") for k in range(1, int(parts.group(1)) + 1)) or text
    lines = text.splitlines()
    nonce = None
    body: list[str] = []
    rest: list[str] = []
    for i, line in enumerate(lines):
        m = _BEGIN.match(line)
        if m and nonce is None:
            nonce = m.group(1)
            continue
        if nonce and line == f"<<<CONTINUATION-CHECKPOINT {nonce} END>>>":
            rest = lines[i + 1:]
            break
        if nonce:
            body.append(line)
    if nonce is None:
        return None
    inputs, calls, objective = [], [], None
    section = ""
    folder, pages = None, []
    for line in body:
        if line.startswith("## "):
            section = line[3:]
            continue
        if line.startswith("- input="):
            inputs.append(_fields(line))
        elif line.startswith("- call="):
            f = _fields(line)
            args = f.get("args")
            if isinstance(args, str):
                try:
                    f["args"] = json.loads(args)
                except ValueError:
                    pass
            calls.append(f)
        elif line.startswith("- done "):
            calls += _ledger_calls(_fields(line))
        elif section.startswith("work already done") and (line.startswith("#") or line.startswith("T")):
            calls += _work_line_calls(line)
        elif section.startswith("work record"):
            m = _FOLDER.match(line) or _PAGE.match(line)
            if m is not None and m.re is _FOLDER:
                folder = _literal(m.group(1))
            elif m is not None:
                pages.append(_literal(m.group(1)))
        elif section.startswith("objective") and line.startswith("input="):
            objective = _fields(line)
    seen = {(c.get("seq"), c.get("text")) for c in calls if c.get("seq")}
    for name in pages if isinstance(folder, str) else []:
        for line in reader(str(Path(folder) / name)).splitlines():
            for call in _work_line_calls(line):
                if (call.get("seq"), call.get("text")) not in seen:  # inline already
                    seen.add((call.get("seq"), call.get("text")))
                    calls.append(call)
    # the full text of open inputs follows the block, one delimited block per input id
    full_texts = {m.group(2): m.group(3) for m in re.finditer(
        r'<<<CONTINUATION-USER-INPUT (\w+) BEGIN user input id="([^"]*)"[^\n]*>>>\n(.*?)\n'
        r'<<<CONTINUATION-USER-INPUT \1 END>>>', "\n".join(rest), re.S)}
    objective_text = full_texts.get(str((objective or {}).get("input")))
    return ParsedContext(inputs, calls, objective, objective_text, full_texts)


def _work_line_calls(line: str) -> list[dict]:
    """The finished calls a :mod:`capsule.work_line` line stands for, each with its call text."""
    from capsule.ledger import expand_group
    from capsule.work_line import parse_work_line

    f = parse_work_line(line)
    if f is None or not f["text"] or f["text"].startswith("(omitted"):
        return []
    texts = expand_group(f["text"], f["values"])
    if f["values"] is None:
        texts = texts * f["count"]
    return [{"call": None, "tool": f["tool"], "status": f["status"], "text": text,
             "seq": f["first"] if len(texts) == 1 else None} for text in texts]


def _ledger_calls(f: dict) -> list[dict]:
    """The finished calls one work-ledger line stands for (``ran=Kx``; ``N=`` expands ``{N}``)."""
    from capsule.ledger import expand_group

    args = f.get("args")
    if not isinstance(args, str):
        return []
    texts = expand_group(args, f["N"] if "N" in f else None)
    if "N" not in f:
        count = str(f.get("ran", "1x")).rstrip("x")
        texts = texts * (int(count) if count.isdigit() else 1)
    out = []
    for text in texts:
        try:
            parsed = json.loads(text)
        except ValueError:
            continue
        out.append({"call": None, "tool": f.get("tool"), "status": f.get("status"), "args": parsed})
    return out


class Catalog:
    """Request text -> planned tool calls."""

    def __init__(self, requests: dict):
        self.requests = requests  # key -> {"text": ..., "tools": [{"tool", "input", "effect"?}]}
        self._by_text = {normal(r["text"]): k for k, r in requests.items()}

    def text(self, key: str) -> str:
        return self.requests[key]["text"]

    def tools(self, key: str | None) -> list[dict]:
        return list(self.requests.get(key, {}).get("tools", [])) if key else []

    def key_for(self, text: str | None) -> str | None:
        """Which request a (possibly clipped) text is: exact, else a long enough prefix."""
        if text is None:
            return None
        text = normal(text)
        if text in self._by_text:
            return self._by_text[text]
        head = text.split(" [clipped", 1)[0]
        if len(head) >= 32:
            for full, key in self._by_text.items():
                if full.startswith(head[:256]) or head.startswith(full[:256]):
                    return key
        return None

    def key_for_args(self, args) -> str | None:
        c = canon(args)
        for key, r in self.requests.items():
            if any(canon(t["input"]) == c for t in r.get("tools", [])):
                return key
        return None

    def key_for_text(self, text: str) -> str | None:
        """Which request plans a call written as :func:`capsule.work_line.call_text` writes it."""
        for key, r in self.requests.items():
            if any(planned_text(t) == text for t in r.get("tools", [])):
                return key
        return None


def planned_text(tool: dict) -> str:
    """A planned call as a work line writes it."""
    from capsule.work_line import call_text

    return call_text(tool.get("tool", "Bash"), tool["input"])


def memory_from_context(ctx: ParsedContext, catalog: Catalog) -> list[Item]:
    """What the continuation context tells the agent: each input with its engine state, and
    which of its tool calls finished or have an unknown outcome."""
    items: list[Item] = []
    for f in ctx.inputs:
        text = f.get("text")
        full = ctx.full_texts.get(str(f.get("input")))
        if full is not None:
            text = full
        elif text == "(see objective)" and ctx.objective is not None:
            text = ctx.objective.get("text")
        if not isinstance(text, str) or text.startswith("(omitted"):
            text = None
        key = catalog.key_for(text)
        items.append(Item(text=text or "", state=str(f.get("state", "pending")), key=key,
                          input_id=f.get("input")))
    by_key = {i.key: i for i in items if i.key}
    for call in ctx.calls:
        if "text" in call:  # a work line: the call as it ran
            key = catalog.key_for_text(call["text"])
            done = call["text"]
        else:
            key = catalog.key_for_args(call.get("args"))
            done = canon(call.get("args"))
        item = by_key.get(key)
        if item is None:
            continue
        if call.get("status") in ("ok", "error", "reconciled"):
            item.done_args.append(done)
        elif call.get("status") in ("in_flight", "unknown"):
            item.unknown_args.append(done)
    return items


def _union(a: list, b: list) -> list:
    """Multiset union: each text as many times as the larger side lists it."""
    from collections import Counter

    return sorted((Counter(a) | Counter(b)).elements())


def merge(memory: list[Item], incoming: list[Item]) -> list[Item]:
    """Add items the agent does not know yet; an item it knows takes the newer state."""
    out = list(memory)
    for new in incoming:
        same = next((m for m in out if (new.key and m.key == new.key)
                     or (new.input_id and m.input_id == new.input_id)), None)
        if same is None:
            out.append(new)
        else:
            same.state = new.state
            same.input_id = same.input_id or new.input_id
            same.done_args = _union(same.done_args, new.done_args)
            same.unknown_args = _union(same.unknown_args, new.unknown_args)
    return out


@dataclass
class Decision:
    key: str | None
    kind: str  # "execute" | "verify"
    tool_index: int | None = None
    tool: dict | None = None


def decide(memory: list[Item], catalog: Catalog) -> list[Decision]:
    """Every action the agent takes on this memory, in order."""
    out: list[Decision] = []
    for item in memory:
        if item.state in VERIFY_STATES:
            out.append(Decision(item.key, "verify"))
            continue
        if item.state not in DO_STATES:
            continue
        from collections import Counter

        done = Counter(item.done_args)  # each finished listing covers one planned call
        for i, tool in enumerate(catalog.tools(item.key)):
            c, text = canon(tool["input"]), planned_text(tool)
            if done[c] > 0:
                done[c] -= 1
                continue
            if done[text] > 0:
                done[text] -= 1
                continue
            if c in item.unknown_args or text in item.unknown_args:
                continue
            out.append(Decision(item.key, "execute", i, tool))
    return out
