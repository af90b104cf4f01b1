"""The recovery loop's facts, and what the log says of the loop's state.

The guard (``continuation.guard``) records, in a thread's log:

- ``guard_ran``: the check ran (``trigger`` turn / change / start, ``command``, ``exit_code``,
  ``seconds``, ``output``: its first and last part, ``output_bytes``, ``timed_out``, ``error``,
  ``verdict`` pass / fail / fatal / timeout / error, ``turn_id``, ``input_id``, ``call_id``,
  ``covers_seq``: the thread's last event when the check started, so the calls finished after
  it are the changes it did not see);
- ``guard_verdict``: what the policy made of it (``action`` pass / report / rewind / halt /
  error, ``verdict``, ``run_seq``: the ``guard_ran`` it judged, ``input_id``, ``turn_id``,
  ``scope``: what its budgets count in (the input; ``turn:<id>`` for a turn with no input
  recorded; :data:`THREAD_SCOPE` outside every turn),
  ``failures_in_row``, ``rewinds_used`` / ``rewinds_budget``, ``reports_used`` /
  ``reports_budget``, ``continues``: the turn is sent back to work, ``checkpoint_id`` /
  ``checkpoint_seq``: the checkpoint taken at a pass, else the last passing one, ``why``);
- ``workspace_restored`` with ``by: "guard"``: an automatic rewind (the files half of
  ``continuation rewind``, so ``restore --undo`` undoes it);
- ``guard_delivered``: the summary handed to the model or the user (``action``, ``via``: the
  channel, ``chars``, ``sha256`` of the whole text, ``text``: its first part).

The reducer ignores these types; the loop's state is read back from them here (the guard
decides with it, the capsule shows it). Light: the stop and tool hooks import this.
"""
from __future__ import annotations

GUARD_RAN = "guard_ran"
GUARD_VERDICT = "guard_verdict"
GUARD_DELIVERED = "guard_delivered"
GUARD_TYPES = (GUARD_RAN, GUARD_VERDICT, GUARD_DELIVERED)
#: a verdict that judged a failure (the check ran and did not pass)
FAILED = ("fail", "fatal", "timeout")
#: how far back the state is read: a loop never gets this far within one input
WINDOW = 512
#: the budget scope of a run outside every turn (session start, a call with no turn)
THREAD_SCOPE = "thread"
#: a summary's whole length (``continuation.guard.summary.MAX_CHARS``): the next prompt may
#: hand a stop's text on to the model
DELIVERED_TEXT_MAX = 8000


class LoopState:
    """The loop's state for one input, from the newest guard facts of its thread."""

    __slots__ = ("last_pass", "last_verdict", "last_run", "failures_in_row", "rewinds_used",
                 "reports_used", "last_rewind", "scope")

    def __init__(self, verdicts: list[dict], runs: list[dict], scope: str | None):
        self.scope = scope
        self.last_verdict = verdicts[-1] if verdicts else None
        self.last_run = runs[-1] if runs else None
        self.last_pass = next((v for v in reversed(verdicts)
                               if (v["data"] or {}).get("action") == "pass"), None)
        self.last_rewind = next((v for v in reversed(verdicts)
                                 if (v["data"] or {}).get("action") == "rewind"), None)
        # a pass, or a rewind back to a passing state, starts the count again
        floor = max(self.last_pass["seq"] if self.last_pass else 0,
                    self.last_rewind["seq"] if self.last_rewind else 0)
        # a failure found before the agent did anything (action "none") is not the agent's
        self.failures_in_row = sum(1 for v in verdicts if v["seq"] > floor
                                   and (v["data"] or {}).get("verdict") in FAILED
                                   and (v["data"] or {}).get("action") != "none")
        mine = [v["data"] or {} for v in verdicts if scope is not None
                and _scope_of(v["data"] or {}) == scope]
        self.rewinds_used = sum(1 for d in mine if d.get("action") == "rewind")
        self.reports_used = sum(1 for d in mine if d.get("action") == "report" and d.get("continues"))

    @property
    def good_checkpoint(self) -> str | None:
        return (self.last_pass["data"] or {}).get("checkpoint_id") if self.last_pass else None

    @property
    def good_seq(self) -> int | None:
        return (self.last_pass["data"] or {}).get("checkpoint_seq") if self.last_pass else None

    @property
    def last_run_seq(self) -> int:
        return int(self.last_run["seq"]) if self.last_run else 0

    @property
    def covers_seq(self) -> int:
        """The thread's last event when the newest run started (its own seq for a run recorded
        before runs said it): what finished after it, the run did not see."""
        if not self.last_run:
            return 0
        covers = (self.last_run["data"] or {}).get("covers_seq")
        return covers if isinstance(covers, int) and not isinstance(covers, bool) else self.last_run_seq

    @property
    def unsettled(self) -> bool:
        """The newest verdict left the work failing, or rewound it: only a run can say where
        the files stand now."""
        data = (self.last_verdict or {}).get("data") or {}
        return data.get("verdict") in FAILED and data.get("action") in ("report", "halt", "rewind")

    @property
    def failing(self) -> bool:
        """The newest verdict judged the agent's work failing: not since put back to a passing
        state by a rewind, and not found before the agent started (action ``none``)."""
        data = (self.last_verdict or {}).get("data") or {}
        return data.get("verdict") in FAILED and data.get("action") not in ("rewind", "none")


