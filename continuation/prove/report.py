"""Scenario results: the checks each scenario made, its metrics, the table and the JSON report."""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field


class NotAvailable(Exception):
    """A feature the scenario needs does not exist (yet): the scenario FAILs, saying what."""


@dataclass
class Check:
    name: str
    ok: bool
    detail: str = ""

    def to_dict(self) -> dict:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


@dataclass
class Result:
    number: int
    title: str
    checks: list[Check] = field(default_factory=list)
    metrics: dict = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0
    sessions: list = field(default_factory=list)
    _expected: list = field(default_factory=list)  # (session, {key: state})

    def check(self, name: str, ok, detail: str = "") -> bool:
        self.checks.append(Check(name, bool(ok), detail))
        return bool(ok)

    def equal(self, name: str, actual, expected) -> bool:
        return self.check(name, actual == expected, f"expected {expected!r}, got {actual!r}")

    def track(self, session):
        self.sessions.append(session)
        return session

    def expect_states(self, session, expected: dict[str, str], label: str = "") -> None:
        """Compare the engine's state of each input with the script's expectation (counted in
        input-state accuracy) and record it as a check."""
        try:
            actual = session.engine_states()
        except LookupError as exc:
            actual = {}
            self.check(f"thread exists{label}", False, str(exc))
        self._expected.append((expected, actual))
        wrong = {k: (v, actual.get(k)) for k, v in expected.items() if actual.get(k) != v}
        self.check(f"input states{label}: " + ", ".join(f"{k}={v}" for k, v in expected.items()),
                   not wrong, "" if not wrong else
                   "; ".join(f"{k}: expected {e}, engine says {a}" for k, (e, a) in wrong.items()))

    @property
    def passed(self) -> bool:
        return self.error is None and bool(self.checks) and all(c.ok for c in self.checks)

    def finish(self) -> None:
        m = self.metrics
        pre = [h["ms"] for s in self.sessions for h in s.hooks("PreCompact") if h.get("rc") == 0]
        if pre and "checkpoint_cost_ms" not in m:
            m["checkpoint_cost_ms"] = round(statistics.median(pre), 1)
        ctx = [h["ms"] for s in self.sessions for h in s.hooks("SessionStart")
               if h.get("context_chars")]
        if not ctx:  # delivered on a prompt instead (deferred delivery)
            ctx = [h["ms"] for s in self.sessions for h in s.hooks() if h.get("context_chars")]
        if ctx and "recovery_latency_ms" not in m:
            m["recovery_latency_ms"] = round(statistics.median(ctx), 1)
        if self.sessions and "repeated_tool_calls" not in m:
            m["repeated_tool_calls"] = sum(s.repeated_tool_calls() for s in self.sessions)
        if self._expected and "input_state_accuracy" not in m:
            total = sum(len(e) for e, _ in self._expected)
            right = sum(1 for e, a in self._expected for k, v in e.items() if a.get(k) == v)
            m["input_state_accuracy"] = round(right / total, 3) if total else None
        if self.sessions:
            # "command": the `continuation hook` command per call; "fork": a fork of the
            # simulated runtime with the hook modules imported once, running the same code
            m["hooks"] = sorted({"fork" if s.hook == "fork" else "command"
                                 for s in self.sessions})
        total = len(self.checks)
        m["checklist_completion"] = round(sum(c.ok for c in self.checks) / total, 3) if total else 0.0

    def to_dict(self) -> dict:
        return {"scenario": self.number, "title": self.title,
                "status": "PASS" if self.passed else "FAIL", "error": self.error,
                "seconds": round(self.seconds, 2), "metrics": self.metrics,
                "checks": [c.to_dict() for c in self.checks]}


METRIC_DEFINITIONS = {
    "checkpoint_cost_ms": "median wall time of the PreCompact hook command (process start, "
                          "workspace snapshot, capsule build and commit)",
    "recovery_latency_ms": "median wall time from the restart to the context in the agent's "
                           "hands: the SessionStart hook that answered with context (after a "
                           "crash: from `continuation recover` to the resumed runtime's context)",
    "repeated_tool_calls": "executions of a planned tool call beyond its first (a handled "
                           "request's work done again, or an unknown call retried blindly)",
    "input_state_accuracy": "fraction of inputs whose engine state equals the script's "
                            "expected state, over every state check of the scenario",
    "checklist_completion": "fraction of the scenario's checks that passed",
}

METRIC_COLUMNS = (("checkpoint_cost_ms", "ckpt ms"), ("recovery_latency_ms", "recov ms"),
                  ("repeated_tool_calls", "repeats"), ("input_state_accuracy", "states"),
                  ("checklist_completion", "checks"))


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def table(results: list[Result], verbose: bool = False, width: int | None = None) -> str:
    """The scenarios' table, fitted to ``width`` (None: no limit): the title gives up room
    first; a failure's detail wraps under its row."""
    from continuation.host.textfit import Column, render_table, wrap

    columns = [Column("number", "#", "fixed"), Column("title", "scenario"),
               Column("result", "result", "fixed")] + [
        Column(k, h, "fixed") for k, h in METRIC_COLUMNS]
    rows = [{"number": r.number, "title": r.title, "result": "PASS" if r.passed else "FAIL",
             **{k: _fmt(r.metrics.get(k)) for k, _ in METRIC_COLUMNS}} for r in results]
    heading, *body = render_table(rows, columns, width)
    import re

    # each heading underlined (a heading's words are one space apart, columns two or more)
    lines = [heading, re.sub(r"\S+(?: \S+)*", lambda m: "-" * len(m.group()), heading)]
    for r, line in zip(results, body):
        lines.append(line)
        notes = [f"      {r.error}"] if r.error else []
        for c in r.checks:
            if not c.ok:
                notes.append(f"      failed: {c.name}" + (f" ({c.detail})" if c.detail else ""))
            elif verbose:
                notes.append(f"      ok: {c.name}")
        lines += [piece for note in notes for piece in wrap(note, width)]
    return "\n".join(lines)
