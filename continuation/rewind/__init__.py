"""Aligned rewind and fork: back to one checkpoint, for the conversation, the files or both.

A checkpoint is aligned: its id names the event position (``seq``), the capsule and the
workspace snapshot taken together (see :mod:`continuation.boundary.checkpoints`). The modules:

- :mod:`.timeline`  which events are on the thread's current branch after rewinds (pure);
- :mod:`.summary`   the informed-retry notices, rebuilt from the log at every checkpoint;
- :mod:`.operation` ``plan_rewind`` / ``apply_rewind`` (conversation, files, both);
- :mod:`.fork`      ``fork_thread``: a new thread from a checkpoint, with lineage;
- :mod:`.removal`   ``delete_thread`` and ``collect_garbage`` (data, capsules and refs);
- :mod:`.listing`   ``checkpoint_rows``: the aligned checkpoints with files changed;
- :mod:`.handoff`   the prompt and command line that start a fresh Codex / Claude Code session.

Nothing is imported here: :mod:`continuation.boundary.capsule_source` uses the first two at every
checkpoint and must not pay for the rest.
"""
