"""Install continuation's command hooks into Codex CLI and Claude Code.

    install(runtime, scope, *, project_dir, home, state_home, command=None, env=None) -> InstallReport
    uninstall(runtime, scope, *, project_dir, home, state_home, env=None) -> InstallReport
    status(runtime, scope, *, project_dir, home, state_home, command=None, env=None) -> dict

``runtime`` is ``"codex"`` or ``"claude"``; ``scope`` is ``"user"`` or
``"project"``. ``command`` is the launcher (default: this interpreter running the package's
``__main__.py``, ``[sys.executable, "-P", "<package>/__main__.py"]``, see
``core.default_command``);
the installed hook command is ``<command> hook --runtime <runtime>``.
``env`` (default ``os.environ``) supplies ``CODEX_HOME`` / ``CLAUDE_CONFIG_DIR``.

Merging keeps the user's hooks, other settings, key order and indentation;
installing twice equals installing once; uninstall restores the file byte for
byte when nothing else changed it (see :mod:`.core`). Codex only runs hooks
the user trusted: see :mod:`.codex` and ``InstallReport.message``.
"""

from continuation.install.core import InstallReport, default_command, install, status, uninstall
from continuation.install.errors import InstallError

__all__ = ["InstallError", "InstallReport", "default_command", "install", "status", "uninstall"]
