"""The page's colors for input states and call statuses, in one place.

Each state has the hue the command line gives it on a terminal (pending yellow, reconciling
magenta, interrupted red; handled green, queued blue; the rest grey) and a background/text pair
that keeps WCAG AA contrast (4.5:1) on the page; the browser test measures the computed colors.
"""
from __future__ import annotations

#: state -> (background, text, the terminal color name)
STATES = {
    "queued": ("#1d4ed8", "#ffffff", "blue"),
    "pending": ("#fde68a", "#713f12", "yellow"),
    "handled": ("#15803d", "#ffffff", "green"),
    "reconciling": ("#a21caf", "#ffffff", "magenta"),
    "interrupted": ("#b91c1c", "#ffffff", "red"),
    "superseded": ("#4b5563", "#ffffff", "grey"),
    "rolled_back": ("#374151", "#ffffff", "grey"),
    "new": ("#e5e7eb", "#111827", "grey"),
}

#: call status -> (mark color, text on it)
CALLS = {
    "ok": ("#15803d", "#ffffff"),
    "error": ("#b91c1c", "#ffffff"),
    "unknown": ("#a21caf", "#ffffff"),
    "in_flight": ("#b45309", "#ffffff"),
    "reconciled": ("#0e7490", "#ffffff"),
    "rolled_back": ("#6b7280", "#ffffff"),
}


def css_rules() -> str:
    """The classes ``st-<state>`` and ``call-<status>`` (badge and mark colors)."""
    rules = [f".st-{s}{{background:{bg};color:{fg}}}" for s, (bg, fg, _) in STATES.items()]
    rules += [f".call-{s}{{background:{bg};color:{fg}}}" for s, (bg, fg) in CALLS.items()]
    return "\n".join(rules)
