"""Context boundaries: committing a checkpoint before one, delivering the capsule after it.

``crossing`` runs a boundary; ``capsule_source`` gathers the capsule's input from the store,
``capsule_worker`` builds it in a process of its own, ``checkpoints`` commits and reads it,
``work_pages`` writes the work record; ``retention`` is what ``continuation gc`` keeps.
"""
