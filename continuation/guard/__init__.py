"""The recovery loop: a check the user names, run after turns or changes, and what a failure does.

- :mod:`.config`   the project's ``.continuation/guard.json`` (light: the tool hooks read it);
- :mod:`.runner`   runs the check command with a timeout, its output bounded;
- :mod:`.loop`     judges a run by the policy (report, rewind, halt), rewinds, records;
- :mod:`.summary`  the words for the model and the user.

Nothing is imported here: the tool and stop hooks import :mod:`.config` alone until a guard
file exists.
"""
