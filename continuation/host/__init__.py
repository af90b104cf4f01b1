"""Host utilities: the floor everything stands on.

Files (atomic replacement, reading files someone else named), where state lives, JSON text without
``json``, process liveness, fault-injection points, phase timestamps and the trace of lost writes.
Nothing here imports another part of continuation.
"""
