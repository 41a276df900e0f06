"""Names of the schema objects the ORM does not model: FTS5 and vec0 virtual tables and their
shadows (SQLite); the per-space vector tables, their HNSW indexes, the chunks' generated
``tsvector`` column with its GIN index and word count, and the per-project search statistics,
lexeme document frequencies and postings kept by triggers (PostgreSQL: migrations 0004, 0019, 0022)."""

from __future__ import annotations

import re

_UNMODELLED = re.compile(
    r"^(chunks_fts(_\w+)?|vec_space_\d+(_\w+)?|sqlite_\w+|project_search_(stats|terms)|chunk_terms)$"
)


def is_unmodelled_table(name: str) -> bool:
    return bool(_UNMODELLED.match(name))


_UNMODELLED_INDEX = re.compile(r"^(ix_chunks_text_search|vec_space_\d+_\w+)$")
_UNMODELLED_COLUMNS = ("text_search", "text_words")


def is_unmodelled(type_: str, name: str) -> bool:
    """Whether Alembic's comparison should leave the object of this kind (``table``, ``index``,
    ``column``) and name alone."""
    if type_ == "table":
        return is_unmodelled_table(name)
    if type_ == "index":
        return bool(_UNMODELLED_INDEX.match(name))
    return type_ == "column" and name in _UNMODELLED_COLUMNS
