"""The tokenizer's parsed ranks, prepared in the state home ahead of the first boundary.

A boundary whose capsule is counted exactly (a thread long enough to need cuts: the usual
first compaction) reads the encoding's ranks from ``<state home>/cache`` (a checked file,
``capsule.tokens.set_ranks_cache``: ~2.4 ms). Without that file it parses the encoding's
file first and writes it: measured on a PreCompact hook of the benchmarks' thread in
a state home without it 258-339 ms against 163-182 with it (20,000-file repository, one core
free), once per state home. ``continuation install`` prepares it, so a user's first compaction
does not pay for it; a home without it (installed by hand, a new ``CONTINUATION_HOME``, a new
encoding file) is prepared by its first exact count, as before.
"""
from __future__ import annotations

import os


def prepare(home) -> str:
    """Parse the process-wide encoding's ranks into ``home``'s cache, unless they are there
    (checked); the encoding's name. A cache that cannot be written is not an error (the
    boundary parses the file, slower); a tokenizer that cannot be loaded raises."""
    from capsule.tokens import get_token_counter, set_ranks_cache

    from continuation.host.paths import ensure_private_dir

    ensure_private_dir(home)
    set_ranks_cache(os.path.join(os.fspath(home), "cache"))
    return get_token_counter().name
