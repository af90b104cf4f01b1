"""The recording core: a thread's events, the rules that turn what a runtime did into them, and
the views of its log (the current branch after rewinds, what a rewind undid).

Hooks, importers and the Python API all record through here; nothing here knows a hook payload.
"""
