"""The durable thread store. ``Store`` is the interface the engine uses; SQLite is the embedded
default (a server database can implement the same methods later)."""
from .sqlite import (
    Appended,
    IllegalFact,
    SqliteStore,
    StoreError,
    StoreVersionError,
    UnknownThread,
    thread_key_for,
)

Store = SqliteStore

__all__ = [
    "Appended", "IllegalFact", "SqliteStore", "Store", "StoreError", "StoreVersionError",
    "UnknownThread", "thread_key_for",
]
