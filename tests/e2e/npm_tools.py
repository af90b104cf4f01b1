"""Install a pinned npm CLI into a cache folder outside the repository, once.

``ensure_npm_cli("@openai/codex", "0.171.0", "codex")`` returns the path of
``<cache>/codex-0.171.0/node_modules/.bin/codex``, running ``npm install``
only when that binary is missing. The cache root is
``$CONTINUATION_E2E_CACHE`` or ``~/.cache/continuation-e2e``. Concurrent
callers (two test sessions, the Codex and Claude tests) serialise on a file
lock per package folder. When node/npm is missing or the install fails,
:class:`ToolUnavailable` carries a reason fit for ``pytest.skip``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from filelock import FileLock, Timeout

try:  # imported as tests.e2e.npm_tools or from scripts with tests/e2e on sys.path
    from .bounded import run_bounded
except ImportError:  # pragma: no cover
    from bounded import run_bounded  # type: ignore[no-redef]

INSTALL_TIMEOUT_S = 600


class ToolUnavailable(RuntimeError):
    """The CLI cannot be provided here; ``str(exc)`` says why."""


def cache_root() -> Path:
    explicit = os.environ.get("CONTINUATION_E2E_CACHE")
    return Path(explicit).expanduser() if explicit else Path.home() / ".cache" / "continuation-e2e"


def package_dir(package: str, version: str) -> Path:
    short = package.rsplit("/", 1)[-1]
    # "@anthropic-ai/claude-code" -> "claude-2.1.332" like "@openai/codex" -> "codex-0.171.0"
    short = short.removesuffix("-code")
    return cache_root() / f"{short}-{version}"


def _bin_path(folder: Path, bin_name: str) -> Path:
    bin_dir = folder / "node_modules" / ".bin"
    if os.name == "nt":
        return bin_dir / f"{bin_name}.cmd"
    return bin_dir / bin_name


def ensure_npm_cli(package: str, version: str, bin_name: str, *, folder: Path | None = None) -> Path:
    """Path of the pinned CLI, installing it with npm when absent."""
    folder = folder or package_dir(package, version)
    binary = _bin_path(folder, bin_name)
    installed_manifest = folder / "node_modules" / Path(*package.split("/")) / "package.json"
    if binary.exists() and installed_manifest.exists() and f'"version": "{version}"' in installed_manifest.read_text(
        encoding="utf-8", errors="replace"
    ):
        return binary
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        raise ToolUnavailable(f"node/npm not found on PATH; cannot install {package}@{version}")
    folder.mkdir(parents=True, exist_ok=True)
    try:
        with FileLock(str(folder) + ".lock", timeout=INSTALL_TIMEOUT_S):
            if binary.exists() and installed_manifest.exists():
                return binary
            done = run_bounded(
                [npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund", "--loglevel=error",
                 f"{package}@{version}"],
                timeout=INSTALL_TIMEOUT_S,
                cwd=folder,
            )
    except Timeout as exc:
        raise ToolUnavailable(f"another process holds {folder}.lock for over {INSTALL_TIMEOUT_S}s") from exc
    if done.timed_out:
        raise ToolUnavailable(f"npm install {package}@{version} timed out after {INSTALL_TIMEOUT_S}s")
    if done.returncode != 0 or not binary.exists():
        raise ToolUnavailable(f"npm install {package}@{version} failed: {done.stderr.strip()[-800:]}")
    return binary
