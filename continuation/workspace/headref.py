"""Reading HEAD and the current branch straight from the files backend (no git process).

Returns None whenever the layout is not the plain files backend (reftable, symbolic chains,
anything unexpected), and the caller asks git instead.
"""

from __future__ import annotations

import re
from pathlib import Path

_SHA = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?\Z")


def read_head(git_dir: Path, common_dir: Path) -> tuple[str | None, str | None] | None:
    """(HEAD commit or None when unborn, short branch name or None when detached), or None."""
    if (common_dir / "reftable").exists():
        return None
    try:
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if _SHA.match(head):
        return head, None
    if not head.startswith("ref: refs/heads/"):
        return None
    ref = head[len("ref: ") :]
    resolved = _resolve(common_dir, ref)
    if resolved is False:
        return None
    return resolved, ref[len("refs/heads/") :]


def _resolve(common_dir: Path, ref: str) -> str | None | bool:
    """The ref's id, None if it does not exist (unborn), False if the answer is unclear."""
    try:
        text = (common_dir / ref).read_text(encoding="utf-8").strip()
        return text if _SHA.match(text) else False
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError):
        return False
    try:
        packed = (common_dir / "packed-refs").read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError):
        return False
    suffix = " " + ref
    for line in packed.splitlines():
        if line.endswith(suffix) and not line.startswith(("#", "^")):
            sha = line[: -len(suffix)]
            return sha if _SHA.match(sha) else False
    return None
