"""Where continuation keeps its state: never inside the user's worktree."""
from __future__ import annotations

import os
from pathlib import Path


def state_home() -> Path:
    """``$CONTINUATION_HOME``, else ``$XDG_STATE_HOME/continuation``, else
    ``~/.local/state/continuation``."""
    explicit = os.environ.get("CONTINUATION_HOME")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_STATE_HOME")
    if xdg:
        return Path(xdg).expanduser() / "continuation"
    return Path.home() / ".local" / "state" / "continuation"


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) readable by the owner only (0700; best effort on Windows)."""
    path.mkdir(parents=True, exist_ok=True)
    try:
        if (path.stat().st_mode & 0o777) != 0o700:
            path.chmod(0o700)
    except OSError:
        pass
    return path
