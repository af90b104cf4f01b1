"""Host utilities: the floor everything stands on.

Files (atomic replacement, reading files someone else named), where state lives, JSON text without
``json``, process liveness, fault-injection points, phase timestamps, the trace of lost writes,
and secret-looking text (found, and redacted for display).
Nothing here imports another part of continuation.
"""
