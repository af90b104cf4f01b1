"""The runner's handle on one simulated session: write its script, run it, read what it did."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from continuation.prove.sandbox import CLI, Sandbox


def _read_lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass  # a line torn by SIGKILL
    return out


class SimSession:
    def __init__(self, box: Sandbox, name: str, *, runtime: str, cwd: Path, catalog: dict,
                 session_id: str | None = None, hook="command", policy="continuation"):
        self.box = box
        self.name = name
        self.runtime = runtime
        self.cwd = Path(cwd)
        self.catalog = catalog
        self.session_id = session_id or f"prove-{name}"
        self.dir = box.runs / name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.hook = CLI if hook == "command" else hook
        self.policy = policy
        self.runs = 0
        self.proc: subprocess.Popen | None = None

    @property
    def log_path(self) -> Path:
        return self.dir / "log.jsonl"

    @property
    def ledger_path(self) -> Path:
        return self.dir / "ledger.jsonl"

    def _script(self, steps: list[dict]) -> Path:
        self.runs += 1
        transcript = self.box.home / ".sim" / f"{self.session_id}.jsonl"
        transcript.parent.mkdir(parents=True, exist_ok=True)
        transcript.touch()
        script = {"runtime": self.runtime, "session_id": self.session_id, "cwd": str(self.cwd),
                  "transcript_path": str(transcript), "hook": self.hook, "policy": self.policy,
                  "log": str(self.log_path), "ledger": str(self.ledger_path),
                  "state": str(self.dir / "state.json"), "catalog": self.catalog,
                  "steps": steps}
        path = self.dir / f"script-{self.runs}.json"
        path.write_text(json.dumps(script, ensure_ascii=True, indent=1), encoding="utf-8")
        return path

    def _argv(self, steps) -> list[str]:
        return [sys.executable, "-m", "continuation.prove.simruntime", str(self._script(steps))]

    def run(self, steps: list[dict], timeout: float = 120) -> None:
        proc = subprocess.run(self._argv(steps), capture_output=True, env=self.box.env,
                              cwd=str(self.cwd), timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"simulated runtime {self.name} exited {proc.returncode}: "
                               f"{proc.stderr.decode(errors='replace')[-800:]}")

    def start(self, steps: list[dict]) -> subprocess.Popen:
        self.proc = subprocess.Popen(self._argv(steps), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, env=self.box.env, cwd=str(self.cwd))
        return self.proc

    # -- what happened -------------------------------------------------------------------------
    def log(self) -> list[dict]:
        return _read_lines(self.log_path)

    def ledger(self) -> list[dict]:
        return _read_lines(self.ledger_path)

    def hooks(self, event: str | None = None) -> list[dict]:
        return [r for r in self.log() if r.get("kind") == "hook"
                and (event is None or r["event"] == event)]

    def contexts(self) -> list[str]:
        return [Path(r["context_file"]).read_text(encoding="utf-8", errors="surrogatepass")
                for r in self.hooks() if r.get("context_file")]

    def executions(self, key: str) -> int:
        return sum(1 for r in self.ledger() if r.get("kind") == "exec" and r.get("key") == key)

    def exec_counts(self) -> dict[tuple, int]:
        counts: dict[tuple, int] = {}
        for r in self.ledger():
            if r.get("kind") == "exec":
                k = (r.get("key"), r.get("tool_index"))
                counts[k] = counts.get(k, 0) + 1
        return counts

    def repeated_tool_calls(self) -> int:
        """Executions of a planned tool call beyond its first."""
        return sum(n - 1 for n in self.exec_counts().values() if n > 1)

    def verifications(self, key: str) -> int:
        return sum(1 for r in self.ledger() if r.get("kind") == "verify" and r.get("key") == key)

    def hook_failures(self) -> list[dict]:
        return [r for r in self.hooks() if r.get("rc") not in (0, None) and not r.get("label")]

    # -- the engine's view -----------------------------------------------------------------------
    def thread(self):
        from continuation.session.engine import Engine

        engine = Engine(self.box.state, create=False)
        th = engine.find_thread(self.runtime, self.session_id)
        if th is None:
            engine.close()
            raise LookupError(f"no thread for {self.runtime} session {self.session_id}")
        return engine, th

    def engine_states(self) -> dict[str, str]:
        """Catalog key -> engine state, matched by the input's text."""
        from continuation.prove.agent import normal

        by_text = {normal(v["text"]): k for k, v in self.catalog.items()}
        engine, th = self.thread()
        try:
            out = {}
            for rec in th.inputs():
                key = by_text.get(normal(rec.text or ""))
                if key is not None:
                    out[key] = rec.state
            return out
        finally:
            engine.close()

    def input_ids(self) -> dict[str, list[str]]:
        from continuation.prove.agent import normal

        by_text = {normal(v["text"]): k for k, v in self.catalog.items()}
        engine, th = self.thread()
        try:
            out: dict[str, list[str]] = {}
            for rec in th.inputs():
                out.setdefault(by_text.get(normal(rec.text or ""), "?"), []).append(rec.input_id)
            return out
        finally:
            engine.close()
