"""Document filters inside the rankings (SQLite, and PostgreSQL with --backends): the best match
overall is outside the filter, and the k results still come back, all from inside it, with the
scores they have unfiltered."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import numpy as np
import pytest
from sqlalchemy import text

from app.container import Container
from app.rag.index import keyword_index, rankings, spaces
from app.rag.ingest.pipeline import Ingestor, Source
from app.rag.search.document_filter import DocumentFilter
from app.rag.search.retrieval import RetrievalParams, retrieve
from app.services import documents, projects
from tests.fakes import FakeEmbedder

pytestmark = pytest.mark.postgres

QUERY = "restart the billing service"
JAN = datetime(2026, 1, 15, tzinfo=UTC)
JUN = datetime(2026, 6, 15, tzinfo=UTC)


def _project(container: Container, name: str = "kb") -> tuple[FakeEmbedder, int]:
    """One document outside every filter below matches the query best (cosine 1); four runbooks,
    tagged and dated, match less well; a policy matches least."""
    embedder = FakeEmbedder(dimensions=4)
    embedder.pin(QUERY, [1, 0, 0, 0])
    embedder.pin("best billing service restart notes", [1, 0, 0, 0])
    for i in range(4):
        cos = 0.9 - 0.1 * i
        embedder.pin(f"runbook {i} billing service restart", [cos, math.sqrt(1 - cos * cos), 0, 0])
    embedder.pin("policy on billing service", [0.2, 0, math.sqrt(1 - 0.04), 0])
    project_id = projects.get_or_create(container.store, name)[0].id
    sources = [Source.from_bytes("notes/best.md", b"best billing service restart notes", tags=("ops",))]
    for i in range(4):
        sources.append(
            Source.from_bytes(
                f"runbooks/r{i}.txt",
                f"runbook {i} billing service restart".encode(),
                modified_at=JAN if i < 2 else JUN,
                tags=("ops", "billing") if i % 2 == 0 else ("billing",),
            )
        )
    sources.append(Source.from_bytes("policies/p.txt", b"policy on billing service", tags=("policy",)))
    summary = Ingestor(container.store, embedder, container.settings.ingest).ingest(project_id, sources)
    assert summary.count("failed") == 0, [f.error for f in summary.files]
    return embedder, project_id


def _names(container: Container, embedder: FakeEmbedder, pid: int, mode: str, only: DocumentFilter | None, k: int):
    params = RetrievalParams(mode=mode, top_k=k, threshold=0.0, candidates=k, document_filter=only)
    result = retrieve(container.store, embedder, pid, QUERY, params)
    return [(c.document_name, round(c.score or 0.0, 6)) for c in result.kept]


@pytest.mark.parametrize("mode", ["vector", "keyword", "hybrid"])
def test_k_results_come_from_inside_the_filter_when_the_best_match_is_outside(container: Container, mode: str) -> None:
    embedder, pid = _project(container)
    everything = _names(container, embedder, pid, mode, None, 2)
    assert everything[0][0] == "notes/best.md"  # the best overall (and the candidate pool is only k)

    found = _names(container, embedder, pid, mode, DocumentFilter(path_prefix="runbooks/"), 3)
    assert len(found) == 3
    assert all(name.startswith("runbooks/") for name, _ in found)
    if mode != "keyword":
        assert [n for n, _ in found] == ["runbooks/r0.txt", "runbooks/r1.txt", "runbooks/r2.txt"]
        assert [s for _, s in found] == [0.9, 0.8, 0.7]  # the scores they have unfiltered


@pytest.mark.parametrize(
    ("only", "expected"),
    [
        (
            DocumentFilter(tags_any=("policy", "ops")),
            {"notes/best.md", "runbooks/r0.txt", "runbooks/r2.txt", "policies/p.txt"},
        ),
        (DocumentFilter(tags_all=("ops", "billing")), {"runbooks/r0.txt", "runbooks/r2.txt"}),
        (DocumentFilter(kinds=("markdown",)), {"notes/best.md"}),
        # Documents without a modification date are dated by their ingestion (now: after July).
        (
            DocumentFilter(date_from=datetime(2026, 6, 1, tzinfo=UTC), date_to=datetime(2026, 7, 1, tzinfo=UTC)),
            {"runbooks/r2.txt", "runbooks/r3.txt"},
        ),
        (
            DocumentFilter(date_to=datetime(2026, 2, 1, tzinfo=UTC), path_prefix="runbooks/"),
            {"runbooks/r0.txt", "runbooks/r1.txt"},
        ),
        (DocumentFilter(path_prefix="runbooks/r1"), {"runbooks/r1.txt"}),
        (DocumentFilter(path_prefix="runbooks%"), set()),  # LIKE's wildcards are the path's characters
    ],
)
def test_exactly_the_filtered_documents_are_searched(
    container: Container, only: DocumentFilter, expected: set[str]
) -> None:
    embedder, pid = _project(container)
    for mode in ("vector", "hybrid"):
        assert {name for name, _ in _names(container, embedder, pid, mode, only, 10)} == expected


def test_a_filter_never_reaches_another_knowledge_base(container: Container) -> None:
    embedder, a = _project(container, "a")
    _, b = _project(container, "b")
    params = RetrievalParams(mode="hybrid", top_k=10, threshold=0.0, document_filter=DocumentFilter(tags_any=("ops",)))
    ids_a = {c.chunk_id for c in retrieve(container.store, embedder, a, QUERY, params).candidates}
    ids_b = {c.chunk_id for c in retrieve(container.store, embedder, b, QUERY, params).candidates}
    assert len(ids_a) == len(ids_b) == 3
    assert not ids_a & ids_b


def test_tags_given_again_for_an_unchanged_file_replace_its_tags(container: Container) -> None:
    embedder, pid = _project(container)
    again = Source.from_bytes("policies/p.txt", b"policy on billing service", tags=("ops",))
    summary = Ingestor(container.store, embedder, container.settings.ingest).ingest(pid, [again])
    assert summary.files[0].status == "unchanged"
    found = _names(container, embedder, pid, "vector", DocumentFilter(tags_any=("policy",)), 10)
    assert found == []
    found = _names(container, embedder, pid, "vector", DocumentFilter(tags_all=("ops",)), 10)
    assert "policies/p.txt" in {n for n, _ in found}


def test_a_tag_change_reaches_the_next_search_past_both_caches(container: Container) -> None:
    """The filter's resolved chunks and the result cache are keyed by the chunks' revision, which a
    tag change does not move: the project's metadata revision does."""
    embedder, pid = _project(container)
    only = DocumentFilter(tags_any=("policy",))
    params = RetrievalParams(mode="hybrid", top_k=10, threshold=0.0, document_filter=only)

    def names() -> set[str]:
        found = retrieve(container.store, embedder, pid, QUERY, params, cache_key=("turn",))
        return {c.document_name for c in found.kept}

    assert names() == {"policies/p.txt"}
    assert names() == {"policies/p.txt"}  # now cached
    runbook = next(d for d in documents.list_for(container.store, pid) if d.name == "runbooks/r3.txt")
    documents.set_tags(container.store, runbook.id, ["policy"])
    assert names() == {"policies/p.txt", "runbooks/r3.txt"}


