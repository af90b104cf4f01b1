"""Secret-looking files a workspace snapshot leaves out.

A snapshot stores the work tree's untracked files too (the agent's new files must be
restorable), so an untracked ``deploy.env`` would become a git object under
``refs/continuation/`` of the user's own repository, and reach a remote through
``CONTINUATION_SNAPSHOT_REMOTE`` or ``git push --mirror``. Ignored files never are. An
untracked, unignored file is left out when:

- its path matches a secret pattern (:data:`PATTERN_CLASSES`; the syntax is the workspace
  policy's gitignore-like one), or
- its content holds a token of a known format (``continuation.host.secret_text.TOKEN_FORMATS``):
  a bounded scan, reading only regular files of at most :data:`SCAN_BYTES` that are not binary
  (a NUL byte in the first 8 KiB); a larger file is not read at all.

Files the user's repository tracks are its own and stay in snapshots. In a folder outside git
(a shadow repository) no file is the user's tracked file: a new or changed file is checked.

A left-out file is recorded with why in the checkpoint (``WorkspaceRef.secrets_left_out``),
never deleted by a rewind (listed as kept), named by ``continuation drift`` and the rewind
preview; a push to ``CONTINUATION_SNAPSHOT_REMOTE`` refuses a ref whose tree holds a file a
pattern names (``workspace.remote``).

The user's patterns: lines of a ``secret-patterns`` file in the state home, then of
``.continuation/secret-patterns`` in the project, then ``$CONTINUATION_SECRET_PATTERNS``
(``:``-separated). ``#`` starts a comment. The list is read in order and, as in a
``.gitignore``, the last pattern that matches a path (or one of its folders) decides:

- ``pattern``: a file it names is left out;
- ``!pattern``: a file it names is the user's to snapshot, as it is: not left out by a pattern
  before it (a default included), and not scanned (the user said it holds no secret).

The defaults end with templates committed on purpose (``.env.example``, public keys): those are
not left out by their name, and their content is scanned like any file's.
``CONTINUATION_SECRET_SCAN=0`` turns the content scan off.

What the scan found is kept per workspace (``secret-scan.json`` beside its snapshot state: a
path, its size, change time and inode, and the kind of token or none; never its content): a
file unchanged since is not read again, as git does not re-hash a file its index has seen.
"""
from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from continuation.host.secret_text import TOKEN_FORMATS, find_token
from continuation.workspace.policy import _glob_to_regex

#: the default patterns, by what they hold (docs/workspace.md lists them)
PATTERN_CLASSES: dict[str, tuple[str, ...]] = {
    "environment files": ("*.env", ".env", ".env.*", ".envrc"),
    "private keys and certificate stores": ("*.pem", "*.key", "*.p12", "*.pfx", "*.jks",
                                            "*.keystore", "*.ppk", "*.ovpn"),
    "SSH keys": ("id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*"),
    "credential files of common tools": (
        ".netrc", "_netrc", ".npmrc", ".pypirc", ".git-credentials", ".htpasswd", ".pgpass",
        ".vault-token", "**/.aws/credentials", "**/.docker/config.json", "**/.kube/config",
        "kubeconfig", "*.kubeconfig", "credentials", "credentials.json", "credentials.yml",
        "credentials.yaml", "*-credentials.json", "service-account*.json",
        "client_secret*.json", "application_default_credentials.json"),
    "secrets files": ("secrets.json", "secrets.yml", "secrets.yaml", "secrets.toml", ".secrets",
                      "*.secret", "*.secrets"),
    "infrastructure state": ("terraform.tfstate", "terraform.tfstate.backup", "*.tfvars"),
}
DEFAULT_PATTERNS = tuple(p for group in PATTERN_CLASSES.values() for p in group)
#: templates and public halves, committed on purpose: not secrets by name (still scanned)
DEFAULT_ALLOWED = (".env.example", ".env.sample", ".env.template", ".env.dist", "*.pub")
#: untracked files larger than this are not read by the content scan
SCAN_BYTES = 256 * 1024
BINARY_PROBE = 8192
ENV = "CONTINUATION_SECRET_PATTERNS"
SCAN_ENV = "CONTINUATION_SECRET_SCAN"
FILE_NAME = "secret-patterns"


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.replace(":", "\n").splitlines()
            if line.strip() and not line.strip().startswith("#")]


