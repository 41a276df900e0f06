"""A widened pass's neighbours (app/rag/search/retrieval.py ``_add_neighbours``) on both backends: the
lookup by (document, ordinal) keeps the project's term off its index (``+c.project_id``, so SQLite
does not scan the project), which must still mean the same on PostgreSQL."""

from __future__ import annotations

from dataclasses import replace

import pytest

from app.container import Container
from app.rag.ingest.pipeline import Ingestor, Source
from app.rag.search.retrieval import RetrievalParams, retrieve
from app.rag.search.retrieval_mode import RetrievalMode
from app.services import projects
from app.settings import IngestSettings
from tests.fakes import FakeEmbedder

pytestmark = pytest.mark.postgres

SMALL = IngestSettings(chunk_tokens=16, overlap_tokens=0, max_chunk_chars=384)
LONG = "\n\n".join(
    [
        "Penguins huddle in winter. The colony moves slowly as one body against the wind.",
        "Penguins huddle to share warmth. Each bird takes a turn at the cold edge of the group.",
        "Penguins huddle for weeks. The males hold the egg on their feet the whole time.",
        "Penguins huddle until spring. Then the females return from the sea with food.",
    ]
)


def test_the_neighbours_of_the_strongest_hit_join_from_its_own_project_only(container: Container) -> None:
    embedder = FakeEmbedder()
    ingest = Ingestor(container.store, embedder, SMALL)
    other = projects.create(container.store, "other").id  # the same document in another project first
    ingest.ingest(other, [Source.from_bytes("long.md", LONG.encode())])
    pid = projects.create(container.store, "kb").id
    ingest.ingest(pid, [Source.from_bytes("long.md", LONG.encode())])
    params = RetrievalParams(top_k=1, threshold=0.0, candidates=1, mode=RetrievalMode.VECTOR)
    (hit,) = retrieve(container.store, embedder, pid, "males hold the egg", params).candidates
    wider = retrieve(container.store, embedder, pid, "males hold the egg", replace(params, neighbours=1))
    assert hit.ordinal is not None
    assert sorted(c.ordinal for c in wider.candidates if c.ordinal is not None) == [
        o for o in (hit.ordinal - 1, hit.ordinal, hit.ordinal + 1) if 0 <= o < 4
    ]
    assert {c.document_id for c in wider.candidates} == {hit.document_id}
