"""A scripted coding agent that makes plausible mistakes, and the drivers it works through.

The agent (:class:`Coder`) works through a task's checklist (:mod:`.tasks`) one user input at a
time. For a function requirement it makes one ``apply_patch`` call that adds the function to its
module and a unittest for it; for a publication it runs ``sh tools/publish.sh M``. At a seeded
rate it slips (more often at a requirement with an edge that is easy to miss, such as an
inclusive bound): a wrong body (an off-by-one, a wrong constant: the new test fails), a syntax
error (the module cannot be imported: the check calls it fatal), or, before an edit, a
destructive command meant as a clean-up (``git checkout -- pkg``, deleting a module or the
tests). Each draw is a function of (seed, requirement, attempt), so every policy meets the
same luck for the same attempt.

It reads what it is told as a model would read text, nothing else:

- a failure report (the check's output) names the failing tests and modules: it fixes those
  requirements next, and a requirement it was told about is retried with the mistake rate
  times ``Rates.informed`` (it has seen the error);
- an automatic rewind's summary lists the files put back: it reads them (``Read`` calls) and
  redoes what is no longer there; the calls that reached outside the workspace are listed as
  done, so it does not publish again;
- "The agent was stopped" ends its turn.

Without such text it knows only its own memory: what it believes it did.

Drivers: :class:`ApiDriver` (``continuation.api``, in process) and :class:`HookDriver` (the
``continuation hook`` command with a runtime's payload shapes, as the real CLIs call it).
"""
from __future__ import annotations

import hashlib
import json
import random
import re
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from continuation.prove.tasks import Requirement, Task, function_source, unittest_source

_TEST = re.compile(r"test_req_(\d+)|test_f_(\d+)|\bf_(\d+)\b")
_MODULE = re.compile(r"pkg[/.]mod_(\d+)")
_PUT_BACK = re.compile(r"^\s*- (\S+) \((restored|re-created|deleted)")
_PUBLISHED = re.compile(r"sh tools/publish\.sh (\S+?)`")
_DESTROY = ("git checkout -- pkg", "rm -f pkg/mod_{module}.py", "rm -rf tests")


@dataclass
class Rates:
    """Chances per attempt at a function requirement."""

    wrong: float = 0.15  # a body that fails its test
    tricky: float = 0.6  # the same for a requirement with an edge that is easy to miss
    syntax: float = 0.04  # a body that does not parse
    destroy: float = 0.04  # a destructive clean-up command before the edit
    informed: float = 0.1  # the factor on all of them once a failure of it was reported

    def to_dict(self) -> dict:
        return {"wrong": self.wrong, "tricky": self.tricky, "syntax": self.syntax,
                "destroy": self.destroy, "informed": self.informed}


@dataclass
class Reply:
    """What came back at a turn's end."""

    continues: bool = False
    stops: bool = False
    message: str | None = None


class ApiDriver:
    """Through ``continuation.api`` (a thread opened by the caller, with or without a guard)."""

    def __init__(self, thread):
        self.thread = thread
        self.n = 0

    def begin(self, text: str) -> None:
        self.thread.admit(text)

    def call(self, tool: str, args: dict, run) -> str | None:
        self.n += 1
        call_id = f"call-{self.n}"
        self.thread.tool_intent(call_id, tool, args)
        ok, output, code = run()
        outcome = self.thread.tool_outcome(call_id, ok=ok, output=output, exit_code=code)
        self.last = outcome
        return outcome.message if outcome is not None else None

    def end(self, claim: str) -> Reply:
        outcome = self.thread.turn_completed(claim)
        self.last = outcome
        if outcome is None:
            return Reply()
        return Reply(outcome.continues, outcome.stops, outcome.message)


