"""Copy a whole ragchat database into another, ids and vectors kept (`ragchat copy-database`).

The way to move a SQLite knowledge base to PostgreSQL without re-embedding anything:
every table the models declare is copied in dependency order with its ids, each embedding space's
vectors are copied as stored (no embedder is loaded), and what each backend derives by itself is
left to it: FTS5 and the journals on SQLite (their triggers fire on the inserts), the generated
``tsvector`` column on PostgreSQL. Afterwards PostgreSQL's sequences are moved past the largest
id copied, so the next row gets a fresh id (SQLite's AUTOINCREMENT does so by itself).

Everything is written in one transaction on the target: a failure leaves it as it was. The source
is read in one read transaction (one snapshot) and never written. Both databases must be at this
ragchat's migration head, and the target must hold nothing but what migrations seed (the built-in
tools) unless ``replace`` is asked for, which deletes what it holds first (in the same transaction).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import ColumnElement, Connection, Table, delete, func, select, text
from sqlalchemy.orm import Session

from app.db import migrate
from app.db.database import Database
from app.db.enums import ToolKind
from app.db.models import Base, EmbeddingSpace, KeywordJournal, Server, Tool, VectorJournal
from app.errors import ConflictError
from app.rag.index import spaces, vector_store

BATCH = 2000
# Not copied: the journals are derived by the target's own machinery (SQLite's triggers and
# vector_store.put) and meaningless on the other backend; the servers are the processes using the
# source (what they owned is recovered by the target's first server: no server there owns it).
NOT_COPIED = {KeywordJournal.__tablename__, VectorJournal.__tablename__, Server.__tablename__}


@dataclass
class CopyReport:
    """What was copied: rows per table and vectors per embedding space table."""

    rows: dict[str, int] = field(default_factory=dict)
    vectors: dict[str, int] = field(default_factory=dict)


def copied_tables() -> list[Table]:
    """The tables copied, parents before children."""
    return [t for t in Base.metadata.sorted_tables if t.name not in NOT_COPIED]


def copy_database(source_url: str, target_url: str, *, replace: bool = False) -> CopyReport:
    """Copy every row and vector of ``source_url`` into ``target_url``; see the module docstring."""
    if _same_database(source_url, target_url):
        raise ConflictError("the source and the target are the same database")
    source, target = Database.from_url(source_url), Database.from_url(target_url)
    try:
        _check_revisions(source, source_url, target, target_url)
        report = CopyReport()
        with source.read() as src, target.write() as dst:
            _empty_target(dst, replace=replace, target_url=target_url)
            for table in copied_tables():
                report.rows[table.name] = _copy_rows(src, dst, table)
            for space in src.scalars(select(EmbeddingSpace).order_by(EmbeddingSpace.id)).all():
                if _has_table(src.connection(), space.table):
                    row = dst.get(EmbeddingSpace, space.id)
                    assert row is not None  # copied with the rows above
                    spaces.create_space_table(dst, row, index=False)
                    report.vectors[space.table] = _copy_vectors(src, dst, space.table)
                    spaces.create_vector_index(dst, row)  # built once over all vectors: faster than growing it
            if dst.get_bind().dialect.name == "postgresql":
                _advance_sequences(dst.connection())
        return report
    finally:
        source.dispose()
        target.dispose()


def _same_database(a: str, b: str) -> bool:
    from sqlalchemy.engine import make_url

    return make_url(a).render_as_string(hide_password=True) == make_url(b).render_as_string(hide_password=True)


def _check_revisions(source: Database, source_url: str, target: Database, target_url: str) -> None:
    head = migrate.head_revision()
    for which, store, url in (("source", source, source_url), ("target", target, target_url)):
        found = migrate.current_revision(store.engine)
        if found != head:
            shown = _shown(url)
            raise ConflictError(
                f"the {which} database {shown} is at migration {found or 'none (empty)'}, this ragchat's head is "
                f"{head}: run `RAGCHAT_DATABASE_URL={shown} ragchat migrate` first (both must be at {head})"
            )


def _shown(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def _empty_target(dst: Session, *, replace: bool, target_url: str) -> None:
    """Refuse a target holding anything but the built-in tools; with ``replace``, delete it all."""
    held: dict[str, int] = {}
    if not replace:
        for table in copied_tables():
            count = dst.scalar(select(func.count()).select_from(table).where(*_beyond_seed(table)))
            if count:
                held[table.name] = int(count)
    if held:
        listed = ", ".join(f"{n} {name}" for name, n in held.items())
        raise ConflictError(
            f"the target database {_shown(target_url)} is not empty ({listed}): copy into a new database, "
            f"or pass --replace to delete what it holds first"
        )
    for space in dst.scalars(select(EmbeddingSpace)).all():
        spaces.drop_space(dst, space)
    for table in reversed(copied_tables()):
        dst.execute(delete(table))
    dst.flush()


def _beyond_seed(table: Table) -> list[ColumnElement[bool]]:
    # Migration 0011 seeds the built-in tools in every database: they are replaced by the source's.
    return [Tool.kind != ToolKind.BUILTIN] if table.name == Tool.__tablename__ else []


def _copy_rows(src: Session, dst: Session, table: Table) -> int:
    count = 0
    pk = list(table.primary_key.columns)
    result = src.connection().execution_options(stream_results=True).execute(select(table).order_by(*pk))
    # On PostgreSQL one multi-row statement per batch: a statement per row would fire the chunks'
    # statement triggers (migrations 0019, 0022) once per row, each updating the same per-project
    # rows again in one transaction (their update chains grow: quadratic).
    multi_row = dst.get_bind().dialect.name == "postgresql"
    per_statement = max(1, 30_000 // len(table.columns))  # bound parameters: PostgreSQL allows 65,535
    while batch := result.mappings().fetchmany(BATCH):
        rows = [dict(row) for row in batch]
        if multi_row:
            for start in range(0, len(rows), per_statement):
                dst.connection().execute(table.insert().values(rows[start : start + per_statement]))
        else:
            dst.connection().execute(table.insert(), rows)
        count += len(batch)
    return count


def _has_table(conn: Connection, name: str) -> bool:
    from sqlalchemy import inspect

    return bool(inspect(conn).has_table(name))


def _copy_vectors(src: Session, dst: Session, table: str) -> int:
    count = 0
    for ids, vectors in read_vectors(src.connection(), table):
        vector_store.put(dst, table, ids, vectors)
        count += len(ids)
    return count


def read_vectors(conn: Connection, table: str) -> Iterator[tuple[list[int], np.ndarray]]:
    """A space's stored vectors in batches, as float32 rows (exactly as stored)."""
    parse: Callable[[Any], np.ndarray]
    if conn.dialect.name == "postgresql":
        query, parse = f"SELECT chunk_id, embedding::text FROM {table} ORDER BY chunk_id", _parse_pg
    else:
        query, parse = f"SELECT rowid, embedding FROM {table} ORDER BY rowid", _parse_blob
    result = conn.execution_options(stream_results=True).execute(text(query))
    while batch := result.fetchmany(BATCH):
        yield [int(r[0]) for r in batch], np.stack([parse(r[1]) for r in batch])


def _parse_blob(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32)


def _parse_pg(value: str) -> np.ndarray:
    return np.array(value.strip("[]").split(","), dtype=np.float32)


_SAFE = re.compile(r"^[a-z_][a-z0-9_]*$")


def _advance_sequences(conn: Connection) -> None:
    """Each id sequence past the largest id copied (or back to 1 for an empty table)."""
    for table in Base.metadata.sorted_tables:
        if "id" not in table.c or not table.c.id.primary_key or not _SAFE.match(table.name):
            continue
        conn.execute(
            text(
                f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), "
                f"coalesce((SELECT max(id) FROM {table.name}), 1), (SELECT count(*) > 0 FROM {table.name}))"
            )
        )
