"""Scenarios 10, 11 (placeholder until written)."""
