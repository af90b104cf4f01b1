"""The root of the store's errors, below every store module (``log_store`` re-exports it)."""
from __future__ import annotations


class StoreError(Exception):
    """A store problem the user can act on; the CLI prints it as one line."""
