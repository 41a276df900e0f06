"""Two writers at once on one database, each with its own engine (two API servers): the same
upload stored once, one embedding space per project, one knowledge base per name whatever its case
(issue 18, item 3). On PostgreSQL they take turns on advisory locks (app/db/locks.py); on SQLite
the write transaction does it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import pytest
from sqlalchemy import func, select

from app.db.database import Database
from app.db.models import Chunk, Document, EmbeddingSpace
from app.errors import ConflictError
from app.llm.base import Vectors
from app.rag.ingest.pipeline import FileStatus, Ingestor, IngestSummary, Source
from app.services import projects
from app.settings import Settings
from tests.fakes import FakeEmbedder

T = TypeVar("T")
TEXT = b"# Penguins\n\nEmperor penguins huddle together to survive the Antarctic winter."


class MeetingEmbedder(FakeEmbedder):
    """Waits in ``embed`` until the other writer is there too: both have read the database (and
    found no document) before either writes."""

    def __init__(self, barrier: threading.Barrier) -> None:
        super().__init__()
        self.barrier = barrier

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.barrier.wait(timeout=30)
        return super().embed(texts)


@pytest.fixture
def stores(migrated: Settings) -> Iterator[tuple[Database, Database]]:
    pair = (Database.from_url(migrated.database_url), Database.from_url(migrated.database_url))
    yield pair
    for store in pair:
        store.dispose()


def both(first: Callable[[], T], second: Callable[[], T]) -> list[T]:
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(first), pool.submit(second)]
        return [f.result(timeout=60) for f in futures]


def ingest(store: Database, settings: Settings, barrier: threading.Barrier, kb: int, name: str) -> IngestSummary:
    ingestor = Ingestor(store, MeetingEmbedder(barrier), settings.ingest)
    return ingestor.ingest(kb, [Source.from_bytes(name, TEXT)])


def count(store: Database, what: object) -> int:
    with store.read() as db:
        return int(db.scalar(select(func.count()).select_from(what)) or 0)  # type: ignore[arg-type]


def test_the_same_upload_through_two_servers_at_once_is_one_document(
    stores: tuple[Database, Database], migrated: Settings
) -> None:
    kb = projects.create(stores[0], "kb").id
    barrier = threading.Barrier(2)
    summaries = both(
        lambda: ingest(stores[0], migrated, barrier, kb, "penguins.md"),
        lambda: ingest(stores[1], migrated, barrier, kb, "penguins.md"),
    )
    results = sorted((s.files[0] for s in summaries), key=lambda r: r.status.value)
    assert [r.status for r in results] == [FileStatus.ADDED, FileStatus.UNCHANGED]
    assert results[0].document_id == results[1].document_id
    assert results[1].chunks == results[0].chunks > 0
    assert count(stores[1], Document) == 1
    assert count(stores[1], Chunk) == results[0].chunks


def test_two_first_uploads_into_an_empty_project_make_one_space(
    stores: tuple[Database, Database], migrated: Settings
) -> None:
    kb = projects.create(stores[0], "kb").id
    barrier = threading.Barrier(2)
    summaries = both(
        lambda: ingest(stores[0], migrated, barrier, kb, "a.md"),
        lambda: ingest(stores[1], migrated, barrier, kb, "b.md"),
    )
    assert [s.files[0].status for s in summaries] == [FileStatus.ADDED, FileStatus.ADDED]
    assert count(stores[1], EmbeddingSpace) == 1
    assert count(stores[1], Document) == 2


def test_names_differing_only_in_case_make_one_knowledge_base(stores: tuple[Database, Database]) -> None:
    def create(store: Database, name: str) -> str:
        try:
            return projects.create(store, name).name
        except ConflictError:
            return "refused"

    for name in (f"Team {n}" for n in range(15)):
        made = both(lambda n=name: create(stores[0], n), lambda n=name: create(stores[1], n.upper()))
        assert sorted(made)[1] == "refused", made