class HookDriver:
    """Through the ``continuation hook`` command, as a runtime calls it: its payload shapes
    (``continuation.prove.payloads``) and the answer fields its model reads."""

    def __init__(self, runtime: str, session_id: str, cwd: Path, transcript: Path, hook):
        from continuation.prove.payloads import PayloadShape

        self.shape = PayloadShape(runtime, session_id, str(cwd), str(transcript))
        self.runtime = runtime
        self.hook = hook  # payload -> answer dict
        self.turn = None
        self.n = 0
        self.turns = 0

    def start(self) -> dict:
        return self.hook(self.shape.session_start("startup"))

    def begin(self, text: str) -> None:
        self.turns += 1
        self.turn = f"turn-{self.turns}"
        self.hook(self.shape.user_prompt(self.turn, text))

    def call(self, tool: str, args: dict, run) -> str | None:
        self.n += 1
        call_id = f"toolu_{self.n:04d}"
        self.hook(self.shape.pre_tool(self.turn, call_id, tool, args))
        ok, output, _code = run()
        answer = self.hook(self.shape.post_tool(self.turn, call_id, tool, args, output, ok=ok))
        return ((answer or {}).get("hookSpecificOutput") or {}).get("additionalContext")

    def end(self, claim: str) -> Reply:
        answer = self.hook(self.shape.stop(self.turn, claim)) or {}
        if answer.get("decision") == "block":
            return Reply(continues=True, message=answer.get("reason"))
        if answer.get("continue") is False:
            return Reply(stops=True, message=answer.get("systemMessage"))
        return Reply()


