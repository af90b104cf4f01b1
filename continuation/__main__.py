"""``python -m continuation`` and the hook launcher ``continuation install`` writes,
``<python> -P <package folder>/__main__.py`` (see ``install.core.default_command``): run by its
path, this file is a script outside the package, so the import is absolute (``-P`` keeps its
folder off ``sys.path``, so ``continuation`` is the installed package)."""
from continuation.cli import entry

entry()
