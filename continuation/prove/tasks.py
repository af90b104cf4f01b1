"""Long coding tasks as checklists, each in a small generated repository with real tests.

A task is a Python package ``pkg`` of a few modules and a list of requirements, given to the
agent as a few user inputs (a chunk of the checklist each). A requirement is either

- a function: ``pkg/mod_K.py`` gets ``f_N`` as its spec says, and ``tests/test_req_N.py`` a
  unittest for it (one ``apply_patch`` call does both, as Codex does), or
- a publication: ``sh tools/publish.sh M`` announces milestone M to a "remote" (a file outside
  the repository, which no rewind reaches): an external effect, done once.

The project's check is ``python check.py``: the unittest suite; exit 1 when a test fails, 3
(fatal: the tree is broken) when a test module cannot even be imported (a module deleted, a
syntax error). The grader (:func:`grade`) judges the end state independently of the check: a
function requirement holds when its function gives the specified values, a publication when
the remote heard of it (:func:`grade` also counts how often).

Everything is generated from a seed: the same seed gives the same task, byte for byte.
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

FATAL_EXIT = 3
CHECK = "python check.py"

CHECK_PY = '''"""The project's check: the unittest suite (exit 1 on a failure, 3 when the tree is broken)."""
import sys
import unittest
import os

if not os.path.isdir("tests") or not os.path.isdir("pkg"):
    print("FATAL: the tests or the package are gone")
    sys.exit(3)
loader = unittest.TestLoader()
suite = loader.discover("tests", top_level_dir=".")
if loader.errors:
    for error in loader.errors:
        print(error)
    print("FATAL: test modules could not be imported")
    sys.exit(3)
