"""Is a shell command line read-only (safe to run again)? Conservative by construction.

A command line is read-only only when every simple command in it (split on ``|``, ``;``,
``&&``, ``||`` and newlines) is a known reader with arguments that keep it one, and nothing
writes a file: any ``>``/``>>`` redirection (except to ``/dev/null`` or fd duplication), a
background ``&``, command substitution, ``eval``/``xargs``/``tee`` and anything unknown make it
"not read-only". A false "not read-only" costs the user one question; a false "read-only" could
repeat an effect, so every doubt goes the first way.
"""
from __future__ import annotations

import re

# readers whose every argument form is harmless
_READERS = frozenset({
    "ls", "cat", "head", "tail", "grep", "egrep", "fgrep", "rg", "ag", "ack", "wc", "pwd",
    "echo", "printf", "stat", "file", "du", "df", "which", "type", "tree", "diff", "cmp",
    "cut", "tr", "nl", "basename", "dirname", "realpath", "readlink", "date", "whoami", "id",
    "uname", "hostname", "true", "false", "test", "[", "cd", "jq", "md5sum", "sha1sum",
    "sha256sum", "sha512sum", "cksum", "od", "hexdump", "xxd", "strings", "column", "fold",
    "rev", "tac", "paste", "comm", "join", "expand", "unexpand", "less", "more", "printenv",
    "ps", "uptime", "free", "lsof", "locale", "command",
})
# git subcommands that only read (with the argument checks in _git_read_only)
_GIT_READERS = frozenset({
    "status", "log", "diff", "show", "rev-parse", "ls-files", "ls-tree", "blame", "describe",
    "grep", "shortlog", "cat-file", "rev-list", "merge-base", "show-ref", "for-each-ref",
    "name-rev", "whatchanged", "count-objects", "check-ignore", "var", "help", "version",
})
_FIND_WRITERS = ("-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0",
                 "-fprintf", "-fls")
_SAFE_REDIRECT_TARGETS = ("/dev/null",)
_OPERATORS = {"|", ";", "&&", "||", "\n", "|&"}
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


class NotReadOnly(Exception):
    """Why a command line may have an effect (the message is shown to the user)."""


class Op(str):
    """An unquoted shell operator (a quoted ``'>'`` is a plain word, not an :class:`Op`)."""


_OPS = sorted(["||", "&&", ";;", "|&", "<<<", "<<", ">>", ">&", "<&", "&>", ">|", "|", "&", ";",
               "<", ">", "(", ")", "\n"], key=len, reverse=True)


def tokens(command: str) -> list[str]:
    """Words and operators, POSIX quoting rules (quotes removed from words)."""
    out: list[str] = []
    word: list[str] | None = None
    i, n = 0, len(command)
    while i < n:
        ch = command[i]
        if ch in " \t\r":
            if word is not None:
                out.append("".join(word))
                word = None
            i += 1
            continue
        if ch == "#" and word is None:
            end = command.find("\n", i)
            i = n if end < 0 else end
            continue
        op = next((o for o in _OPS if command.startswith(o, i)), None)
        if op is not None:
            # an fd number glued to a redirection ("2>") stays a word; split_commands drops it
            if word is not None:
                out.append("".join(word))
                word = None
            out.append(Op(op))
            i += len(op)
            continue
        word = word if word is not None else []
        if ch == "\\":
            if i + 1 < n:
                word.append(command[i + 1])
            i += 2
        elif ch == "'":
            end = command.find("'", i + 1)
            if end < 0:
                raise ValueError("no closing quotation")
            word.append(command[i + 1:end])
            i = end + 1
        elif ch == '"':
            j = i + 1
            buf = []
            while j < n and command[j] != '"':
                if command[j] == "\\" and j + 1 < n and command[j + 1] in '"\\$`\n':
                    buf.append(command[j + 1])
                    j += 2
                    continue
                buf.append(command[j])
                j += 1
            if j >= n:
                raise ValueError("no closing quotation")
            text = "".join(buf)
            if "$(" in text or "`" in text:
                word.append("$(")  # substitution inside double quotes still runs
            word.append(text)
            i = j + 1
        else:
            word.append(ch)
            i += 1
    if word is not None:
        out.append("".join(word))
    return out


