"""A simulated agent runtime: ``python -m continuation.prove.simruntime SCRIPT.json``.

It plays one scripted session the way Codex CLI or Claude Code would: it calls the real
``continuation hook --runtime codex|claude|gemini`` command with the runtime's payload shapes, and it
plays the model with :mod:`continuation.prove.agent`, acting on what the hooks answer.

Everything it does is written down for the runner, line by line and fsynced (it may be
SIGKILLed at any point, that is one of the scenarios):
- ``log``: one JSON line per hook call (event, duration, exit code, whether context came back)
  and per notable moment (``hanging`` when it blocks inside a tool call);
- ``ledger``: one JSON line per tool execution the agent performed (and per verification);
- ``state``: the runtime's transcript and the agent's memory, reloaded by a resumed session.

Script (JSON): runtime, session_id, cwd, transcript_path, hook (argv list, or "fork"),
policy ("continuation", or {"file": path, "name": attr} for a baseline), log, ledger, state,
catalog ({key: {text, tools: [{tool, input, effect?}]}}) and steps (see :func:`Runtime.step`).
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from continuation.prove.agent import (
    ANSWERED,
    Catalog,
    Item,
    decide,
    memory_from_context,
    merge,
    read_context,
)
from continuation.prove.payloads import COMPACTION_ORDER, GEMINI_WINDOW, PayloadShape

IDLE_PROMPT_TOKENS = 2_000



def _call_id(runtime: str, session: str, n: int) -> str:
    """A call id of the runtime's own shape and length (Claude Code ``toolu_01`` and 22
    characters, Codex ``call_`` and 24), the same for the same session and number."""
    import hashlib

    digest = hashlib.sha256(f"{session}:{n}".encode()).hexdigest()
    return f"call_{digest[:24]}" if runtime == "codex" else f"toolu_01{digest[:22]}"


def _append_line(path: Path, record: dict) -> None:
    data = (json.dumps(record, ensure_ascii=True) + "\n").encode("ascii")
    fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


class ContinuationPolicy:
    """The engine's context block is the agent's new memory after a boundary: it is the
    authority on every input's state. When no context reaches the agent (the hook died, its
    answer was lost) the agent has what the runtime's own compaction left it
    (:data:`continuation.prove.baselines.NATIVE`)."""

    name = "continuation"
    runtime = "codex"

    def after_boundary(self, *, transcript, context_text, catalog, memory):
        ctx = read_context(context_text or "")
        if ctx is None:
            from continuation.prove.baselines import NATIVE

            return NATIVE[self.runtime]().after_boundary(
                transcript=transcript, context_text=None, catalog=catalog, memory=memory)
        return memory_from_context(ctx, catalog)

    def on_resume(self, *, transcript, context_text, catalog, memory):
        ctx = read_context(context_text or "")
        if ctx is None:
            return memory
        return merge(memory, memory_from_context(ctx, catalog))


def load_policy(spec):
    if spec in (None, "continuation"):
        return ContinuationPolicy()
    path = Path(spec["file"])
    module_spec = importlib.util.spec_from_file_location(f"prove_policy_{path.stem}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return getattr(module, spec["name"])()


class HookCaller:
    """Runs ``continuation hook``: as a command (the default), or as a fork of this process
    with the hook modules imported once (``"fork"``, POSIX, for long scenarios)."""

    def __init__(self, runtime: str, hook):
        self.runtime = runtime
        self.hook = hook
        if hook == "fork":
            if not hasattr(os, "fork"):
                self.hook = [sys.executable, "-m", "continuation"]
            else:
                from continuation.boundary import crossing as boundary, checkpoints  # noqa: F401  (warm the boundary path)
                from continuation.hooks import handlers  # noqa: F401
                import capsule.assemble, capsule.budget, capsule.render  # noqa: F401,E401
                from capsule.tokens import get_token_counter

                get_token_counter().count("warm the tokenizer once, not in every fork")

    def __call__(self, payload: dict, fault: str | None = None) -> tuple[int, str]:
        raw = json.dumps(payload, ensure_ascii=True).encode("ascii")
        if self.hook is None:
            return 0, "{}"
        if self.hook == "fork":
            return self._fork(raw, fault)
        env = dict(os.environ)
        if fault:
            env["CONTINUATION_FAULT"] = fault
        proc = subprocess.run([*self.hook, "hook", "--runtime", self.runtime], input=raw,
                              capture_output=True, env=env, timeout=120)
        return proc.returncode, proc.stdout.decode("utf-8", "replace")

    def _fork(self, raw: bytes, fault: str | None) -> tuple[int, str]:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: the hook command's own code path, minus interpreter start
            code = 1
            try:
                os.close(r)
                if fault:
                    os.environ["CONTINUATION_FAULT"] = fault
                from continuation.hooks import run

                out, code = run(self.runtime, raw)
                os.write(w, (out + "\n").encode("utf-8", "surrogatepass"))
            finally:
                os._exit(code)
        os.close(w)
        chunks = []
        while True:
            chunk = os.read(r, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(r)
        _, status = os.waitpid(pid, 0)
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        return code, b"".join(chunks).decode("utf-8", "replace")


class Runtime:
    def __init__(self, script: dict):
        self.s = script
        self.runtime = script["runtime"]
        self.shape = PayloadShape(self.runtime, script["session_id"], script["cwd"],
                                  script.get("transcript_path") or "")
        self.call = HookCaller(self.runtime, script.get("hook", "command"))
        self.policy = load_policy(script.get("policy"))
        self.policy.runtime = self.runtime
        self.catalog = Catalog(script.get("catalog", {}))
        self.log_path = Path(script["log"])
        self.ledger_path = Path(script["ledger"])
        self.state_path = Path(script["state"])
        self.contexts = self.log_path.parent / "contexts"
        state = {}
        if self.state_path.exists():  # a resumed session reloads its transcript
            state = json.loads(self.state_path.read_text(encoding="utf-8"))
        self.memory = [Item.from_dict(d) for d in state.get("memory", [])]
        self.transcript = state.get("transcript", [])
        self.calls = int(state.get("calls", 0))
        self.boundaries = int(state.get("boundaries", 0))
        self.turn = state.get("turn")
        self.held: list[dict] = []  # prompts typed while a compaction runs

    # -- bookkeeping -------------------------------------------------------------------------
    def log(self, **record) -> None:
        record.setdefault("t", time.time())
        record.setdefault("pid", os.getpid())
        _append_line(self.log_path, record)

    def save(self) -> None:
        data = {"memory": [m.to_dict() for m in self.memory], "transcript": self.transcript,
                "calls": self.calls, "boundaries": self.boundaries, "turn": self.turn}
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=True), encoding="utf-8")
        os.replace(tmp, self.state_path)

    def hook(self, payload: dict, *, fault: str | None = None, label: str = "") -> str | None:
        """Call the hook; returns the additionalContext it answered with, if any."""
        t0 = time.perf_counter()
        started = time.time()
        code, out = self.call(payload, fault)
        ms = (time.perf_counter() - t0) * 1000
        context = None
        try:
            answer = json.loads(out) if out.strip() else {}
            context = ((answer or {}).get("hookSpecificOutput") or {}).get("additionalContext")
            if context and self.runtime == "gemini":  # as Gemini CLI 0.61.0 hands it to its model
                context = context.replace("<", "&lt;").replace(">", "&gt;")
        except ValueError:
            answer = None  # a broken answer: the runtime goes on (fail-open)
        record = {"kind": "hook", "event": payload["hook_event_name"], "ms": round(ms, 3),
                  "rc": code, "started": started, "label": label,
                  "source": payload.get("source"), "trigger": payload.get("trigger"),
                  "context_chars": len(context) if context else 0}
        if context:
            self.contexts.mkdir(parents=True, exist_ok=True)
            n = len(list(self.contexts.iterdir()))
            path = self.contexts / f"{os.getpid()}-{n:04d}.txt"
            path.write_text(context, encoding="utf-8", errors="surrogatepass")
            record["context_file"] = str(path)
        self.log(**record)
        return context

    # -- the runtime's moves -----------------------------------------------------------------
    def step(self, st: dict) -> None:
        op = st["op"]
        getattr(self, "op_" + op)(st)
        self.save()

    def op_start(self, st):
        context = self.hook(self.shape.session_start(st.get("source", "startup")),
                            fault=st.get("fault"))
        if st.get("source") in ("resume", "startup", "clear"):
            self.memory = self.policy.on_resume(transcript=self.transcript,
                                                context_text=context, catalog=self.catalog,
                                                memory=self.memory)
        self.log(kind="context_seen" if context else "no_context", source=st.get("source"))

    def op_prompt(self, st):
        key = st["key"]
        text = self.catalog.text(key)
        turn = st.get("turn") or self.turn
        self.turn = turn
        context = self.hook(self.shape.user_prompt(turn, text), fault=st.get("fault"))
        entry = {"role": "user", "text": text, "key": key, "turn": turn}
        self.transcript.append(entry)
        if context:  # the engine carried a context on this prompt (deferred delivery): no
            # compaction happened now, so the agent still has its conversation; the context
            # adds to it (its states win, calls the agent saw finish stay finished)
            self.memory = self.policy.on_resume(transcript=self.transcript, context_text=context,
                                                catalog=self.catalog, memory=self.memory)
            self.log(kind="context_seen", source="user_prompt")
        self.memory = merge(self.memory, [Item(text=text, state="new", key=key,
                                               input_id=st.get("turn") if self.runtime == "claude" else None)])

    def _execute(self, decision, turn: str, hang: bool) -> None:
        tool = decision.tool
        self.calls += 1
        call_id = _call_id(self.runtime, self.s.get("session_id", ""), self.calls)
        self.transcript.append({"role": "tool_call", "key": decision.key, "call": call_id,
                                "args": tool["input"], "turn": turn})
        self.save()
        self._model_request()
        self.hook(self.shape.pre_tool(turn, call_id, tool["tool"], tool["input"]))
        _append_line(self.ledger_path, {"kind": "exec", "key": decision.key,
                                        "tool_index": decision.tool_index, "call": call_id,
                                        "boundaries": self.boundaries, "pid": os.getpid()})
        effect = tool.get("effect") or {}
        if effect.get("append"):
            with open(Path(self.s["cwd"]) / effect["append"], "a", encoding="utf-8") as fh:
                fh.write(effect.get("line", decision.key or "") + "\n")
        if hang:
            self.log(kind="hanging", call=call_id, key=decision.key)
            while True:  # the runner kills us here
                time.sleep(60)
        context = self.hook(self.shape.post_tool(turn, call_id, tool["tool"], tool["input"], output="ok"))
        self.transcript.append({"role": "tool_result", "call": call_id, "status": "ok"})
        if context:  # Gemini CLI: AfterTool's answer is appended to the result the model reads
            self.memory = self.policy.on_resume(transcript=self.transcript, context_text=context,
                                                catalog=self.catalog, memory=self.memory)
            self.log(kind="context_seen", source="after_tool")
        from continuation.prove.agent import canon

        for item in self.memory:
            if item.key == decision.key:
                item.done_args = sorted([*item.done_args, canon(tool["input"])])

    def op_act(self, st):
        """The model acts on its memory: at most ``limit`` tool calls, then (with ``hang``)
        blocks inside the next one."""
        turn = st.get("turn") or self.turn
        limit = st.get("limit")
        decisions = decide(self.memory, self.catalog)
        done = 0
        for d in decisions:
            if d.kind == "verify":
                _append_line(self.ledger_path, {"kind": "verify", "key": d.key,
                                                "boundaries": self.boundaries})
                continue
            if limit is not None and done >= limit:
                if st.get("hang"):
                    self._execute(d, turn, hang=True)
                break
            self._execute(d, turn, hang=False)
            done += 1
        else:
            for item in self.memory:  # every actionable request got its answer
                if item.state in ("new", "pending", "interrupted", "queued", "open"):
                    if not [x for x in decisions if x.key == item.key and x.kind == "verify"]:
                        item.state = ANSWERED

    def op_stop(self, st):
        turn = st.get("turn") or self.turn
        message = st.get("message") or "done"
        self._model_request()
        prompts = [e["text"] for e in self.transcript if e.get("role") == "user" and e.get("turn") == turn]
        self.hook(self.shape.stop(turn, message, prompts[0] if prompts else ""), fault=st.get("fault"))
        self.transcript.append({"role": "assistant", "text": message, "turn": turn, "stop": True})

    def op_compact(self, st):
        trigger = st.get("trigger", "auto")
        turn = st.get("turn") or self.turn
        faults = st.get("faults") or {}
        context = held_context = None
        if self.runtime == "gemini":  # the last answer's prompt token count crossed the threshold
            self.shape.record_usage(GEMINI_WINDOW)
        for event in COMPACTION_ORDER[self.runtime]:
            if event == "PreCompact":
                self.hook(self.shape.pre_compact(turn, trigger), fault=faults.get(event))
                if self.runtime == "gemini":
                    self.shape.record_usage(IDLE_PROMPT_TOKENS)  # the compressed history
                for p in st.get("prompts_during", []):  # typed while the compaction runs
                    self.held.append(p)
                    held_context = self.op_prompt_held(p) or held_context
            elif event == "PostCompact":
                self.hook(self.shape.post_compact(turn, trigger, "Summary: compacted."),
                          fault=faults.get(event))
            else:
                context = self.hook(self.shape.session_start("compact"), fault=faults.get(event))
        self.boundaries += 1
        self.transcript.append({"role": "boundary", "trigger": trigger})
        # the new context: the compacted history, then the SessionStart answer, then the held
        # messages with whatever their UserPromptSubmit answer attached
        self.memory = self.policy.after_boundary(transcript=self.transcript,
                                                 context_text=context or held_context,
                                                 catalog=self.catalog, memory=[])
        for p in self.held:  # the runtime keeps queued messages after the replacement
            self.memory = merge(self.memory, [Item(text=self.catalog.text(p["key"]),
                                                   state="new", key=p["key"])])
        self.held = []
        self.log(kind="boundary", n=self.boundaries, context=bool(context or held_context),
                 memory={m.key or m.text[:40]: m.state for m in self.memory})

    def _model_request(self) -> None:
        """Gemini CLI fires PreCompress(auto) before every model request, also when it then
        does not compress (the recorded prompt token count is under its threshold)."""
        if self.runtime == "gemini":
            self.hook(self.shape.pre_compact(self.turn, "auto"), label="idle")
            self.shape.record_usage(IDLE_PROMPT_TOKENS)

    def op_prompt_held(self, p):
        turn = p.get("turn") or self.turn
        text = self.catalog.text(p["key"])
        context = self.hook(self.shape.user_prompt(turn, text))
        self.transcript.append({"role": "user", "text": text, "key": p["key"], "turn": turn})
        self.turn = turn
        return context

    def op_interrupt(self, st):
        """The user cuts the running turn (Codex Ctrl-C; Claude Code Esc sends nothing)."""
        turn = st.get("turn") or self.turn
        if self.runtime == "codex":
            self.hook(self.shape.interrupt(turn), fault=st.get("fault"))
        self.transcript.append({"role": "interrupt", "turn": turn})

    def op_end(self, st):
        self.hook(self.shape.session_end(st.get("reason", "other")), fault=st.get("fault"))

    def op_hook(self, st):
        """A raw payload (for shapes the other ops do not cover)."""
        self.hook(st["payload"], fault=st.get("fault"))


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) != 1:
        sys.stderr.write("usage: python -m continuation.prove.simruntime SCRIPT.json\n")
        return 2
    try:
        script = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"simruntime: cannot read script {argv[0]}: {exc}\n")
        return 2
    rt = Runtime(script)
    for st in script.get("steps", []):
        rt.step(st)
    rt.log(kind="exit")
    return 0


if __name__ == "__main__":
    sys.exit(main())

