"""Where continuation keeps its state: never inside the user's worktree."""
from __future__ import annotations

import os


def state_home_str() -> str:
    """``$CONTINUATION_HOME``, else ``$XDG_STATE_HOME/continuation``, else
    ``~/.local/state/continuation``. A string, for the hook hot path (no pathlib import)."""
    explicit = os.environ.get("CONTINUATION_HOME")
    if explicit:
        return os.path.expanduser(explicit)
    xdg = os.environ.get("XDG_STATE_HOME")
    if xdg:
        return os.path.join(os.path.expanduser(xdg), "continuation")
    return os.path.join(os.path.expanduser("~"), ".local", "state", "continuation")


def state_home():
    """:func:`state_home_str` as a ``pathlib.Path``."""
    from pathlib import Path

    return Path(state_home_str())


def ensure_private_dir(path):
    """Create ``path`` (and parents) readable by the owner only (0700; best effort on Windows)."""
    os.makedirs(path, exist_ok=True)
    try:
        if (os.stat(path).st_mode & 0o777) != 0o700:
            os.chmod(path, 0o700)
    except OSError:
        pass
    return path