def split_commands(toks: list[str]) -> list[list[str]]:
    """Simple commands between operators; redirections are checked and dropped."""
    commands: list[list[str]] = [[]]
    i = 0
    while i < len(toks):
        tok = toks[i]
        if not isinstance(tok, Op):
            commands[-1].append(tok)
        elif tok in _OPERATORS:
            commands.append([])
        elif tok == "&":
            raise NotReadOnly("runs something in the background (&)")
        elif tok in ("(", ")"):
            raise NotReadOnly("uses a subshell")
        elif ">" in tok:
            target = toks[i + 1] if i + 1 < len(toks) else ""
            # "2>&1" tokenises as "2", ">&", "1": duplication of a descriptor writes no file
            if tok in (">&", "<&") and target.isdigit():
                i += 2
                if commands[-1] and commands[-1][-1].isdigit():
                    commands[-1].pop()
                continue
            if target not in _SAFE_REDIRECT_TARGETS:
                raise NotReadOnly(f"redirects output to {target or 'a file'!r}")
            if commands[-1] and commands[-1][-1].isdigit():
                commands[-1].pop()  # the fd number before ">"
            i += 2
            continue
        elif tok in ("<", "<<", "<<<"):
            if tok == "<<":
                raise NotReadOnly("uses a here-document")
            i += 2  # reading a file into a reader is fine
            continue
        else:
            raise NotReadOnly(f"uses the shell operator {tok!r}")
        i += 1
    return [c for c in commands if c]


def _git_read_only(args: list[str]) -> None:
    rest = list(args)
    while rest and rest[0].startswith("-"):
        opt = rest.pop(0)
        if opt in ("-C", "-c", "--git-dir", "--work-tree") and rest:
            if opt == "-c":
                raise NotReadOnly("git -c changes configuration for the command")
            rest.pop(0)
    if not rest:
        return
    sub, sub_args = rest[0], rest[1:]
    if sub in _GIT_READERS:
        if sub == "diff" and any(a.startswith("--output") for a in sub_args):
            raise NotReadOnly("git diff --output writes a file")
        return
    positional = [a for a in sub_args if not a.startswith("-")]
    if sub == "branch" and not positional and all(
            a in ("-a", "-r", "-v", "-vv", "--list", "--show-current", "--all", "--remotes",
                  "--no-color", "--color") for a in sub_args):
        return
    if sub in ("tag", "remote") and not positional and all(a in ("-l", "--list", "-v") for a in sub_args):
        return
    if sub == "stash" and sub_args[:1] in (["list"], ["show"]):
        return
    if sub == "worktree" and sub_args[:1] == ["list"]:
        return
    if sub == "config" and any(a in ("--get", "--get-all", "--list", "-l", "--get-regexp")
                               for a in sub_args):
        return
    if sub == "reflog" and (not sub_args or sub_args[0] == "show"):
        return
    raise NotReadOnly(f"git {sub} may change the repository")


def _simple_read_only(words: list[str]) -> None:
    while words and _ASSIGNMENT.match(words[0]):
        words = words[1:]  # FOO=bar cmd
    if not words:
        return
    if any("$(" in w or "`" in w for w in words):
        raise NotReadOnly("uses command substitution")
    prog = words[0].rsplit("/", 1)[-1]
    args = words[1:]
    if prog in _READERS:
        if prog == "command" and args and args[0] not in ("-v", "-V"):
            raise NotReadOnly("`command` runs another program")
        return
    if prog == "git":
        return _git_read_only(args)
    if prog == "find":
        bad = [a for a in args if a in _FIND_WRITERS]
        if bad:
            raise NotReadOnly(f"find {bad[0]} acts on the files it finds")
        return
    if prog == "sort":
        if any(a == "-o" or a.startswith("-o") or a.startswith("--output") for a in args):
            raise NotReadOnly("sort -o writes a file")
        return
    if prog == "uniq":
        if len([a for a in args if not a.startswith("-")]) > 1:
            raise NotReadOnly("uniq with two file names writes the second")
        return
    if prog == "sed":
        if any(a.startswith("-i") or a.startswith("--in-place") for a in args):
            raise NotReadOnly("sed -i edits files in place")
        scripts = [a for a in args if not a.startswith("-")][:1]
        if "-n" in args and scripts and re.fullmatch(r"[0-9$,]*p", scripts[0]):
            return
        raise NotReadOnly("sed scripts can write files")
    raise NotReadOnly(f"`{prog}` is not a known read-only command")


def check(command: str) -> None:
    """Raise :class:`NotReadOnly` unless ``command`` only reads."""
    if not command.strip():
        raise NotReadOnly("empty command")
    try:
        toks = tokens(command)
    except ValueError as exc:  # unbalanced quotes
        raise NotReadOnly(f"cannot be parsed ({exc})") from None
    for words in split_commands(toks):
        _simple_read_only(words)


def is_read_only(command: str) -> tuple[bool, str]:
    try:
        check(command)
    except NotReadOnly as exc:
        return False, str(exc)
    return True, "only reads"
