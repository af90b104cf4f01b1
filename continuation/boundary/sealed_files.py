"""The files a boundary leaves under the state home for the model: work record pages, spilled
contexts (``contexts/<thread>/``) and handoff prompts (``handoff/<thread>/``); sealed with the
store's key when the store is encrypted (``store/sealed.py``, docs/encryption.md).

A sealed file cannot be read by a runtime's own file tools, so with encryption on the context
names ``continuation source`` commands for them (``work:``, ``context:``, ``handoff:``
pointers), which open them with the key. Manifests (``*.work.json``: page names, call ranges,
sha256) hold no text and stay in clear.
"""
from __future__ import annotations

import os

from continuation.host.atomic import atomic_write
from continuation.host.sealing import SealError, file_key_id
from continuation.host.sealing import read_file as _read_sealed

#: the folders under the state home whose text files are sealed
FOLDERS = ("contexts", "handoff")
SOURCE_COMMAND = "continuation source"
#: ``continuation source`` pointers to a spilled context and a handoff prompt
CONTEXT_POINTER = "context"
HANDOFF_POINTER = "handoff"
SEALED_SUFFIX = ".md"


def sealer_of(store):
    """The sealer of ``store`` (None when its rows are in clear)."""
    return store.codec.sealer


def write(path, data: bytes, sealer, *, durable: bool = True) -> None:
    """Write ``data`` to ``path`` atomically, sealed when ``sealer`` is given."""
    atomic_write(path, sealer.seal_file(data) if sealer is not None else data, durable=durable)


def read(path, sealer) -> bytes:
    """A file's bytes, opened when sealed (OSError when missing; :class:`SealError` when sealed
    and ``sealer`` cannot open it)."""
    return _read_sealed(path, sealer)


def files(home) -> list[str]:
    """Every text file of :data:`FOLDERS` under ``home``."""
    found = []
    for folder in FOLDERS:
        for root, _, names in os.walk(os.path.join(os.fspath(home), folder)):
            found += [os.path.join(root, n) for n in names if n.endswith(SEALED_SUFFIX)]
    return sorted(found)


def reseal_all(home, old, new) -> tuple[int, list[str]]:
    """Every file of :func:`files` read with ``old`` (None: in clear) and written with ``new``
    (None: in clear): (files rewritten, problems). A file already as ``new`` writes it is left
    alone (a rotation run again after a crash); one that cannot be opened is reported and left
    as it is."""
    done, problems = 0, []
    want = None if new is None else new.write_id
    for path in files(home):
        try:
            with open(path, "rb") as fh:
                head = fh.read(128)
            if file_key_id(head) == want:
                continue
            data = read(path, old)
            write(path, data, new, durable=False)
            done += 1
        except (OSError, SealError) as exc:
            problems.append(f"{path}: {exc}")
    return done, problems