def _scope_of(data: dict):
    return data.get("scope", data.get("input_id"))


def loop_state(store, thread_key: str, scope: str | None) -> LoopState:
    """The loop's state, its budgets counted in ``scope`` (see ``guard_verdict``)."""
    verdicts = store.events_of_types(thread_key, [GUARD_VERDICT], newest=WINDOW)
    runs = store.events_of_types(thread_key, [GUARD_RAN], newest=1)
    return LoopState(verdicts, runs, scope)


def delivery(action: str, via: str, text: str) -> dict:
    """A ``guard_delivered`` fact's data: the whole text's length and digest, its first part."""
    import hashlib

    return {"action": action, "via": via, "chars": len(text),
            "sha256": hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
            "text": text[:DELIVERED_TEXT_MAX]}


#: a delivery that reached only the user: the agent was stopped at a turn's end
USER_ONLY_CHANNEL = "stop_reason"
#: the next prompt's added context, which tells the model of such a stop
PROMPT_CHANNEL = "prompt_context"


def stop_the_model_missed(store, thread_key: str) -> dict | None:
    """The newest delivery when it is a stop that reached only the user (a turn-end stop:
    ``continue: false`` shows its reason to the user, never to the model); None once the
    model was told, or when the newest delivery reached the model itself."""
    newest = store.events_of_types(thread_key, [GUARD_DELIVERED], newest=1)
    data = (newest[-1]["data"] or {}) if newest else {}
    return data if data.get("via") == USER_ONLY_CHANNEL else None


def delivered_texts(store, thread_key: str, newest: int = 4) -> list[dict]:
    """The newest deliveries (``guard_delivered`` data), oldest first."""
    return [e["data"] or {} for e in store.events_of_types(thread_key, [GUARD_DELIVERED],
                                                            newest=newest)]


TITLE_FAILING = "guard: the project's check is failing"
PRIORITY_FAILING = 80
NOTICE_OUTPUT_CHARS = 1500


def capsule_notice(store, thread_key: str, upto: int | None = None):
    """The notice a capsule carries while the newest verdict is a failure the agent has to
    deal with (reported, or the agent was stopped): the check, how it failed, its output's
    end and the last passing checkpoint; None otherwise."""
    from capsule.notice import Notice

    verdicts = store.events_of_types(thread_key, [GUARD_VERDICT], upto=upto, newest=1)
    if not verdicts:
        return None
    data = verdicts[-1]["data"] or {}
    if data.get("verdict") not in FAILED or data.get("action") not in ("report", "halt"):
        return None
    runs = store.events_of_types(thread_key, [GUARD_RAN], upto=data.get("run_seq"), newest=1)
    run = (runs[-1]["data"] or {}) if runs else {}
    output = (run.get("output") or "").rstrip()
    if len(output) > NOTICE_OUTPUT_CHARS:
        output = "[...]" + output[-NOTICE_OUTPUT_CHARS:]
    stopped = data.get("action") == "halt"
    lines = [f"The check `{run.get('command')}` ended with exit {run.get('exit_code')} "
             f"({data.get('verdict')}); failed verdicts in a row: {data.get('failures_in_row')}."
             + (f" The agent was stopped: {data.get('why')}." if stopped else ""),
             f"Last passing checkpoint: {data.get('checkpoint_id') or 'none recorded'}"
             + (f" (event {data.get('checkpoint_seq')})." if data.get("checkpoint_id") else "."),
             "Its output's end:", *("  " + line for line in output.splitlines()[-40:])]
    return Notice(title=TITLE_FAILING, lines=lines, priority=PRIORITY_FAILING,
                  pointer=f"event:{thread_key}:{verdicts[-1]['seq']}")


def status(store, thread_key: str, upto: int | None = None) -> dict | None:
    """What ``status`` and the capsule show of the loop: the newest verdict, the run it judged,
    the last passing checkpoint and the automatic rewinds; None when the thread never ran a
    check."""
    verdicts = store.events_of_types(thread_key, [GUARD_VERDICT], upto=upto, newest=WINDOW)
    if not verdicts:
        return None
    runs = store.events_of_types(thread_key, [GUARD_RAN], upto=upto, newest=1)
    last = verdicts[-1]["data"] or {}
    state = LoopState(verdicts, runs, _scope_of(last))
    run = runs[-1]["data"] if runs else {}
    return {
        "command": run.get("command"), "verdict": last.get("verdict"),
        "action": last.get("action"), "exit_code": run.get("exit_code"),
        "at_seq": verdicts[-1]["seq"], "failures_in_row": last.get("failures_in_row", 0),
        "good_checkpoint": state.good_checkpoint, "good_seq": state.good_seq,
        "rewinds_used": state.rewinds_used, "rewinds_budget": last.get("rewinds_budget"),
        "input_id": last.get("input_id"), "runs": len(verdicts),
    }
