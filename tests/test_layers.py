"""The layer map: every import points down, and no module imports itself back.

Read from the source (AST), function-level imports included: an import inside a function is
still a dependency, only a later one. The map is ``docs/layers.md``'s; the test checks both say
the same thing.
"""
from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("continuation", "capsule", "statemachine")

#: top to bottom; a unit imports its own modules and units of lower layers only (not its siblings)
LAYERS: tuple[tuple[str, ...], ...] = (
    ("continuation.__main__",),
    ("continuation.cli",),
    ("continuation.commands",),
    ("continuation.prove",),
    ("continuation.adapters",),
    ("continuation.api",),
    ("continuation.hooks",),
    ("continuation.guard",),
    ("continuation.importers", "continuation.rewind"),
    ("continuation.boundary",),
    ("continuation.recovery",),
    ("continuation.session",),
    ("continuation.store", "continuation.workspace", "continuation.install", "continuation.toolcalls"),
    ("continuation.host",),
    ("continuation", "capsule", "statemachine"),
)
FACES = {"continuation.__main__", "continuation.cli", "continuation.api"}


def module_files(root: Path = ROOT) -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (root / package).rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _owner(name: str, modules: dict[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


@functools.lru_cache(maxsize=None)
def _parsed(path: Path, mtime_ns: int) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, int]]:
    """(imported module, line) for every import of ours in the file, at any depth."""
    tree = _parsed(path, path.stat().st_mtime_ns)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            targets = [f"{prefix}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            owner = _owner(target, modules)
            if owner and owner != module:
                found.append((owner, node.lineno))
    return found


def unit_of(module: str) -> str:
    units = sorted((u for layer in LAYERS for u in layer), key=len, reverse=True)
    for unit in units:
        if module == unit or (unit != "continuation" and module.startswith(unit + ".")):
            return unit
    raise AssertionError(f"{module} is on no layer of the map: add it to a package of the map")


def layer_of(unit: str) -> int:
    return next(len(LAYERS) - i for i, layer in enumerate(LAYERS) if unit in layer)


def upward_imports(root: Path = ROOT) -> list[str]:
    modules = module_files(root)
    bad = []
    for module, path in sorted(modules.items()):
        here = unit_of(module)
        for target, line in imports_of(module, path, modules):
            there = unit_of(target)
            if there != here and layer_of(there) >= layer_of(here):
                bad.append(f"{path.relative_to(root)}:{line}: {module} -> {target}")
    return bad


def cycles(root: Path = ROOT) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan, iterative)."""
    modules = module_files(root)
    graph = {m: sorted({t for t, _ in imports_of(m, p, modules)}) for m, p in modules.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def test_no_import_runs_up_or_sideways():
    assert upward_imports() == []


def test_no_module_imports_itself_back():
    assert cycles() == []


def test_no_loose_modules_under_the_package_but_the_faces():
    loose = {f"continuation.{p.stem}" for p in (ROOT / "continuation").glob("*.py")} - {"continuation.__init__"}
    assert loose <= FACES, sorted(loose - FACES)


def test_every_package_is_on_the_map():
    for module in module_files():
        unit_of(module)


def test_the_docs_draw_the_same_map():
    text = (ROOT / "docs" / "layers.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| *(\d+) *\| *([^|]+)\|", text, re.M)
    drawn = {int(n): tuple(sorted(u.strip().strip("`") for u in units.split(","))) for n, units in rows}
    assert drawn == {layer_of(layer[0]): tuple(sorted(layer)) for layer in LAYERS}


def _write(root: Path, name: str, text: str) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def tree(tmp_path):
    for package in PACKAGES:
        _write(tmp_path, f"{package}/__init__.py", "")
    for unit in ("host", "session", "store", "hooks", "importers"):
        _write(tmp_path, f"continuation/{unit}/__init__.py", "")
    return tmp_path


def test_the_check_sees_an_upward_import_inside_a_function(tree):
    _write(tree, "continuation/store/a.py", "def f():\n    from ..hooks import x\n")
    _write(tree, "continuation/hooks/x.py", "")
    assert upward_imports(tree) == ["continuation/store/a.py:2: continuation.store.a -> continuation.hooks.x"]


def test_the_check_sees_a_sideways_import(tree):
    _write(tree, "continuation/importers/a.py", "from continuation.hooks import x\n")
    _write(tree, "continuation/hooks/x.py", "")
    assert len(upward_imports(tree)) == 1


def test_the_check_lets_imports_point_down(tree):
    _write(tree, "continuation/hooks/a.py", "from ..session import b\nimport capsule\n")
    _write(tree, "continuation/session/b.py", "from continuation.host import c\n")
    _write(tree, "continuation/host/c.py", "")
    assert upward_imports(tree) == []
    assert cycles(tree) == []


def test_the_check_sees_a_circle(tree):
    _write(tree, "capsule/a.py", "from . import b\n")
    _write(tree, "capsule/b.py", "def f():\n    from .c import g\n")
    _write(tree, "capsule/c.py", "from capsule.a import h\n")
    assert cycles(tree) == [["capsule.a", "capsule.b", "capsule.c"]]


def test_no_module_imports_gitpython():
    """GitPython is not a dependency (docs/dependencies.md): git runs as a process."""
    users = []
    for module, path in module_files().items():
        for node in ast.walk(_parsed(path, path.stat().st_mtime_ns)):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                     else [])
            users += [module for name in names if name == "git" or name.startswith("git.")]
    assert users == []
