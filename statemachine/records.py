"""The derived records the fold produces: one per input, turn and tool call.

Plain slotted classes, not dataclasses or pydantic: the hook hot path builds a few of them per
event, and importing ``dataclasses`` (which pulls in ``inspect``) alone costs more than the
rest of a hook run. ``to_row``/``from_row`` give the JSON-able form the store keeps; unknown
keys are ignored so an older reader survives a newer writer.
"""
from __future__ import annotations

_REQUIRED = object()


class _Row:
    """Fields are declared once in ``_FIELDS`` as (name, default); a list or dict default is
    copied per instance."""

    __slots__ = ()
    _FIELDS: tuple = ()

    def __init__(self, **values):
        for name, default in self._FIELDS:
            if name in values:
                value = values.pop(name)
            elif default is _REQUIRED:
                raise TypeError(f"{type(self).__name__} needs {name!r}")
            else:
                value = default.copy() if isinstance(default, (list, dict)) else default
            setattr(self, name, value)
        if values:
            raise TypeError(f"{type(self).__name__} has no field(s) {sorted(values)}")

    def to_row(self) -> dict:
        return {name: getattr(self, name) for name, _ in self._FIELDS}

    @classmethod
    def from_row(cls, row: dict):
        names = {name for name, _ in cls._FIELDS}
        return cls(**{k: v for k, v in row.items() if k in names})

    def __eq__(self, other):
        return type(other) is type(self) and other.to_row() == self.to_row()

    def __repr__(self):
        inner = ", ".join(f"{k}={v!r}" for k, v in self.to_row().items())
        return f"{type(self).__name__}({inner})"


def _slots(fields: tuple) -> tuple:
    return tuple(name for name, _ in fields)


class InputRecord(_Row):
    _FIELDS = (
        ("input_id", _REQUIRED),
        ("state", _REQUIRED),
        ("text", ""),
        ("turn_id", None),
        ("queued", False),
        ("ordinal", 0),
        ("admitted_seq", 0),
        ("updated_seq", 0),
        ("id_source", "runtime"),
        ("attachments", []),
        # ids of tool calls whose unknown outcome holds this input in `reconciling`
        ("unknown_calls", []),
        # how the input's turn ended while calls were unknown: completed | aborted | crashed
        ("cut_by", None),
        # a settled call was not applied (or must be retried): the input cannot be handled yet
        ("work_remains", False),
        ("last_trigger", None),
        # the current state came from outside the model's conversation (a decision recorded
        # from the command line, a crash found afterwards) and no context carrying it has been
        # delivered yet: the next clean turn does not decide this input (statemachine.carry)
        ("awaits_delivery", False),
    )
    __slots__ = _slots(_FIELDS)


class TurnRecord(_Row):
    _FIELDS = (
        ("turn_id", _REQUIRED),
        ("status", "running"),  # running | completed | aborted | crashed
        ("input_ids", []),
        ("open_calls", []),
        ("started_seq", 0),
        ("ended_seq", None),
        # inputs an earlier end of this turn decided, before a runtime reused its id for new
        # input: the next end decides only what was delivered into the turn since
        ("decided_input_ids", []),
    )
    __slots__ = _slots(_FIELDS)


class ToolCallRecord(_Row):
    _FIELDS = (
        ("call_id", _REQUIRED),
        ("turn_id", None),
        ("tool", ""),
        ("args", {}),
        # in_flight | ok | error | unknown (no outcome when its turn or session ended)
        # | reconciled | rolled_back
        ("status", "in_flight"),
        ("started_seq", 0),
        ("finished_seq", None),
        ("started_at", None),
        ("outcome", {}),
        ("decision", None),  # applied | not_applied | retry_safe (reconciliation)
        # the runtime's id when the record is keyed ``id@turn`` (the id was reused in a later
        # turn by a provider that numbers calls per process); None: call_id is the runtime's
        ("runtime_call_id", None),
    )
    __slots__ = _slots(_FIELDS)