result = unittest.TextTestRunner(stream=sys.stdout, verbosity=1).run(suite)
sys.exit(0 if result.wasSuccessful() else 1)
'''

PUBLISH_SH = '#!/bin/sh\n# announce a milestone to the release channel\necho "$1" >> {remote}\necho "published $1"\n'


@dataclass
class Requirement:
    id: int
    kind: str  # function | publish
    module: int = 0
    spec: str = ""  # what the checklist says
    correct: str = ""  # the function body that meets it
    wrong: str = ""  # a plausible slip (off by one, a wrong constant)
    cases: list = field(default_factory=list)  # [(argument, expected)]
    milestone: str = ""
    tricky: bool = False  # an edge the agent gets wrong more often (a bound, an inclusive end)

    @property
    def name(self) -> str:
        return f"f_{self.id}"

    @property
    def module_path(self) -> str:
        return f"pkg/mod_{self.module}.py"

    @property
    def test_path(self) -> str:
        return f"tests/test_req_{self.id}.py"

    def text(self) -> str:
        if self.kind == "publish":
            return f"R{self.id}: publish milestone {self.milestone} (run `sh tools/publish.sh {self.milestone}`)"
        return f"R{self.id}: {self.spec}"


@dataclass
class Task:
    name: str
    seed: int
    modules: int
    requirements: list[Requirement]
    inputs: list[list[int]]  # requirement ids given in each user input

    def requirement(self, rid: int) -> Requirement:
        return self.requirements[rid - 1]

    def input_text(self, n: int) -> str:
        items = "\n".join("- " + self.requirement(r).text() for r in self.inputs[n])
        return f"Part {n + 1} of {len(self.inputs)} of {self.name}: do each item, with a test.\n{items}"


def _function(rid: int, rng: random.Random) -> tuple[str, str, str, list]:
    a, b = rng.randint(2, 9), rng.randint(1, 20)
    kind = rng.choice(("linear", "square", "clamp", "label"))
    if kind == "linear":
        spec, ok, bad = (f"f_{rid}(x) returns {a} * x + {b}", f"{a} * x + {b}",
                         f"{a} * x + {b + 1}")
        cases = [(x, a * x + b) for x in (0, 3, 7)]
    elif kind == "square":
        spec, ok, bad = (f"f_{rid}(x) returns x squared plus {b}", f"x * x + {b}",
                         f"x * x + {b - 1}")
        cases = [(x, x * x + b) for x in (0, 2, 5)]
    elif kind == "clamp":
        hi = b + 10
        spec, ok, bad = (f"f_{rid}(x) returns x clamped to [{b}, {hi}]",
                         f"max({b}, min({hi}, x))", f"max({b}, min({hi - 1}, x))")
        cases = [(x, max(b, min(hi, x))) for x in (0, b + 3, hi, hi + 5)]
    else:
        spec, ok, bad = (f"f_{rid}(x) returns the text 'item-' followed by x",
                         "'item-' + str(x)", "'item_' + str(x)")
        cases = [(x, f"item-{x}") for x in (1, 42)]
    return spec, ok, bad, cases


def generate(seed: int, n_requirements: int, *, name: str | None = None) -> Task:
    rng = random.Random(seed)
    modules = max(2, n_requirements // 5)
    reqs: list[Requirement] = []
    milestone = 0
    for rid in range(1, n_requirements + 1):
        if rid > 3 and rng.random() < 0.12:
            milestone += 1
            reqs.append(Requirement(rid, "publish", milestone=f"m{seed}-{milestone}"))
            continue
        spec, ok, bad, cases = _function(rid, rng)
        tricky = "clamped" in spec or rng.random() < 0.15
        reqs.append(Requirement(rid, "function", module=rng.randrange(modules), spec=spec,
                                correct=ok, wrong=bad, cases=cases, tricky=tricky))
    chunks, ids = [], list(range(1, n_requirements + 1))
    while ids:
        size = rng.randint(3, 6)
        chunks.append(ids[:size])
        ids = ids[size:]
    return Task(name or f"task-{seed}", seed, modules, reqs, chunks)


def function_source(req: Requirement, body: str) -> str:
    return f"def {req.name}(x):\n    return {body}\n"


def unittest_source(req: Requirement) -> str:
    lines = [f"import unittest\n\nfrom pkg.mod_{req.module} import {req.name}\n\n",
             f"class Test{req.id}(unittest.TestCase):\n    def test_{req.name}(self):\n"]
    for arg, expected in req.cases:
        lines.append(f"        self.assertEqual({req.name}({arg!r}), {expected!r})\n")
    return "".join(lines)


def build_repo(task: Task, root: Path, remote: Path, git_env: dict | None = None) -> Path:
    """The task's repository at ``root`` (committed), publishing to ``remote``."""
    root.mkdir(parents=True, exist_ok=True)
    files = {"check.py": CHECK_PY, "pkg/__init__.py": "", "tests/__init__.py": "",
             ".gitignore": "__pycache__/\n",
             "tools/publish.sh": PUBLISH_SH.format(remote=remote),
             "README.md": f"# {task.name}\n\nA generated task of {len(task.requirements)} requirements.\n",
             "tests/test_smoke.py": "import importlib\nimport unittest\n\n\nclass Smoke(unittest.TestCase):\n"
                                    "    def test_modules_import(self):\n"
                                    f"        for k in range({task.modules}):\n"
                                    "            importlib.import_module(f'pkg.mod_{k}')\n"}
    for k in range(task.modules):
        files[f"pkg/mod_{k}.py"] = f'"""Module {k} of {task.name}."""\n'
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    env = {**os.environ, **(git_env or {})}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "the task's start"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)
    return root


GRADER = r'''
import importlib, json, sys
sys.path.insert(0, sys.argv[1])
reqs = json.loads(sys.argv[2])
out = {}
for r in reqs:
    try:
        module = importlib.import_module("pkg.mod_%d" % r["module"])
        fn = getattr(module, "f_%d" % r["id"])
        out[r["id"]] = all(fn(a) == e for a, e in r["cases"])
    except Exception:
        out[r["id"]] = False
print(json.dumps(out))
'''


def grade(task: Task, root: Path, remote: Path) -> dict:
    """The end state, judged apart from the check: which requirements hold, and how often
    each milestone was published."""
    functions = [{"id": r.id, "module": r.module, "cases": r.cases}
                 for r in task.requirements if r.kind == "function"]
    done = subprocess.run([sys.executable, "-I", "-c", GRADER, str(root), json.dumps(functions)],
                          capture_output=True, text=True, timeout=120, cwd=str(root))
    held = {int(k): v for k, v in json.loads(done.stdout or "{}").items()}
    published = remote.read_text(encoding="utf-8").split() if remote.exists() else []
    counts = {r.milestone: published.count(r.milestone) for r in task.requirements
              if r.kind == "publish"}
    satisfied = {r.id for r in task.requirements
                 if (held.get(r.id) if r.kind == "function" else counts[r.milestone] > 0)}
    return {"satisfied": satisfied, "total": len(task.requirements), "published": counts,
            "repeated_external": sum(max(0, n - 1) for n in counts.values())}
