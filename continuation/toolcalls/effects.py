"""Does a tool call reach outside the workspace (a deploy, a push, a message, a remote write)?

A workspace rewind puts files back; it cannot take back a ``git push``, a deploy, a published
package, a sent message or a request that changed a remote service. The recovery loop names
every such call of the undone stretch to the model and tells it not to repeat one blindly.

The test is by name and arguments only, and errs toward "outside": a false "outside" costs the
model one line to read, a false "inside" could have an effect repeated. A shell command line is
outside when any simple command in it is a known remote writer (below), or a script or ``make``
target whose name says deploy / release / publish / push / send / notify; a tool of an MCP
server or a tool this module does not know is outside (its effects are unknown). File edits,
reads and local commands (tests, builds, formatters) are inside.
"""
from __future__ import annotations

from continuation.toolcalls.classify import (
    FILE_EDIT_TOOLS,
    PLAN_TOOLS,
    READ_ONLY_TOOLS,
    SHELL_TOOLS,
    shell_command,
)
from continuation.toolcalls.shellcheck import Op, tokens

#: program -> subcommands that write somewhere else (None: every use does)
_REMOTE = {
    "git": {"push", "send-email", "request-pull"},
    "gh": None, "glab": None, "hub": None,
    "ssh": None, "scp": None, "sftp": None, "ftp": None, "telnet": None,
    "kubectl": {"apply", "create", "delete", "patch", "replace", "rollout", "scale", "set",
                "edit", "annotate", "label", "drain", "cordon", "expose", "run"},
    "helm": {"install", "upgrade", "uninstall", "delete", "rollback", "push"},
    "terraform": {"apply", "destroy", "import"}, "tofu": {"apply", "destroy", "import"},
    "pulumi": {"up", "destroy", "update"},
    "docker": {"push", "login"}, "podman": {"push", "login"},
    "npm": {"publish", "deprecate", "unpublish", "dist-tag"},
    "yarn": {"publish", "npm"}, "pnpm": {"publish"},
    "twine": {"upload"}, "cargo": {"publish", "yank"}, "gem": {"push", "yank"},
    "poetry": {"publish"}, "flit": {"publish"}, "hatch": {"publish"}, "uv": {"publish"},
    "aws": None, "gcloud": None, "gsutil": None, "az": None, "doctl": None,
    "heroku": None, "fly": {"deploy"}, "flyctl": {"deploy"}, "vercel": None,
    "netlify": {"deploy"}, "firebase": {"deploy"}, "wrangler": {"deploy", "publish"},
    "serverless": {"deploy"}, "sls": {"deploy"},
    "sendmail": None, "mail": None, "mailx": None, "mutt": None,
}
#: Gemini CLI's tools that write only in the workspace or its own memory, and its shell tool
_LOCAL_TOOLS = frozenset({"replace", "save_memory", "write_todos"})
_SHELLS = frozenset({"run_shell_command"})
_DATA_FLAGS = ("-d", "--data", "--data-raw", "--data-binary", "--data-urlencode", "-F",
               "--form", "-T", "--upload-file", "--json", "--post-data", "--post-file",
               "--method", "--body-data", "--body-file")
_WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
_EFFECT_WORDS = ("deploy", "release", "publish", "push", "send", "notify", "upload")


def _program(words: list[str]) -> tuple[str, list[str]]:
    while words and "=" in words[0] and not words[0].startswith("-"):
        words = words[1:]  # FOO=bar cmd
    while words and words[0] in ("sudo", "env", "nohup", "time", "exec", "command"):
        words = words[1:]
    if not words:
        return "", []
    return words[0].rsplit("/", 1)[-1], words[1:]


def _http_write(prog: str, args: list[str]) -> bool:
    if prog not in ("curl", "wget", "http", "https", "xh"):
        return False
    for i, a in enumerate(args):
        if any(a == f or a.startswith(f + "=") for f in _DATA_FLAGS):
            return True
        if a in ("-X", "--request") and i + 1 < len(args) and args[i + 1].upper() in _WRITE_METHODS:
            return True
        if a.startswith("-X") and a[2:].upper() in _WRITE_METHODS:
            return True
        if prog in ("http", "https", "xh") and a.upper() in _WRITE_METHODS:
            return True
    return False


def _simple(words: list[str]) -> str | None:
    prog, args = _program(words)
    if not prog:
        return None
    if prog in _REMOTE:
        subs = _REMOTE[prog]
        if prog == "git":  # its own options first: -C DIR, -c KEY=VALUE
            while len(args) > 1 and args[0] in ("-C", "-c"):
                args = args[2:]
        positional = [a for a in args if not a.startswith("-")]
        if subs is None:
            return f"`{prog}` acts on a remote system"
        if positional and positional[0] in subs:
            return f"`{prog} {positional[0]}` acts outside the workspace"
        return None
    if _http_write(prog, args):
        return f"`{prog}` sends data to a server"
    if prog == "rsync" and any(":" in a and not a.startswith("-") for a in args):
        return "`rsync` to a remote host"
    if prog in ("make", "just", "task", "invoke", "npm", "yarn", "pnpm"):
        targets = [a for a in args if not a.startswith("-") and "=" not in a]
        if prog in ("npm", "yarn", "pnpm") and targets[:1] == ["run"]:
            targets = targets[1:]
        named = [t for t in targets if any(w in t.lower() for w in _EFFECT_WORDS)]
        if named:
            return f"`{prog} {named[0]}` is named for an outside effect"
        return None
    stem = prog.lower()
    if any(w in stem for w in _EFFECT_WORDS):
        return f"`{prog}` is named for an outside effect"
    if prog in ("sh", "bash", "zsh", "python", "python3", "node") and args:
        script = next((a for a in args if not a.startswith("-")), "")
        name = script.rsplit("/", 1)[-1].lower()
        if any(w in name for w in _EFFECT_WORDS):
            return f"`{script}` is named for an outside effect"
    return None


def outside_effect(tool: str, args) -> str | None:
    """Why the call reaches outside the workspace, or None when it stays inside."""
    args = args if isinstance(args, dict) else {}
    tool = tool or ""
    if tool in READ_ONLY_TOOLS or tool in PLAN_TOOLS or tool in FILE_EDIT_TOOLS or \
            tool in _LOCAL_TOOLS:
        return None
    if tool in SHELL_TOOLS or tool in _SHELLS or (not tool and "command" in args):
        command = shell_command(args)
        if command is None:
            return "a shell call without a readable command line"
        try:
            toks = tokens(command)
        except ValueError:
            return "a command line that cannot be parsed"
        words: list[str] = []
        skip = False
        for tok in [*toks, Op(";")]:
            if skip:  # the file a redirection names is no command
                skip = False
            elif isinstance(tok, Op) and (">" in tok or "<" in tok):
                skip = True
            elif isinstance(tok, Op):
                why = _simple(words)
                if why:
                    return why
                words = []
            else:
                words.append(tok)
        return None
    if tool.startswith("mcp__"):
        return f"MCP tool {tool}: its effects are unknown"
    return f"tool {tool or '?'}: its effects are unknown"
