"""Peak memory and time of ``continuation import claude`` on a large generated transcript.

Generates (seeded, in a temporary folder) a ~300 MB and a ~30 MB Claude Code transcript
(``gen_claude_transcript.py``), imports each in a subprocess into a fresh store and reads the
child's own peak RSS from ``os.wait4``. Printed beside them, measured in the same run: the peak
RSS of the import of a tiny transcript (the command's fixed cost: interpreter, modules, store)
and of ``python -c pass``. A bounded import has about the same peak at 30 and at 300 MB.

    python scripts/bench_import.py [--mb 300] [--small-mb 30] [--pythonpath DIR]

``--pythonpath DIR``: import the package from DIR (e.g. a ``git archive`` of an older commit)
to measure it the same way (without ``--progress``, which older copies do not know).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MB = 1024 * 1024


def _generator():
    spec = importlib.util.spec_from_file_location("gen_claude_transcript",
                                                  HERE / "gen_claude_transcript.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def measured_run(cmd: list[str], *, env: dict, stdout, stderr) -> tuple[int, float, float]:
    """(exit code, peak RSS in MB, seconds) of ``cmd``: the rusage of that one child."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=stdout, stderr=stderr)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    # Linux reports KiB, macOS bytes
    rss = usage.ru_maxrss / (MB if sys.platform == "darwin" else 1024)
    return proc.returncode, rss, seconds


def import_once(path: Path, home: Path, *, pythonpath: str | None = None,
                extra_env: dict | None = None,
                progress: bool = True) -> tuple[float, float, str, str]:
    """(peak RSS MB, seconds, stdout, stderr) of importing ``path`` into a fresh ``home``.
    ``progress``: pass ``--progress`` (a copy older than the flag would refuse it)."""
    env = {**os.environ, "CONTINUATION_HOME": str(home), **(extra_env or {})}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    out, err = home.with_suffix(".out"), home.with_suffix(".err")
    with open(out, "wb") as fo, open(err, "wb") as fe:
        code, rss, seconds = measured_run(
            [sys.executable, "-m", "continuation", "import", "claude", str(path),
             "--session-over", *(["--progress"] if progress else [])],
            env=env, stdout=fo, stderr=fe)
    stdout, stderr = out.read_text(), err.read_text()
    if code != 0:
        raise SystemExit(f"import of {path} failed (exit {code}): {stderr.strip()[-400:]}")
    return rss, seconds, stdout, stderr


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=300.0, help="size of the large transcript")
    ap.add_argument("--small-mb", type=float, default=30.0, help="size of the smaller one")
    ap.add_argument("--seed", type=int, default=35)
    ap.add_argument("--pythonpath", help="import the package from this folder instead")
    args = ap.parse_args(argv)
    gen = _generator()
    with tempfile.TemporaryDirectory(prefix="bench-import-") as tmp:
        tmp = Path(tmp)
        files, infos = {}, {}
        for name, size in (("tiny", 0.05), ("small", args.small_mb), ("large", args.mb)):
            files[name] = tmp / f"{name}.jsonl"
            infos[name] = gen.generate(files[name], size, args.seed)
        _, pass_rss, _ = measured_run([sys.executable, "-c", "pass"], env=dict(os.environ),
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rows = []
        for name in ("tiny", "small", "large"):
            rss, seconds, _, stderr = import_once(files[name], tmp / f"home-{name}",
                                                  pythonpath=args.pythonpath,
                                                  progress=not args.pythonpath)
            info = infos[name]
            rows.append((name, info["bytes"] / MB, info["tool_calls"], rss, seconds,
                         stderr.count("\n")))
        tiny_rss = rows[0][3]
        small_rss = rows[1][3]
        print(f"python -c pass: peak RSS {pass_rss:.1f} MB")
        print("| transcript | MB | tool calls | peak RSS MB | RSS / file | RSS / tiny import |"
              " RSS / 30 MB import | seconds | s per MB | progress lines |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for name, mb, calls, rss, seconds, lines in rows:
            print(f"| {name} | {mb:.1f} | {calls} | {rss:.1f} | {rss / mb:.2f}x | "
                  f"{rss / tiny_rss:.2f}x | {rss / small_rss:.2f}x | {seconds:.1f} | "
                  f"{seconds / mb:.3f} | {lines} |")
        large = rows[2]
        print(f"large: peak RSS {large[3]:.1f} MB for {large[1]:.0f} MB "
              f"({large[3] / large[1]:.2f}x the file; {large[3] - tiny_rss:.1f} MB over the "
              f"tiny import's {tiny_rss:.1f} MB; goal <= 150 MB) in {large[4]:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
