"""Plain-text tables and JSON for command output."""
from __future__ import annotations

import json
import sys


def emit_json(data) -> None:
    # ASCII escapes: a lone surrogate the runtime sent stays exact and the output stays valid
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=True, default=str) + "\n")


def clip(text, width: int) -> str:
    text = "" if text is None else str(text)
    text = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    text = text.replace("\r", " ").replace("\n", " ")
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def table(rows: list[dict], columns: list[tuple[str, str, int]]) -> None:
    """``columns``: (key, heading, max width)."""
    if not rows:
        sys.stdout.write("(none)\n")
        return
    cells = [[clip(r.get(k), w) for k, _, w in columns] for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, (_, h, _) in enumerate(columns)]
    line = "  ".join(h.ljust(widths[i]) for i, (_, h, _) in enumerate(columns))
    sys.stdout.write(line.rstrip() + "\n")
    for c in cells:
        sys.stdout.write("  ".join(v.ljust(widths[i]) for i, v in enumerate(c)).rstrip() + "\n")
