"""A titled section the engine adds to a capsule (reconciliation prompt, recovery notice, rewind
summary), as a plain object: made where no pydantic is imported (a boundary's own process) and
validated as a :class:`capsule.source.SourceNotice` where the capsule is built."""
from __future__ import annotations

FIELDS = ("title", "lines", "priority", "pointer")


class Notice:
    """The fields of :class:`capsule.source.SourceNotice`, same defaults; ``model_dump`` as the
    model's, so either can be passed where a notice is expected (:func:`notice_data`)."""

    __slots__ = FIELDS

    def __init__(self, title: str, lines=(), priority: int = 0, pointer: str = ""):
        self.title = title
        self.lines = list(lines)
        self.priority = priority
        self.pointer = pointer

    def model_dump(self) -> dict:
        return {name: getattr(self, name) for name in FIELDS}

    def __eq__(self, other):
        if not isinstance(other, Notice):
            return NotImplemented
        return self.model_dump() == other.model_dump()

    __hash__ = None

    def __repr__(self):
        return f"Notice({self.title!r}, {len(self.lines)} lines, priority={self.priority})"


def notice_data(notice) -> dict:
    """A notice (:class:`Notice`, a ``SourceNotice`` or a dict) as a plain dict."""
    if isinstance(notice, dict):
        return dict(notice)
    return {name: getattr(notice, name) for name in FIELDS}
