"""The per-input lifecycle, defined once as a `transitions` table.

``TRANSITIONS`` is the single definition: every allowed move of one input, named after the
runtime fact that causes it. Two consumers read it:

- :func:`machine` builds a ``transitions.Machine`` from it: the reference semantics, used to
  validate the table, to generate the Mermaid diagram (``continuation lifecycle``) and by the
  tests that check the fast path agrees with it.
- :func:`next_state` is the fold's fast path: a dict compiled from the same table. The machine is
  never given one model per input (``add_model`` is O(n) and ~9 KB a model) and the hook hot path
  does not import ``transitions`` at all (importing it costs more than the whole hook budget).

``new`` is the pseudo-state of an id that has not been admitted yet.
"""
from __future__ import annotations

# plain strings, not an Enum: the fold compares and stores them as text, and building an Enum
# class is a visible share of a hook run
STATES = ("new", "queued", "pending", "handled", "reconciling", "interrupted", "superseded",
          "rolled_back")
NEW, QUEUED, PENDING, HANDLED, RECONCILING, INTERRUPTED, SUPERSEDED, ROLLED_BACK = STATES

#: States in which an input still asks for work (shown to the model as actionable).
ACTIONABLE = frozenset({QUEUED, PENDING, RECONCILING, INTERRUPTED})
#: States that no runtime fact leaves (only an explicit user action does).
TERMINAL = frozenset({HANDLED, SUPERSEDED, ROLLED_BACK})

_LIVE = [QUEUED, PENDING, RECONCILING, INTERRUPTED]

TRANSITIONS: list[dict] = [
    # admission: exactly once per id
    {"trigger": "admitted", "source": NEW, "dest": PENDING},
    {"trigger": "admitted_while_busy", "source": NEW, "dest": QUEUED},
    # the model is given the input (a queued one, or an interrupted one re-delivered)
    {"trigger": "delivered", "source": QUEUED, "dest": PENDING},
    {"trigger": "delivered", "source": INTERRUPTED, "dest": PENDING},
    {"trigger": "delivered", "source": PENDING, "dest": PENDING},
    # a tool call of the input's turn starts or finishes: the input stays pending
    {"trigger": "tool_started", "source": PENDING, "dest": PENDING},
    {"trigger": "tool_finished", "source": PENDING, "dest": PENDING},
    # the turn ends
    {"trigger": "turn_completed", "source": PENDING, "dest": HANDLED},
    {"trigger": "turn_completed_with_open_tool", "source": PENDING, "dest": RECONCILING},
    {"trigger": "turn_aborted", "source": PENDING, "dest": INTERRUPTED},
    {"trigger": "turn_aborted_with_open_tool", "source": PENDING, "dest": RECONCILING},
    # the owning process is gone without a clean end
    {"trigger": "crash_detected", "source": PENDING, "dest": INTERRUPTED},
    {"trigger": "crash_detected_with_open_tool", "source": PENDING, "dest": RECONCILING},
    # a late outcome settles the unknown call by itself
    {"trigger": "tool_finished_after_turn_completed", "source": RECONCILING, "dest": HANDLED},
    {"trigger": "tool_finished_after_turn_cut", "source": RECONCILING, "dest": INTERRUPTED},
    # the user (or an automatic verification) settles an unknown call
    {"trigger": "reconciled", "source": RECONCILING, "dest": PENDING},
    {"trigger": "reconciled_turn_completed", "source": RECONCILING, "dest": HANDLED},
    # explicit user actions
    {"trigger": "rolled_back", "source": _LIVE + [HANDLED], "dest": ROLLED_BACK},
    {"trigger": "superseded", "source": _LIVE, "dest": SUPERSEDED},
    {"trigger": "reopened", "source": HANDLED, "dest": PENDING},
]


class IllegalTransition(Exception):
    """A fact that the lifecycle does not allow in the input's current state."""

    def __init__(self, state: str, trigger: str, input_id: str | None = None):
        self.state, self.trigger, self.input_id = state, trigger, input_id
        where = f" (input {input_id})" if input_id else ""
        super().__init__(f"'{trigger}' is not allowed from state '{state}'{where}")


#: what a row may say: a condition or a callback would be run by the machine but not by the
#: dict lookup, so the two would disagree; such a row is refused rather than half-honoured
_ROW_KEYS = frozenset({"trigger", "source", "dest"})


def _compile(table: list[dict]) -> dict[tuple[str, str], str]:
    compiled: dict[tuple[str, str], str] = {}
    for row in table:
        if not row.keys() <= _ROW_KEYS:
            raise ValueError(f"the fast path cannot honour {sorted(row.keys() - _ROW_KEYS)} in {row}")
        sources = row["source"] if isinstance(row["source"], list) else [row["source"]]
        for source in sources:
            key = (source, row["trigger"])
            if key in compiled and compiled[key] != row["dest"]:
                raise ValueError(f"ambiguous transition {key}")
            compiled[key] = row["dest"]
    return compiled


_NEXT = _compile(TRANSITIONS)
TRIGGERS = tuple(dict.fromkeys(row["trigger"] for row in TRANSITIONS))


def next_state(state: str, trigger: str, input_id: str | None = None) -> str:
    """The state an input reaches when ``trigger`` happens in ``state``; raises if illegal."""
    try:
        return _NEXT[(state, trigger)]
    except KeyError:
        raise IllegalTransition(state, trigger, input_id) from None


def allowed(state: str, trigger: str) -> bool:
    return (state, trigger) in _NEXT


def machine(graph: bool = False):
    """A model-less ``transitions`` machine built from the table (the reference semantics).

    With ``graph=True`` a GraphMachine with the Mermaid engine, for ``continuation lifecycle``.
    """
    if graph:
        from transitions.extensions.diagrams import GraphMachine as Machine

        extra = {"graph_engine": "mermaid", "show_conditions": False, "title": "Input lifecycle"}
    else:
        from transitions import Machine

        extra = {}
    return Machine(
        model=None,
        states=list(STATES),
        transitions=[dict(row) for row in TRANSITIONS],
        initial=NEW,
        auto_transitions=False,
        send_event=False,
        **extra,
    )


def mermaid() -> str:
    """The state diagram, generated from the table (so it cannot disagree with the code)."""
    from transitions.extensions.diagrams import GraphMachine

    class _Diagram:
        pass

    model = _Diagram()
    GraphMachine(
        model=model,
        states=list(STATES),
        transitions=[dict(row) for row in TRANSITIONS],
        initial=NEW,
        auto_transitions=False,
        graph_engine="mermaid",
        show_conditions=False,
        title="Input lifecycle",
    )
    text = model.get_graph().draw(None)
    # Drop the styling lines: they mark the "current" state of the throwaway model, which is
    # meaningless for a diagram of the table.
    keep = [
        line
        for line in text.splitlines()
        if not line.strip().startswith(("classDef ", "Class "))
    ]
    return "\n".join(keep).rstrip() + "\n"
