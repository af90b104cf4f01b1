"""Errors a rewind, fork or delete reports to the user as one line."""
from __future__ import annotations

from continuation.store import StoreError


class RewindError(StoreError):
    """The operation cannot be done as asked; nothing was changed unless the message says so."""
