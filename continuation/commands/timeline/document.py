"""The timeline page as one self-contained HTML file: the CSS, the script and the data inline,
nothing fetched (its Content-Security-Policy forbids any request; the live view may ask its own
server only).

The file holds the thread's outline, the newest pages up to ``EMBED_EVENTS`` events of the log
(``all_pages``: every page) and every checkpoint's capsule and rewind preview up to
``EMBED_CHECKPOINTS`` (the newest).
"""
from __future__ import annotations

import time
from importlib import resources

from continuation.commands.timeline import model, palette

#: events of the log whose pages a file holds (the newest pages; at least one)
EMBED_EVENTS = 20_000
#: checkpoints whose capsule a file holds (the newest)
EMBED_CHECKPOINTS = 200

_CSP_FILE = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
             "img-src data:; connect-src 'none'; base-uri 'none'; form-action 'none'")
_CSP_LIVE = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
             "img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'")


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


def json_text(data) -> str:
    """JSON that cannot end its ``<script>`` element (``</script>`` in a recorded text)."""
    from continuation.host import jsontext

    text = jsontext.dumps(data, ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render(data: dict, *, live: bool = False) -> str:
    """The page around ``data`` (what ``assets/page.js`` reads)."""
    thread = data["outline"]["thread"]
    title = f"continuation · {thread.get('name') or thread['thread_key']}"
    page = _asset("page.html")
    from html import escape

    for key, value in (("__CSP__", _CSP_LIVE if live else _CSP_FILE), ("__TITLE__", escape(title)),
                       ("__CSS__", _asset("page.css") + "\n" + palette.css_rules()),
                       ("__DATA__", json_text(data)), ("__JS__", _asset("page.js"))):
        page = page.replace(key, value, 1)
    return page


def file_data(engine, thread, *, all_pages: bool = False) -> dict:
    """Everything the file shows: the outline, the pages it holds and their checkpoints."""
    turns = thread.store.turn_outline(thread.key)
    outline = model.outline(engine, thread, turns)
    windows, budget = {}, EMBED_EVENTS
    for page in reversed(outline["pages"]):
        size = page["hi"] - page["lo"] + 1
        if windows and not all_pages and size > budget:
            break
        windows[str(page["lo"])] = model.window(thread, page["lo"], page["hi"], turns)
        budget -= size
    details = {}
    for cp in reversed(outline["checkpoints"][-EMBED_CHECKPOINTS:]):
        details[cp["checkpoint_id"]] = model.checkpoint_detail(engine, thread, cp["checkpoint_id"])
    return {"mode": "file", "thread": thread.key, "generated_at": time.time(),
            "outline": outline, "windows": windows, "details": details,
            "embedded_pages": len(windows)}


def live_data(engine, thread, token: str, *, poll_ms: int = 2000,
              turns: list | None = None) -> dict:
    """The live page's first screen: the outline and the newest page (the rest is fetched)."""
    turns = thread.store.turn_outline(thread.key) if turns is None else turns
    outline = model.outline(engine, thread, turns)
    last = outline["pages"][-1]
    return {"mode": "live", "thread": thread.key, "token": token, "poll_ms": poll_ms,
            "generated_at": time.time(), "outline": outline,
            "windows": {str(last["lo"]): model.window(thread, last["lo"], last["hi"], turns)},
            "details": {}, "embedded_pages": 1}
