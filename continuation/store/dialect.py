"""The store's SQL is written once, in SQLite's dialect; a server backend runs it through
:func:`to_postgres`, so every caller (the engine, the hooks, importers, commands) keeps one
spelling of each query whatever the backend.

Translated: ``?`` parameters, ``INSERT OR IGNORE``/``INSERT OR REPLACE`` (an upsert on the
table's primary key), two-argument ``MAX(a, b)``, ``json_extract(col, '$.a.b')`` (text, as
SQLite returns for strings), ``length(CAST(x AS BLOB))`` (bytes), ``BEGIN IMMEDIATE``, the
planner hint ``INDEXED BY``, the schema's types (``REAL`` is a double, ``BLOB`` is
``bytea``, ``WITHOUT ROWID`` goes)."""
from __future__ import annotations

import re

#: primary keys of the tables written with INSERT OR REPLACE (see schema.py)
PRIMARY_KEYS = {
    "threads": ("thread_key",), "events": ("thread_key", "seq"),
    "inputs": ("thread_key", "input_id"), "turns": ("thread_key", "turn_id"),
    "tool_calls": ("thread_key", "call_id"), "claims": ("thread_key", "seq"),
    "thread_meta": ("thread_key", "key"), "checkpoints": ("checkpoint_id",),
    "sessions": ("thread_key", "host", "pid"),
}

_JSON = re.compile(r"json_extract\((\w+),\s*'\$\.([\w.]+)'\)")
_MAX2 = re.compile(r"\bMAX\(([\w.]+),\s*([^(),]+)\)", re.IGNORECASE)
_REPLACE = re.compile(r"INSERT OR REPLACE INTO (\w+) \(([^)]*)\)(.*)$", re.IGNORECASE | re.DOTALL)
_IGNORE = re.compile(r"INSERT OR IGNORE INTO", re.IGNORECASE)
_cache: dict[str, str] = {}


def to_postgres(sql: str) -> str:
    done = _cache.get(sql)
    if done is not None:
        return done
    out = sql.strip()
    if out.upper() == "BEGIN IMMEDIATE":
        out = "BEGIN"
    # ordering by a JSON value keeps its type (numbers as numbers), as in SQLite
    out = re.sub(r"ORDER BY " + _JSON.pattern,
                 lambda m: f"ORDER BY ({m.group(1)}::jsonb #> '{{{m.group(2).replace('.', ',')}}}')",
                 out)
    out = _JSON.sub(lambda m: f"({m.group(1)}::jsonb #>> '{{{m.group(2).replace('.', ',')}}}')",
                    out)
    out = re.sub(r"length\(CAST\((\w+) AS BLOB\)\)", r"octet_length(\1)", out,
                 flags=re.IGNORECASE)
    out = _MAX2.sub(r"GREATEST(\1, \2)", out)
    out = re.sub(r" INDEXED BY \w+", "", out)  # SQLite's planner hint; PostgreSQL has statistics
    replace = _REPLACE.match(out)
    if replace:
        table, columns = replace.group(1), [c.strip() for c in replace.group(2).split(",")]
        keys = PRIMARY_KEYS[table]
        updates = ", ".join(f"{c}=EXCLUDED.{c}" for c in columns if c not in keys)
        out = (f"INSERT INTO {table} ({', '.join(columns)}){replace.group(3)}"
               f" ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {updates}")
    elif _IGNORE.search(out):
        out = _IGNORE.sub("INSERT INTO", out) + " ON CONFLICT DO NOTHING"
    out = out.replace("%", "%%").replace("?", "%s")
    _cache[sql] = out
    return out


def schema_to_postgres(ddl: str) -> list[str]:
    """The SQLite schema migration ``ddl`` as PostgreSQL statements."""
    ddl = re.sub(r"\)\s*WITHOUT ROWID", ")", ddl)
    # an index on a JSON value: the expression the queries' translation spells (parenthesized,
    # as an index column that is an expression must be)
    ddl = _JSON.sub(lambda m: f"({m.group(1)}::jsonb #>> '{{{m.group(2).replace('.', ',')}}}')",
                    ddl)
    ddl = re.sub(r"length\(CAST\((\w+) AS BLOB\)\)", r"octet_length(\1)", ddl,
                 flags=re.IGNORECASE)
    ddl = re.sub(r"\bREAL\b", "DOUBLE PRECISION", ddl)
    ddl = re.sub(r"\bBLOB\b", "BYTEA", ddl)
    ddl = re.sub(r"\bINTEGER\b", "BIGINT", ddl)
    return [s.strip() for s in ddl.split(";") if s.strip()]
