"""Reindex builds the new space beside the old one and switches only when complete."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect

from app.container import Container
from app.errors import ConflictError
from app.rag.ingest import reindex as reindexing
from app.rag.ingest.pipeline import Ingestor, Source
from app.rag.search.retrieval import RetrievalParams, retrieve
from app.services import projects
from tests.fakes import FakeEmbedder

PARAMS = RetrievalParams(mode="vector", threshold=0.0, top_k=3)


def _tables(container: Container) -> set[str]:
    with container.store.read() as db:
        rows = inspect(db.connection()).get_table_names()
        return {name for name in rows if name.startswith("vec_space_") and name.count("_") == 2}


def test_search_keeps_working_during_a_reindex_and_switches_at_the_end(container: Container) -> None:
    old, new = FakeEmbedder(dimensions=64), FakeEmbedder(dimensions=32, model="other")
    pid = projects.create(container.store, "kb").id
    files = [Source.from_bytes(f"doc{i}.txt", f"document {i} about penguins and ice".encode()) for i in range(600)]
    Ingestor(container.store, old, container.settings.ingest).ingest(pid, files)

    seen: list[int] = []

    def during(n: int) -> None:  # called after each batch: the old space still answers
        seen.append(n)
        assert retrieve(container.store, old, pid, "penguins", PARAMS).kept
        with pytest.raises(ConflictError):
            retrieve(container.store, new, pid, "penguins", PARAMS)

    label = reindexing.reindex(container.store, pid, new, during)

    assert label == "fake/other@32" and sum(seen) == 600 and len(seen) >= 3
    assert _tables(container) == {"vec_space_2"}
    assert retrieve(container.store, new, pid, "penguins", PARAMS).kept
    with pytest.raises(ConflictError):
        retrieve(container.store, old, pid, "penguins", PARAMS)


def test_chunks_added_during_the_build_are_caught_up(container: Container) -> None:
    old, new = FakeEmbedder(dimensions=64), FakeEmbedder(dimensions=32, model="other")
    pid = projects.create(container.store, "kb").id
    ingestor = Ingestor(container.store, old, container.settings.ingest)
    ingestor.ingest(pid, [Source.from_bytes(f"d{i}.txt", b"penguins on ice") for i in range(300)])
    added = []

    def add_one(_: int) -> None:
        if not added:
            ingestor.ingest(pid, [Source.from_bytes("late.txt", b"a late document about owls")])
            added.append(1)

    reindexing.reindex(container.store, pid, new, add_one)
    with container.store.read() as db:
        chunks = db.connection().exec_driver_sql("SELECT count(*) FROM chunks").scalar_one()
        vectors = db.connection().exec_driver_sql("SELECT count(*) FROM vec_space_2").scalar_one()
    assert chunks == vectors == 301
