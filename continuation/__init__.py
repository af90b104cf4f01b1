"""continuation: a context-boundary continuation engine for coding agents."""
__version__ = "0.1.0"
