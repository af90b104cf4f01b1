"""The durable thread store. :class:`Store` (``interface``) is what the engine, hooks,
importers and commands use; ``open_store`` picks the backend from ``CONTINUATION_STORE``:
SQLite under the state home (the embedded default) or a PostgreSQL server (``postgres``)."""
from continuation.store.factory import STORE_FILE, backend_name, open_store, store_file, store_url
from continuation.store.log_store import (
    Appended,
    CheckpointError,
    GenerationTaken,
    IllegalFact,
    StoreError,
    StoreVersionError,
    UnknownThread,
    thread_key_for,
)
from continuation.store.sqlite import SqliteStore

__all__ = [
    "Appended", "CheckpointError", "GenerationTaken", "IllegalFact", "STORE_FILE", "SqliteStore",
    "Store", "StoreError", "StoreVersionError", "UnknownThread", "backend_name", "open_store",
    "store_file", "store_url", "thread_key_for",
]


def __getattr__(name):
    # the Protocol needs `typing`, which the hook hot path does not otherwise import
    if name == "Store":
        from continuation.store.interface import Store

        return Store
    raise AttributeError(name)
