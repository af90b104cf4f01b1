"""Helpers shared by the benchmark scripts: an installed copy of the command, timing, medians.

Why an installed copy: the development venv installs the package in editable mode, whose
import hook (a ``.pth`` file) imports ``pathlib`` and ``re`` in every interpreter started from
that venv (~14 ms, baseline included), and this machine sets ``PYTHONDONTWRITEBYTECODE=1``, so a
hook started with ``PYTHONPATH`` on the source tree recompiles the package every time. A user's
``pip install`` has neither: it compiles the bytecode once and starts a console-script launcher.
:func:`install` reproduces that in a temporary folder: a fresh venv (no editable hook) whose
site-packages point at the development venv's dependencies, the three packages copied and
compiled, and pip's own launcher script for ``continuation``.
"""
from __future__ import annotations

import compileall
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("continuation", "capsule", "statemachine")

#: pip's console-script launcher, as ``pip install`` writes it
LAUNCHER = """#!{python}
# -*- coding: utf-8 -*-
import re
import sys
from continuation.cli import entry
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(entry())
"""


@dataclass
class Installed:
    python: str  # the installed venv's interpreter (the baseline starts this one too)
    command: str  # the ``continuation`` launcher (what a user types)
    env: dict  # environment for children: no PYTHONPATH, bytecode as installed
    hook: list[str]  # the launcher ``continuation install`` writes into the hook settings


def export_revision(ref: str, dest: Path) -> Path:
    """The tree of git revision ``ref`` of this repository, written under ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", ref],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def install(base: Path, root: Path = ROOT) -> Installed:
    """A non-editable install of this source tree (or of ``root``: another revision's tree)
    under ``base`` (see the module docstring)."""
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    python = bindir / ("python.exe" if os.name == "nt" else "python")
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    for name in PACKAGES:
        shutil.copytree(root / name, site / name, ignore=shutil.ignore_patterns("__pycache__"))
        compileall.compile_dir(str(site / name), quiet=1)
    # the dependencies (pydantic, GitPython, tiktoken...) from the venv running this script; a
    # path line in a .pth does not run that folder's own .pth files (the editable hook)
    deps = sysconfig.get_paths()["purelib"]
    (site / "bench-deps.pth").write_text(deps + "\n", encoding="utf-8")
    command = bindir / "continuation"
    command.write_text(LAUNCHER.format(python=python), encoding="utf-8")
    command.chmod(0o755)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "VIRTUAL_ENV", "CONTINUATION_FAULT")}
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    hook = json.loads(subprocess.run(
        [str(python), "-c", "import json; from continuation.install import default_command; "
                            "print(json.dumps(default_command()))"],
        check=True, capture_output=True, text=True, env=env).stdout)
    return Installed(str(python), str(command), env, hook)


#: the benchmarks' git configuration: no background maintenance. A commit of the generated
#: repository (20,000 new loose objects) had git start ``gc --auto`` in the background: a
#: ``pack-objects`` using a whole core for ~7 s after the setup, beside the first measurements
#: (measured: PreCompact hooks of ``trace_precompact.py`` ~310 ms against ~199
#: without it; ``bench_snapshot.py`` measured its rounds right after its commit).
GITCONFIG = ("[init]\n\tdefaultBranch = main\n[user]\n\tname = bench\n\temail = b@e\n"
             "[gc]\n\tauto = 0\n[maintenance]\n\tauto = false\n")


def isolated_git_home(base: Path) -> Path:
    """A home folder of its own for git (:data:`GITCONFIG`, no system configuration), set in
    this process's environment, which the setup's and the measured commands inherit."""
    home = base / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(GITCONFIG, encoding="utf-8")
    os.environ.update({"HOME": str(home), "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
                       "GIT_CONFIG_NOSYSTEM": "1"})
    return home


@contextmanager
def busy_cores(count: int):
    """``count`` processes spinning on a core each while the block runs: the neighbours of a
    shared machine, for measuring how the ratios hold up beside them (then stopped)."""
    spinning = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield spinning
    finally:
        for process in spinning:
            process.kill()
            process.wait()


def in_scratch_folder(prefix: str, keep: bool, run) -> int:
    """``run(folder)`` in a new temporary folder, removed afterwards unless ``keep`` (then
    its path is printed)."""
    base = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        return run(base)
    finally:
        if keep:
            print(f"kept {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)


def timed(cmd: list[str], env: dict, stdin: bytes = b"", cwd=None, check: bool = True):
    """(seconds, completed process) of one run."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, input=stdin, capture_output=True, env=env, cwd=cwd)
    took = time.perf_counter() - start
    if check and proc.returncode != 0:
        raise RuntimeError(f"{cmd[:3]} exited {proc.returncode}: "
                           f"{proc.stderr.decode(errors='replace')[-400:]}")
    return took, proc


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def spread(samples: list[float]) -> str:
    ms = sorted(round(s * 1000) for s in samples)
    return f"{ms[0]}-{ms[-1]} ms"


WORDS = "alpha beta gamma delta return import class def self value index tree commit blob".split()


def text_blob(rng: random.Random, size: int) -> bytes:
    """Source-like text (compressible like real code, not random bytes)."""
    out, length = [], 0
    while length < size:
        line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) + f" {rng.randint(0, 10**9)}\n"
        out.append(line)
        length += len(line)
    return "".join(out).encode()[:size]


def print_rows(rows: list[dict]) -> None:
    """The measures as a markdown table (``bench_boundaries.row``'s dicts), then the load."""
    print("| measure | ms | baseline | baseline ms | ratio | target | paired runs |")
    print("|---|---|---|---|---|---|---|")
    for x in rows:
        print(f"| {x['measure']} | {x['ms']:.0f} | {x['baseline']} | {x['baseline_ms']:.0f} | "
              f"{x['ratio']:.2f}x | {x['goal']} | {x['paired'][0]}-{x['paired'][1]} |")
    try:
        print(f"load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    except (AttributeError, OSError):
        pass
