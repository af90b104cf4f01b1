"""Pure per-input lifecycle and exactly-once admission (no I/O)."""
