"""The deterministic scripted agent every policy is measured with.

It is the agent of ``continuation prove`` (:mod:`continuation.prove.agent`), re-exported here so
the comparison and the proof use one agent: "do every request that looks actionable", skipping
tool calls the memory lists as finished, verifying (never re-running) a request in
``reconciling``, leaving handled / superseded / rolled-back requests alone.
"""
from continuation.prove.agent import (DO_STATES, VERIFY_STATES, Catalog, Item, decide,  # noqa: F401
                                      memory_from_context, read_context)
