"""A context's text as it must be written for a runtime's hook channel to carry it intact.

Gemini CLI 0.61.0 replaces every ``<`` and ``>`` of a hook's ``additionalContext`` with
``&lt;`` and ``&gt;`` before its model sees it (``DefaultHookOutput.getAdditionalContext``), so
``<<<CONTINUATION-CHECKPOINT ...>>>`` and every ``>>`` of a command would arrive altered.
:func:`for_gemini` rewrites what the engine wrote so that nothing it says depends on them:

- marker lines ``<<<NAME ... >>>`` become ``[[[NAME ... ]]]`` (the nonces are unchanged, so a
  text still cannot forge one);
- inside the checkpoint block, a work line whose command holds ``<`` or ``>`` is written as
  ``$json "<the command as a JSON string>"`` with those characters as ``\\u003c`` / ``\\u003e``,
  and every other ``<`` / ``>`` of the block (all inside JSON string literals) likewise;
- the user's own texts (the input blocks) are left as they are: the runtime shows them to the
  model in its own history too, and rewriting them would make them someone else's words. A note
  at the top says so.

Files (the spilled context, the work record's pages) are read with Gemini's ``read_file``, which
returns them unchanged: they keep the plain form.
"""
from __future__ import annotations

import json
import re

from capsule.work_line import SHELL_JSON_MARK

_MARKER = re.compile(r"^<<<(CONTINUATION-[A-Z-]+ [0-9a-f]+ (?:BEGIN|END)\b[^\n]*)>>>$")
_WORK = re.compile(r"^((?:T\d+ )?#\d[^$]*?)\$ (.*)$")
GEMINI_NOTE = (
    "[continuation] Markers are written [[[ ... ]]] here, and < and > inside quoted values as "
    "\\u003c and \\u003e (this runtime escapes < and > in hook context); text of the user's "
    "own inputs may show them as &lt; and &gt;."
)


def _escape_angles(text: str) -> str:
    return text.replace("<", "\\u003c").replace(">", "\\u003e")


def for_gemini(text: str) -> str:
    out = [GEMINI_NOTE]
    in_block = False
    for line in text.split("\n"):
        marker = _MARKER.match(line)
        if marker is not None:
            body = marker.group(1)
            if body.startswith("CONTINUATION-CHECKPOINT"):
                in_block = body.endswith("BEGIN")
            out.append(f"[[[{_escape_angles(body)}]]]")
            continue
        if in_block:
            work = _WORK.match(line)
            if work is not None and ("<" in work.group(2) or ">" in work.group(2)):
                literal = json.dumps(work.group(2), ensure_ascii=False)
                line = f"{work.group(1)}{SHELL_JSON_MARK}{_escape_angles(literal)}"
            else:
                line = _escape_angles(line)
        elif line.startswith("[continuation]"):
            line = line.replace("<<<", "[[[").replace(">>>", "]]]")
        out.append(line)
    return "\n".join(out)


def from_gemini_marker(line: str) -> str:
    """A ``[[[...]]]`` marker line back in the plain form (readers of both channels)."""
    if line.startswith("[[[") and line.endswith("]]]"):
        return "<<<" + line[3:-3].replace("\\u003c", "<").replace("\\u003e", ">") + ">>>"
    return line

