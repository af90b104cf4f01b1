"""Acknowledged high-water marks, kept outside the database: per thread, the last seq a
commit of this store acknowledged (``<store>-marks/<thread key>``, 21 bytes overwritten in
place).

A store holds what its file and write-ahead log hold. A crash copy, a backup taken mid-write
or a write-ahead log cut short loses the newest commits, and SQLite cannot tell:
``integrity_check`` says ok. The marks can: ``doctor`` compares each with the thread's last
seq, and a store behind its marks has lost acknowledged facts. Each mark is written inside the
commit's write lock, just before COMMIT (so two writers never write them out of order); a
process killed between the two leaves a mark one commit ahead, which names a fact that was
never acknowledged either. Written without fsync: a mark lost with the machine only misses a
loss, never invents one.
"""
from __future__ import annotations

import os

SUFFIX = "-marks"
_WIDTH = 20


def folder_of(store_path: str) -> str:
    return store_path + SUFFIX


def write(folder: str, thread_key: str, seq: int) -> None:
    path = os.path.join(folder, thread_key)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    except FileNotFoundError:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.pwrite(fd, b"%*d\n" % (_WIDTH, seq), 0)
    finally:
        os.close(fd)


def read_all(folder: str) -> dict[str, int]:
    """Thread key -> acknowledged seq (unreadable marks are left out)."""
    out = {}
    try:
        names = os.listdir(folder)
    except OSError:
        return out
    for name in names:
        try:
            with open(os.path.join(folder, name), "rb") as fh:
                out[name] = int(fh.read(_WIDTH + 1).strip())
        except (OSError, ValueError):
            pass
    return out


def forget(folder: str, thread_key: str) -> None:
    try:
        os.unlink(os.path.join(folder, thread_key))
    except OSError:
        pass
