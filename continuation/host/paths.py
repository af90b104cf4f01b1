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
    """Create ``path`` and its missing parents owner-only (0700 whatever the umask; best effort
    on Windows). A folder that already exists keeps its mode: ``$CONTINUATION_HOME`` may be a
    shared folder (1777) the user chose, and a mode is not ours to change on what we did not
    create. Returns ``path``."""
    missing = []
    folder = os.path.abspath(os.fspath(path))
    while not os.path.isdir(folder):
        missing.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    for created in reversed(missing):
        try:
            os.mkdir(created, 0o700)
        except FileExistsError:
            if not os.path.isdir(created):
                raise  # a file where a folder must be: say so here, not at a later write
            continue  # a concurrent process made it: its mode is its own business
        try:
            os.chmod(created, 0o700)  # mkdir's mode is masked by the umask (0o277 -> 0500)
        except OSError:
            pass
    return path


def append_private(path, text: str) -> None:
    """Append ``text`` to a private log file (:func:`open_private`)."""
    with open(open_private(path), "a", encoding="utf-8") as fh:
        fh.write(text)


def append_log(home, name: str, text: str) -> None:
    """Append ``text`` to ``<home>/logs/<name>``, token-like strings redacted
    (``host.secret_text``): a log is shown to people and outlives the session."""
    from continuation.host.secret_text import redact

    append_private(os.path.join(os.fspath(home), "logs", name), redact(text))


def open_private(path, flags: int = os.O_WRONLY | os.O_APPEND | os.O_CREAT):
    """``os.open`` a file we may create: 0600 whatever the umask (an existing file keeps its
    mode). Its folder is created private first."""
    ensure_private_dir(os.path.dirname(os.path.abspath(os.fspath(path))))
    return os.open(path, flags, 0o600)


def holds_git(folder) -> bool:
    """``folder/.git`` is a repository's entry as git's own discovery counts one: a gitfile, or
    a folder with anything in it. Git passes over an empty ``.git`` folder (a sandbox leaves
    one as a mount point in a shared temporary folder), and so does every caller of this:
    taken for a repository, it made the whole temporary folder one workspace."""
    entry = os.path.join(folder, ".git")
    try:
        info = os.stat(entry)
    except (OSError, ValueError):
        return False
    import stat

    if not stat.S_ISDIR(info.st_mode):
        return True
    try:
        with os.scandir(entry) as entries:
            return next(entries, None) is not None
    except OSError:
        return True  # a folder we cannot list is someone's: git will say what it is