def patterns(state_home: Path | str | None, root: Path | str | None) -> tuple[str, ...]:
    """The pattern lines in force, in order: the defaults, the allowed templates (as ``!``
    lines), then the state home's file, the project's and the environment's lines."""
    out = [*DEFAULT_PATTERNS, *(f"!{p}" for p in DEFAULT_ALLOWED)]
    for folder in ((Path(state_home) if state_home else None),
                   (Path(root) / ".continuation" if root else None)):
        if folder is not None:
            try:
                out += _lines((folder / FILE_NAME).read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                pass
    return tuple(out + _lines(os.environ.get(ENV) or ""))


class _Rules:
    """Ordered patterns answering "which is the last to match this path or a folder of it",
    with one regular expression per kind of pattern (a scan may ask for thousands of paths)."""

    def __init__(self, lines: tuple[str, ...]):
        self.lines = lines
        by_name: list[tuple[int, str, bool]] = []  # a pattern without a slash: a name at any depth
        by_path: list[tuple[int, str, bool]] = []  # anchored at the root
        for i, raw in enumerate(lines):
            pattern = raw[1:] if raw.startswith("!") else raw
            pattern = pattern.strip().replace("\\", "/")
            dir_only = pattern.endswith("/")
            pattern = pattern.rstrip("/")
            anchored = "/" in pattern
            pattern = pattern.lstrip("/")
            if not pattern:
                continue
            body = _glob_to_regex(pattern)
            if anchored:
                by_path.append((i, body, dir_only))
            elif "**" in pattern:
                by_path.append((i, "(?:.*/)?" + body, dir_only))
            else:
                by_name.append((i, body, dir_only))
        # the later a pattern, the earlier its alternative: the first to match is the last one
        self._name_file = self._combine(by_name, dirs=False)
        self._name_dir = self._combine(by_name, dirs=True)
        self._path_file = self._combine(by_path, dirs=False)
        self._path_dir = self._combine(by_path, dirs=True)

    @staticmethod
    def _combine(rules, dirs: bool):
        chosen = [(i, body) for i, body, dir_only in reversed(rules) if dirs or not dir_only]
        if not chosen:
            return None
        return re.compile("|".join(f"(?P<r{i}>{body})\\Z" for i, body in chosen))

    def last_match(self, path: str) -> int | None:
        """The index of the last line matching ``path`` or one of its folders, or None."""
        parts = path.strip("/").split("/")
        best = None
        for depth in range(1, len(parts) + 1):
            is_dir = depth < len(parts)
            for regex, text in ((self._name_dir if is_dir else self._name_file, parts[depth - 1]),
                                (self._path_dir if is_dir else self._path_file,
                                 "/".join(parts[:depth]))):
                match = regex.match(text) if regex is not None else None
                if match is not None:
                    index = int(match.lastgroup[1:])
                    best = index if best is None else max(best, index)
        return best


#: what a kept scan result was made with: another version's formats or bound scan again
_SCAN_VERSION = f"{SCAN_BYTES}:" + ":".join(sorted(TOKEN_FORMATS.values()))
#: a file changed this recently is read again next time (a write in the same tick of a coarse
#: clock would leave its stamp as it was: git's "racy" entries)
RACY_S = 2.0


class SecretFiles:
    """Tells which files of a work tree a snapshot leaves out, and why. ``scan_cache``: where
    the content scan's findings are kept between snapshots (:meth:`save`)."""

    def __init__(self, state_home: Path | str | None, root: Path | str,
                 scan_cache: Path | None = None):
        self.root = Path(root)
        self._rules = _Rules(patterns(state_home, root))
        self._users_from = len(DEFAULT_PATTERNS) + len(DEFAULT_ALLOWED)
        self.scan = (os.environ.get(SCAN_ENV) or "1").strip() != "0"
        self._cache_path = scan_cache
        self._kept: dict[str, list] = _load_scan(scan_cache) if scan_cache else {}
        self._seen: dict[str, list] = {}

    def save(self) -> None:
        """Keep what this scan found for the next snapshot (best effort: a cache)."""
        if self._cache_path is None or not self.scan or self._seen == self._kept:
            return  # (a snapshot without the scan leaves what the last one found)
        import json

        from continuation.host.atomic import atomic_write

        try:
            atomic_write(self._cache_path, json.dumps(
                {"version": _SCAN_VERSION, "files": self._seen}).encode("utf-8", "surrogatepass"),
                durable=False)
        except OSError:
            pass

    def _content(self, path: str) -> str | None:
        full = self.root / path
        try:
            info = os.lstat(full)
        except OSError:
            return None
        stamp = [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino]
        kept = self._kept.get(path)
        if kept is not None and kept[:4] == stamp:
            found = kept[4]
        else:
            found = token_in_file(full)
        import time

        if time.time() - info.st_mtime > RACY_S:
            self._seen[path] = [*stamp, found]
        return found

    def name_matches(self, path: str) -> str | None:
        """The pattern that leaves ``path`` out by its name, or None."""
        index = self._rules.last_match(path)
        if index is None or self._rules.lines[index].startswith("!"):
            return None
        return self._rules.lines[index]

    def why(self, path: str) -> str | None:
        """Why ``path`` (relative to the root, not tracked by the user) is left out, or None."""
        index = self._rules.last_match(path)
        if index is not None:
            line = self._rules.lines[index]
            if not line.startswith("!"):
                return f"its name matches the secret pattern {line}"
            if index >= self._users_from:
                return None  # the user's own `!` line: snapshotted as it is, not scanned
        if not self.scan:
            return None
        found = self._content(path)
        return f"its content holds a {found}" if found else None


def _load_scan(path: Path) -> dict:
    import json

    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != _SCAN_VERSION:
        return {}
    files = data.get("files")
    return {k: v for k, v in files.items() if isinstance(v, list) and len(v) == 5} \
        if isinstance(files, dict) else {}


def token_in_file(path: Path) -> str | None:
    """The kind of token a regular, non-binary file of at most SCAN_BYTES holds, or None (a
    larger, binary or unreadable file is not read)."""
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > SCAN_BYTES:
            return None
        with open(path, "rb") as fh:
            data = fh.read(SCAN_BYTES)
    except OSError:
        return None
    if b"\0" in data[:BINARY_PROBE]:
        return None
    return find_token(data.decode("utf-8", "replace"))
