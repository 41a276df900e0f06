"""Names of the tables the ORM does not model: FTS5 and vec0 virtual tables and their shadows."""

from __future__ import annotations

import re

_UNMODELLED = re.compile(r"^(chunks_fts(_\w+)?|vec_space_\d+(_\w+)?|sqlite_\w+)$")


def is_unmodelled_table(name: str) -> bool:
    return bool(_UNMODELLED.match(name))
