"""Write a changed JSON document back in the layout its author gave it.

``json.dumps`` lays out every container the same way, so a settings file whose author wrote
``"PreToolUse": [ { "matcher": "Bash", "hooks": [ ... ] } ]`` on one line came back spread
over many lines. Here the original text is parsed with the span of every value; the new
document is written by copying the original text of each value that did not change (with its
key and spacing), and by laying out only what changed: a container that
was on one line stays on one line, a multi-line one keeps its members' indentation, and new
values follow their surroundings (inline inside inline containers, indented by the file's unit
elsewhere).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

_DECODER = json.JSONDecoder()
_WS = " \t\n\r"


@dataclass
class Node:
    value: Any
    start: int
    end: int
    #: objects: key -> (key start, node); arrays: [node]; scalars: None
    members: Any = None
    keys: dict = field(default_factory=dict)


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def _next_member(text: str, i: int) -> tuple[int, bool]:
    """After a member: (start of the next one, True) past a comma, else (end of the
    container, False) past its closing bracket."""
    i = _skip(text, i)
    if text[i] == ",":
        return _skip(text, i + 1), True
    return i + 1, False


def parse(text: str, i: int = 0) -> Node:
    """The value at ``i`` with the spans of it and of everything inside it."""
    i = _skip(text, i)
    if text[i] == "{":
        node = Node({}, i, i, {})
        j = _skip(text, i + 1)
        if text[j] == "}":
            node.end = j + 1
            return node
        while True:
            key_start = j
            key, j = _DECODER.raw_decode(text, j)
            j = _skip(text, j)
            child = parse(text, j + 1)
            node.members[key] = child
            node.keys[key] = key_start
            node.value[key] = child.value
            j, more = _next_member(text, child.end)
            if not more:
                node.end = j
                return node
    if text[i] == "[":
        node = Node([], i, i, [])
        j = _skip(text, i + 1)
        if text[j] == "]":
            node.end = j + 1
            return node
        while True:
            child = parse(text, j)
            node.members.append(child)
            node.value.append(child.value)
            j, more = _next_member(text, child.end)
            if not more:
                node.end = j
                return node
    value, j = _DECODER.raw_decode(text, i)
    return Node(value, i, j)


def _same(a, b) -> bool:
    return json.dumps(a, ensure_ascii=False) == json.dumps(b, ensure_ascii=False)


def _line_indent(text: str, pos: int) -> str | None:
    """The whitespace before ``pos`` on its line, None when something else precedes it."""
    line_start = text.rfind("\n", 0, pos) + 1
    lead = text[line_start:pos]
    return lead if not lead.strip() else None


class _Writer:
    def __init__(self, text: str, unit):
        self.text = text
        self.unit = unit

    def fresh(self, value, indent: str | None) -> str:
        """A value with no original: inline when ``indent`` is None, else laid out with the
        file's unit from ``indent``."""
        if indent is None or self.unit is None:
            return json.dumps(value, ensure_ascii=False)
        return json.dumps(value, indent=self.unit, ensure_ascii=False).replace("\n", "\n" + indent)

    def value(self, value, node: Node | None, indent: str | None) -> str:
        if node is not None and _same(value, node.value):
            return self.text[node.start:node.end]
        same_kind = node is not None and node.members and (
            (isinstance(value, dict) and isinstance(node.value, dict))
            or (isinstance(value, list) and isinstance(node.value, list)))
        if not same_kind:
            return self.fresh(value, indent)
        return self.container(value, node, indent)

    def container(self, value, node: Node, indent: str | None) -> str:
        text = self.text
        inline = indent is None or "\n" not in text[node.start:node.end]
        first = (min(node.keys.values()) if isinstance(value, dict)
                 else node.members[0].start)
        member_indent = None if inline else _line_indent(text, first)
        if member_indent is None and not inline:
            inline = True
        parts = []
        if isinstance(value, dict):
            for key, item in value.items():
                old = node.members.get(key)
                if old is None:
                    parts.append(json.dumps(key, ensure_ascii=False) + ": "
                                 + self.fresh(item, member_indent))
                else:
                    head = text[node.keys[key]:old.start]  # the key as written, with its colon
                    parts.append(head + self.value(item, old, member_indent))
        else:
            unused = list(node.members)
            for k, item in enumerate(value):
                match = next((n for n in unused if _same(item, n.value)), None)
                if match is None and k < len(node.members) and node.members[k] in unused:
                    match = node.members[k]  # the element changed in place
                if match is not None:
                    unused.remove(match)
                parts.append(self.value(item, match, member_indent))
        open_, close = ("{", "}") if isinstance(value, dict) else ("[", "]")
        if not parts:
            return open_ + close
        if inline:
            pad = " " if text[node.start + 1] in " \t" else ""
            return open_ + pad + ", ".join(parts) + pad + close
        close_indent = _line_indent(text, node.end - 1)
        close_indent = close_indent if close_indent is not None else (indent or "")
        return (open_ + "\n" + ",\n".join(member_indent + p for p in parts) + "\n"
                + close_indent + close)


def render_keeping(original: str, data, unit) -> str:
    """``data`` written in the layout of ``original`` (a JSON text, ``\\n`` line ends);
    ``unit`` is the indentation for new multi-line values (spaces, ``"\\t"`` or None)."""
    root = parse(original)
    writer = _Writer(original, unit)
    indent = "" if "\n" in original[root.start:root.end] else None
    return original[:root.start] + writer.value(data, root, indent) + original[root.end:]
