"""Which documents of a knowledge base a search reads: by tags, folder, file type and date.

A filter only narrows a search that is already scoped to one knowledge base: it is resolved to
the chunk ids of that knowledge base's matching documents (:func:`chunk_ids`), and the rankings
search those rows only (app/rag/index/rankings.py), so the top k comes from inside the filter
rather than being what is left of the overall top k. A document's date is when its file last
changed when someone said so, else when it was ingested.
"""

from __future__ import annotations

import json
import weakref
from dataclasses import dataclass, fields
from datetime import UTC, datetime

import numpy as np
from sqlalchemy import bindparam, text
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from app.db.models import UTCDateTime
from app.rag.ingest.types import DocumentKind
from app.rag.search.query_cache import LRU

MAX_TAG_LENGTH = 64  # documents.tag's width
MAX_TAGS = 50  # per document, and per list of a filter
MAX_PATH_PREFIX = 1000  # documents.name's width
RESOLVED = 16  # filters' chunk ids kept per database (100k chunks: 800 kB each)


def tag_problem(tag: str) -> str | None:
    """Why ``tag`` cannot be a tag, or None."""
    if not tag.strip():
        return "a tag cannot be empty"
    if len(tag) > MAX_TAG_LENGTH:
        return f"a tag has at most {MAX_TAG_LENGTH} characters (got {len(tag)}: {tag[:20]!r}...)"
    if tag != tag.strip():
        return f"a tag cannot start or end with spaces (got {tag!r})"
    return None


def tags_problems(tags: tuple[str, ...] | list[str], field: str) -> list[tuple[str, str]]:
    found = [(field, problem) for tag in tags if (problem := tag_problem(tag)) is not None]
    if len(tags) > MAX_TAGS:
        found.append((field, f"at most {MAX_TAGS} tags (got {len(tags)})"))
    return found


@dataclass(frozen=True)
class DocumentFilter:
    """Documents to search; every condition given must hold (an empty filter: every document)."""

    tags_any: tuple[str, ...] = ()  # at least one of these tags
    tags_all: tuple[str, ...] = ()  # every one of these tags
    path_prefix: str | None = None  # the document's name (its folder path) starts with this
    kinds: tuple[str, ...] = ()  # one of these file types (DocumentKind values)
    date_from: datetime | None = None  # inclusive
    date_to: datetime | None = None  # inclusive

    @property
    def empty(self) -> bool:
        return self == DocumentFilter()

    def problems(self) -> list[tuple[str, str]]:
        """Each invalid part, as ``(field, message)``: all of them, to be reported at once."""
        found = tags_problems(self.tags_any, "tags_any") + tags_problems(self.tags_all, "tags_all")
        known = {k.value for k in DocumentKind}
        for kind in self.kinds:
            if kind not in known:
                found.append(("kinds", f"unknown file type {kind!r} (known: {', '.join(sorted(known))})"))
        if self.path_prefix is not None and len(self.path_prefix) > MAX_PATH_PREFIX:
            found.append(("path_prefix", f"at most {MAX_PATH_PREFIX} characters (got {len(self.path_prefix)})"))
        if self.date_from is not None and self.date_to is not None and self.date_from > self.date_to:
            found.append(
                (
                    "date_to",
                    f"the range ends before it starts ({self.date_from.isoformat()} > {self.date_to.isoformat()})",
                )
            )
        return found

    def to_json(self) -> str:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in ("date_from", "date_to"):
            if values[name] is not None:
                values[name] = values[name].isoformat()
        return json.dumps({k: list(v) if isinstance(v, tuple) else v for k, v in values.items()}, sort_keys=True)

    @classmethod
    def from_json(cls, stored: str | None) -> DocumentFilter | None:
        if not stored:
            return None
        raw = json.loads(stored)
        dates = {k: datetime.fromisoformat(raw[k]) if raw.get(k) else None for k in ("date_from", "date_to")}
        return cls(
            tags_any=tuple(raw.get("tags_any", ())),
            tags_all=tuple(raw.get("tags_all", ())),
            path_prefix=raw.get("path_prefix"),
            kinds=tuple(raw.get("kinds", ())),
            **dates,
        )

    def normalised(self) -> DocumentFilter | None:
        """The same filter with sorted, distinct lists and UTC dates; None when it is empty (so two
        spellings of one filter share a cache entry, and "no filter" has one form)."""
        if self.empty:
            return None

        def utc(value: datetime | None) -> datetime | None:
            if value is None:
                return None
            return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

        return DocumentFilter(
            tags_any=tuple(sorted(set(self.tags_any))),
            tags_all=tuple(sorted(set(self.tags_all))),
            path_prefix=self.path_prefix or None,
            kinds=tuple(sorted(set(self.kinds))),
            date_from=utc(self.date_from),
            date_to=utc(self.date_to),
        )


