"""Each backend runs its own SQL: the statements live in ``sqlite_sql.py`` and ``postgres_sql.py``
under the same names, each in its own dialect, and the store's logic only names them."""
from __future__ import annotations

import ast
import inspect
from pathlib import Path

from continuation.store import postgres_sql, sqlite_sql
from continuation.store import schema, schema_postgres

STORE = Path(__file__).resolve().parents[1] / "continuation" / "store"
#: modules that set a backend up (pragmas, the migration lock), hold its statements, or read a
#: damaged SQLite file row by row (salvage: below the store's logic, on a file it cannot open)
SQL_HOMES = {"sqlite_sql.py", "postgres_sql.py", "schema.py", "schema_postgres.py", "sqlite.py",
             "server_store.py", "salvage.py"}
SQL_START = ("SELECT", "INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "ALTER", "BEGIN",
             "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "PRAGMA")


def _names(module) -> set[str]:
    return {n for n in vars(module) if not n.startswith("_")
            and n not in ("annotations",) and not inspect.ismodule(vars(module)[n])}


def _texts(module):
    """Every statement of the module, the functions called with small shapes."""
    for name in sorted(_names(module)):
        value = getattr(module, name)
        if isinstance(value, str):
            yield name, value
        elif isinstance(value, tuple) and all(isinstance(v, str) for v in value) and value \
                and value[0].split()[0] in SQL_START:
            yield from ((name, v) for v in value)
        elif callable(value) and name != "many":
            params = [p for p in inspect.signature(value).parameters.values()
                      if p.kind is p.POSITIONAL_OR_KEYWORD]
            shapes = {0: [()], 1: [(0,), (2,)], 2: [(0, 0), (2, 3)]}.get(len(params))
            if name in ("inputs_in_states", "calls_in_statuses"):
                shapes = [(["pending"],), (["handled", "pending"],)]
            if name in ("delete_rows_of",):
                shapes = [("events",)]
            if name in ("select_sealed", "update_sealed"):  # a table, its keys, its sealed columns
                spec = ("checkpoints", ("checkpoint_id",), (("capsule", "bytes"), ("rendered", "text")))
                shapes = [(*spec, False), (*spec, True)] if name == "select_sealed" else [spec]
            for shape in shapes:
                if "last" in inspect.signature(value).parameters:
                    yield from ((name, value(*shape, last=last)) for last in (False, True))
                else:
                    yield name, value(*shape)


def test_both_backends_define_the_same_statements():
    assert _names(sqlite_sql) == _names(postgres_sql)


def test_each_statement_is_in_its_backends_dialect():
    for name, text in _texts(postgres_sql):
        assert "?" not in text and "INDEXED BY" not in text and "json_extract" not in text, name
        assert "INSERT OR" not in text and "MAX(generation" not in text, name
        assert "MAX(delivered" not in text, name
        assert "CAST(" not in text and "sqlite_master" not in text, name
    for name, text in _texts(sqlite_sql):
        assert "%s" not in text and "::jsonb" not in text and "ANY(" not in text, name
        assert "GREATEST" not in text and "FOR UPDATE" not in text, name


def test_the_statement_lists_bind_as_their_backend_expects():
    assert sqlite_sql.many(["a", "b"]) == ("a", "b")
    assert postgres_sql.many(("a", "b")) == (["a", "b"],)
    assert sqlite_sql.admitted_seqs(3).count("?") == 4
    assert postgres_sql.admitted_seqs(3).count("%s") == 2


def test_the_schemas_have_the_same_migrations():
    """Numbered alike (the tables, columns and indexes they make are compared on a live server
    in tests/test_store_postgres.py)."""
    assert len(schema.MIGRATIONS) == len(schema_postgres.MIGRATIONS) == schema.SCHEMA_VERSION


def _spelled_statements(path: Path) -> list[str]:
    return [node.value[:60] for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and node.value.lstrip().startswith(SQL_START) and len(node.value.split()) > 2]


def test_no_other_store_module_spells_a_statement():
    found = [(path.name, text) for path in sorted(STORE.glob("*.py"))
             if path.name not in SQL_HOMES for text in _spelled_statements(path)]
    assert found == []


def test_the_scan_sees_a_spelled_statement(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text('Q = "SELECT data FROM inputs WHERE thread_key=?"\n'
                       'DOC = "Select one of them."\n')
    assert _spelled_statements(planted) == ["SELECT data FROM inputs WHERE thread_key=?"]