def test_filtered_rankings_equal_the_full_rankings_cut_to_the_filter(container: Container) -> None:
    """Both rankings searched with a filter give exactly the full ranking's scores and order among
    the filter's chunks (the keyword ranking keeps its pruning: its bounds hold among them too)."""
    rng = np.random.default_rng(5)
    words = ["alpha", "beta", "gamma", "delta", "billing", "service", "restart", "policy", "owl", "tea"]
    files = {f"d{i:02d}.txt": " ".join(rng.choice(words, size=int(rng.integers(3, 12)))) for i in range(60)}
    embedder = FakeEmbedder()
    project_id = projects.get_or_create(container.store, "many")[0].id
    sources = [Source.from_bytes(name, text.encode()) for name, text in files.items()]
    Ingestor(container.store, embedder, container.settings.ingest).ingest(project_id, sources)
    terms = keyword_index.tokenizer().question("restart the billing service policy")
    vector = np.asarray(embedder.embed(["restart the billing service policy"])[0], dtype=np.float32)
    with container.store.read() as db:
        table = spaces.active_space(db, project_id).table
        every = np.asarray(sorted(int(i) for i in db.execute(text("SELECT id FROM chunks")).scalars()), dtype=np.int64)
        keyword = rankings.keyword_ranking(db, project_id)
        vectors = rankings.vector_ranking(db, table)
        for share in (0.1, 0.5, 0.9):
            only = np.sort(rng.choice(every, size=max(1, int(len(every) * share)), replace=False))
            allowed = set(only.tolist())
            for ranking, query in ((keyword, terms), (vectors, vector)):
                full = [hit for hit in ranking.search(query, len(every)) if hit[0] in allowed]
                got = ranking.search(query, 5, only)
                # The same scores in the same order (chunks of equal text tie: either may be cut).
                assert [round(score, 9) for _, score in got] == [round(score, 9) for _, score in full[:5]]
                assert {cid for cid, _ in got} <= allowed and len(got) == min(5, len(full))