def _like_prefix(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def chunk_ids(db: Session, project_id: int, only: DocumentFilter) -> np.ndarray:
    """The chunk ids (int64, ascending) of the project's documents that ``only`` keeps, as of ``db``'s
    snapshot. Scoped to ``project_id`` first: a filter never reaches another knowledge base."""
    where = ["d.project_id = :project"]
    params: dict[str, object] = {"project": project_id}
    expanding: list[str] = []
    if only.tags_any:
        where.append("d.id IN (SELECT t.document_id FROM document_tags t WHERE t.tag IN :tags_any)")
        params["tags_any"] = list(only.tags_any)
        expanding.append("tags_any")
    for n, tag in enumerate(only.tags_all):
        where.append(f"EXISTS (SELECT 1 FROM document_tags t WHERE t.document_id = d.id AND t.tag = :all{n})")
        params[f"all{n}"] = tag
    if only.path_prefix:
        where.append("d.name LIKE :prefix ESCAPE '\\'")
        params["prefix"] = _like_prefix(only.path_prefix)
    if only.kinds:
        where.append("d.kind IN :kinds")
        params["kinds"] = list(only.kinds)
        expanding.append("kinds")
    if only.date_from is not None:
        where.append("COALESCE(d.modified_at, d.ingested_at) >= :date_from")
        params["date_from"] = only.date_from
    if only.date_to is not None:
        where.append("COALESCE(d.modified_at, d.ingested_at) <= :date_to")
        params["date_to"] = only.date_to
    statement = text(
        "SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id "
        f"WHERE c.project_id = :project AND {' AND '.join(where)} ORDER BY c.id"
    )
    if expanding:
        statement = statement.bindparams(*(bindparam(name, expanding=True) for name in expanding))
    if only.date_from is not None or only.date_to is not None:
        statement = statement.bindparams(
            *(bindparam(name, type_=UTCDateTime()) for name in ("date_from", "date_to") if name in params)
        )
    rows = db.execute(statement, params).scalars().all()
    return np.fromiter((int(r) for r in rows), dtype=np.int64, count=len(rows))


_resolved: weakref.WeakKeyDictionary[Engine, LRU[tuple[object, ...], np.ndarray]] = weakref.WeakKeyDictionary()


def resolved(db: Session, project_id: int, revision: tuple[object, ...], only: DocumentFilter) -> np.ndarray:
    """:func:`chunk_ids`, kept in memory under ``revision``, which must hold the chunks' revision and
    the project's metadata revision as of ``db``'s snapshot (``rankings.revision(..., metadata=True)``,
    read once by the caller for its result cache too): resolving a broad filter reads every chunk
    row of the project (150-250 ms at 100k chunks on SQLite, many times the search itself), and the
    same filter is asked turn after turn."""
    key = (project_id, revision, only)
    engine = db.get_bind()
    assert isinstance(engine, Engine)
    cache = _resolved.get(engine)
    if cache is None:
        cache = _resolved.setdefault(engine, LRU(RESOLVED))
    found = cache.get(key)
    if found is None:
        found = chunk_ids(db, project_id, only)
        found.setflags(write=False)
        cache.put(key, found)
    return found