def put_function(path: Path, req: Requirement, body: str) -> None:
    """The module with ``f_N`` defined by ``body`` (replaced if it is there, else appended)."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    source = function_source(req, body)
    pattern = re.compile(rf"^def {req.name}\(x\):\n    return .*\n", re.M)
    text = pattern.sub(lambda _m: source, text, count=1) if pattern.search(text) else \
        text + ("\n\n" if text else "") + source
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def patch_text(req: Requirement, body: str, new_test: bool) -> str:
    """The ``apply_patch`` text of one requirement's edit (what the call's arguments name)."""
    test = "".join("+" + line + "\n" for line in unittest_source(req).splitlines())
    func = "".join("+" + line + "\n" for line in function_source(req, body).splitlines())
    return (f"*** Begin Patch\n*** Update File: {req.module_path}\n@@\n{func}"
            + (f"*** Add File: {req.test_path}\n{test}" if new_test else "")
            + "*** End Patch")


@dataclass
class Coder:
    task: Task
    root: Path
    driver: object
    rates: Rates = field(default_factory=Rates)
    seed: int = 0
    max_turn_ends: int = 8  # turn ends sent back to work, at most, per input (a bound of ours)
    #: slips decided in advance, instead of drawn: ``{(requirement, attempt): slip}``, a slip
    #: being "ok", "wrong" or "syntax", with "destroy:<command>+" before it for a clean-up first
    plan: dict = field(default_factory=dict)

    def __post_init__(self):
        self.done: set[int] = set()
        self.informed: set[int] = set()
        self.fixes: list[int] = []
        self.attempts: Counter = Counter()
        self.calls: Counter = Counter()  # (tool, canonical args) -> executions
        self.stopped = False
        self.told: list[str] = []  # every text it was handed

    # -- memory (a manual rewind rolls it back with the conversation) ----------------------
    def memory(self) -> dict:
        return {"done": set(self.done), "informed": set(self.informed)}

    def restore_memory(self, saved: dict) -> None:
        self.done, self.informed = set(saved["done"]), set(saved["informed"])
        self.fixes = []

    # -- one user input ----------------------------------------------------------------------
    def run_input(self, n: int) -> None:
        self.stopped = False
        self.fixes = []
        self.driver.begin(self.task.input_text(n))
        wanted = self.task.inputs[n]
        self.work(wanted)
        for _ in range(self.max_turn_ends):
            if self.stopped:
                return
            reply = self.driver.end(f"Done with part {n + 1}.")
            if reply.message:
                self.read(reply.message)
            if not reply.continues:
                return
            self.work(wanted)

    def work(self, wanted: list[int]) -> None:
        while not self.stopped:
            todo = [r for r in self.fixes if r not in self.done] + \
                   [r for r in wanted if r not in self.done and r not in self.fixes]
            self.fixes = []
            if not todo:
                return
            self.do(self.task.requirement(todo[0]))

    # -- acting -------------------------------------------------------------------------------
    def _rng(self, req: Requirement, what: str) -> random.Random:
        key = f"{self.seed}:{self.task.seed}:{req.id}:{self.attempts[req.id]}:{what}"
        return random.Random(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))

    def _call(self, tool: str, args: dict, run) -> None:
        self.calls[(tool, json.dumps(args, sort_keys=True))] += 1
        message = self.driver.call(tool, args, run)
        if message:
            self.read(message)

    def shell(self, command: str) -> None:
        def run():
            done = subprocess.run(command, shell=True, cwd=self.root, capture_output=True,
                                  text=True, timeout=120)
            return done.returncode == 0, (done.stdout + done.stderr)[-2000:], done.returncode

        self._call("Bash", {"command": command}, run)

    def do(self, req: Requirement) -> None:
        self.attempts[req.id] += 1
        if req.kind == "publish":
            self.shell(f"sh tools/publish.sh {req.milestone}")
            self.done.add(req.id)
            return
        destroy, slip = self._slip(req)
        if destroy:
            self.shell(destroy.format(module=req.module))
            if self.stopped:
                return
        body = {"syntax": req.correct + " +",  # a line left unfinished
                "wrong": req.wrong}.get(slip, req.correct)
        test = self.root / req.test_path
        new_test = not test.exists()

        def run():
            put_function(self.root / req.module_path, req, body)
            test.parent.mkdir(parents=True, exist_ok=True)
            test.write_text(unittest_source(req), encoding="utf-8")
            return True, "Success. Updated the following files:\n" + req.module_path, 0

        self.done.add(req.id)
        self._call("apply_patch", {"input": patch_text(req, body, new_test)}, run)

    def _slip(self, req: Requirement) -> tuple[str | None, str]:
        """(a destructive command to run first or None, "ok" / "wrong" / "syntax")."""
        planned = self.plan.get((req.id, self.attempts[req.id]))
        if planned is not None:
            destroy, _, slip = planned.rpartition("+")
            return (destroy.split(":", 1)[1] if destroy else None), slip
        factor = self.rates.informed if req.id in self.informed else 1.0
        rng = self._rng(req, "slip")
        destroy = rng.choice(_DESTROY) if rng.random() < self.rates.destroy * factor else None
        roll = rng.random()
        wrong = self.rates.tricky if req.tricky else self.rates.wrong
        if roll < self.rates.syntax * factor:
            return destroy, "syntax"
        if roll < (self.rates.syntax + wrong) * factor:
            return destroy, "wrong"
        return destroy, "ok"

    # -- reading what it is told -------------------------------------------------------------
    def read(self, text: str) -> None:
        self.told.append(text)
        if "The agent was stopped" in text:
            self.stopped = True
            return
        if "put back automatically" in text:
            self._after_rewind(text)
        self._failures(text)

    def _failures(self, text: str) -> None:
        """The requirements a failure output names: redo them next, carefully."""
        output = text.split("output", 1)[-1]
        named = {int(next(g for g in m.groups() if g)) for m in _TEST.finditer(output)}
        for module in {int(m.group(1)) for m in _MODULE.finditer(output)}:
            # a module that cannot be imported: the newest edit to it is the suspect
            mine = [r for r in self.done if self.task.requirement(r).kind == "function"
                    and self.task.requirement(r).module == module]
            if mine:
                named.add(max(mine, key=lambda r: self.attempts[r]))
        if "put back automatically" in text:
            return  # the rewind undid the failing edit: redone below as not there any more
        for rid in sorted(named):
            if 1 <= rid <= len(self.task.requirements) and rid in self.done:
                self.done.discard(rid)
                self.informed.add(rid)
                self.fixes.append(rid)

    def _after_rewind(self, text: str) -> None:
        named = {int(next(g for g in m.groups() if g)) for m in _TEST.finditer(text.split("output", 1)[-1])}
        self.informed |= named
        files = [m.group(1) for line in text.splitlines() if (m := _PUT_BACK.match(line))]
        for path in files:  # read what was put back before trusting any memory of it
            self._call("Read", {"file_path": str(self.root / path)}, lambda: (True, "", 0))
        for rid in list(self.done):
            req = self.task.requirement(rid)
            if req.kind != "function":
                continue
            module = self.root / req.module_path
            present = module.exists() and f"def {req.name}(x):" in module.read_text(encoding="utf-8")
            if not present or not (self.root / req.test_path).exists():
                self.done.discard(rid)
        published = set(_PUBLISHED.findall(text.split("OUTSIDE the workspace", 1)[-1])) \
            if "OUTSIDE the workspace" in text else set()
        for req in self.task.requirements:
            if req.kind == "publish" and req.milestone in published:
                self.done.add(req.id)  # it ran; a rewind does not undo it: never again

    # -- counts --------------------------------------------------------------------------------
    @property
    def repeated_calls(self) -> int:
        return sum(n - 1 for n in self.calls.values() if n > 1)
