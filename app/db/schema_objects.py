"""Names of the schema objects the ORM does not model: FTS5 and vec0 virtual tables and their
shadows (SQLite); the per-space vector tables, their HNSW indexes and the chunks' generated
``tsvector`` column with its GIN index (PostgreSQL)."""

from __future__ import annotations

import re

_UNMODELLED = re.compile(r"^(chunks_fts(_\w+)?|vec_space_\d+(_\w+)?|sqlite_\w+)$")


def is_unmodelled_table(name: str) -> bool:
    return bool(_UNMODELLED.match(name))


_UNMODELLED_INDEX = re.compile(r"^(ix_chunks_text_search|vec_space_\d+_\w+)$")
_UNMODELLED_COLUMN = "text_search"


def is_unmodelled(type_: str, name: str) -> bool:
    """Whether Alembic's comparison should leave the object of this kind (``table``, ``index``,
    ``column``) and name alone."""
    if type_ == "table":
        return is_unmodelled_table(name)
    if type_ == "index":
        return bool(_UNMODELLED_INDEX.match(name))
    return type_ == "column" and name == _UNMODELLED_COLUMN
