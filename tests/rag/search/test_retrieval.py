"""Retrieval over a real migrated database (SQLite, and PostgreSQL with --backends): scoping, scores,
threshold then top_k, fusion."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from app.container import Container
from app.errors import ConflictError
from app.rag.ingest.pipeline import Ingestor, Source
from app.rag.search import fusion
from app.rag.search.degradation import DegradationReason
from app.rag.search.retrieval import RetrievalParams, nearest_score, retrieve
from app.rag.search.stages import Stage
from app.services import projects
from tests.fakes import FakeEmbedder

pytestmark = pytest.mark.postgres


def _ingest(container: Container, embedder: FakeEmbedder, project: str, files: dict[str, str]) -> int:
    project_id = projects.get_or_create(container.store, project)[0].id
    summary = Ingestor(container.store, embedder, container.settings.ingest).ingest(
        project_id, [Source.from_bytes(name, text.encode()) for name, text in files.items()]
    )
    assert summary.count("failed") == 0, [f.error for f in summary.files]
    return project_id


def test_rrf_arithmetic() -> None:
    fused = fusion.rrf([([7, 8, 9], 1.0), ([9, 7], 2.0)], k=60)
    assert fused[7] == pytest.approx(1 / 61 + 2 / 62)
    assert fused[8] == pytest.approx(1 / 62)
    assert fused[9] == pytest.approx(1 / 63 + 2 / 61)


def test_search_never_leaves_its_project(container: Container) -> None:
    embedder = FakeEmbedder()
    text = {"penguins.txt": "Emperor penguins huddle together through the Antarctic winter."}
    a = _ingest(container, embedder, "a", text)
    b = _ingest(container, embedder, "b", text)
    for mode in ("vector", "keyword", "hybrid"):
        params = RetrievalParams(mode=mode, top_k=10, threshold=0.0)
        found_a = retrieve(container.store, embedder, a, "penguins in winter", params)
        found_b = retrieve(container.store, embedder, b, "penguins in winter", params)
        assert found_a.kept and found_b.kept
        ids_a = {c.chunk_id for c in found_a.candidates}
        ids_b = {c.chunk_id for c in found_b.candidates}
        assert not ids_a & ids_b


def _pinned_project(container: Container) -> tuple[FakeEmbedder, int]:
    """Three one-chunk documents with exactly known cosine similarities to the query."""
    embedder = FakeEmbedder(dimensions=4)
    embedder.pin("query words", [1, 0, 0, 0])
    embedder.pin("alpha", [1, 0, 0, 0])  # score 1.0
    embedder.pin("beta query words", [0.5, math.sqrt(0.75), 0, 0])  # score exactly 0.5
    embedder.pin("gamma", [0, 0, 1, 0])  # score 0.0
    pid = _ingest(container, embedder, "pinned", {"a.txt": "alpha", "b.txt": "beta query words", "c.txt": "gamma"})
    return embedder, pid


def test_a_chunk_exactly_at_the_threshold_is_kept(container: Container) -> None:
    embedder, pid = _pinned_project(container)
    result = retrieve(
        container.store, embedder, pid, "query words", RetrievalParams(mode="vector", top_k=5, threshold=0.5)
    )
    fates = {c.document_name: (c.score, c.fate) for c in result.candidates}
    assert fates["b.txt"] == (0.5, "kept")
    assert fates["a.txt"] == (1.0, "kept")
    assert fates["c.txt"] == (0.0, "below_threshold")


def test_threshold_applies_before_top_k(container: Container) -> None:
    """In hybrid mode keyword matching ranks b first, but its score is under the threshold:
    it is dropped first, and top_k=1 then keeps the next candidate instead of nothing. (RRF, whose
    per-ranking weights make the keyword ranking decide the order.)"""
    embedder, pid = _pinned_project(container)
    params = RetrievalParams(mode="hybrid", top_k=1, threshold=0.6, fusion="rrf", vector_weight=0.1, keyword_weight=5.0)
    result = retrieve(container.store, embedder, pid, "query words", params)
    assert result.candidates[0].document_name == "b.txt"
    assert result.candidates[0].fate == "below_threshold"
    assert [c.document_name for c in result.kept] == ["a.txt"]


def test_keyword_only_candidates_get_a_real_score(container: Container) -> None:
    embedder, pid = _pinned_project(container)
    result = retrieve(container.store, embedder, pid, "query words", RetrievalParams(mode="keyword", threshold=0.0))
    (only,) = result.candidates
    assert only.document_name == "b.txt" and only.keyword_rank == 1 and only.vector_rank is None
    assert only.score == 0.5


def test_trace_fields_and_ranks(container: Container) -> None:
    embedder, pid = _pinned_project(container)
    result = retrieve(
        container.store, embedder, pid, "query words", RetrievalParams(mode="hybrid", top_k=1, threshold=0)
    )
    assert [c.fused_rank for c in result.candidates] == list(range(1, len(result.candidates) + 1))
    assert {c.fate for c in result.candidates} == {"kept", "beyond_top_k"}
    assert list(result.timings_ms) == [
        Stage.RETRIEVAL_EMBED,
        Stage.RETRIEVAL_VECTOR,
        Stage.RETRIEVAL_KEYWORD,
        Stage.RETRIEVAL_SCORE,
        Stage.RETRIEVAL_LOAD,
        Stage.RETRIEVAL_RANK,
    ]
    assert result.space == "fake/hash-words@4"
    first = result.candidates[0]
    assert first.location.line_start == 1 and first.location.char_start == 0


def test_mixed_embedding_spaces_are_refused(container: Container) -> None:
    pid = _ingest(container, FakeEmbedder(dimensions=64), "kb", {"a.txt": "some text"})
    other = FakeEmbedder(dimensions=32)
    with pytest.raises(ConflictError, match="ragchat reindex"):
        retrieve(container.store, other, pid, "text", RetrievalParams())
    with pytest.raises(ConflictError, match="fake/hash-words@64"):
        Ingestor(container.store, other, container.settings.ingest).ingest(pid, [Source.from_bytes("b.txt", b"more")])


def test_empty_project_returns_nothing(container: Container) -> None:
    pid = projects.create(container.store, "empty").id
    assert retrieve(container.store, FakeEmbedder(), pid, "anything", RetrievalParams()).candidates == []


def test_vector_index_failure_degrades_to_keyword(container: Container) -> None:
    embedder = FakeEmbedder()
    pid = _ingest(container, embedder, "kb", {"a.txt": "penguins huddle in winter"})
    with container.store.write() as db:  # break the vector index on purpose
        db.connection().exec_driver_sql("DROP TABLE vec_space_1")
    result = retrieve(container.store, embedder, pid, "penguins", RetrievalParams(mode="hybrid", threshold=0.0))
    assert result.mode == "keyword"
    # The scores come from the same missing table: both are said, each with its reason.
    assert [d.reason for d in result.degraded] == [
        DegradationReason.VECTOR_SEARCH_FAILED,
        DegradationReason.SCORES_UNAVAILABLE,
    ]
    assert "vector search failed" in result.degraded[0].message
    assert [c.document_name for c in result.kept] == ["a.txt"]


@pytest.mark.sqlite_only(reason="the FTS5 query plan (app/rag/index/keyword_fts.py, the benchmarks' baseline)")
def test_keyword_search_matches_once_then_filters_by_project(container: Container) -> None:
    """The plan must run the FTS match first; a plan that walks the project's chunks and probes the
    index per row is hundreds of times slower on real corpora."""
    from sqlalchemy import event

    from app.rag.index import keyword_fts

    sent: list[str] = []
    event.listen(container.store.engine, "before_cursor_execute", lambda _c, _cur, sql, *_: sent.append(sql))
    with container.store.read() as db:
        keyword_fts.search(db, 1, "penguins", 10)
        plan = db.connection().exec_driver_sql("EXPLAIN QUERY PLAN " + sent[-1], ('"a"', 1, 10)).all()
    steps = [row[-1] for row in plan]
    assert steps[0] == "MATERIALIZE hits" and steps[1].startswith("SCAN chunks_fts VIRTUAL TABLE"), steps


def test_a_write_through_another_engine_invalidates_the_cached_result(container: Container) -> None:
    """Two API servers on one database: each caches results per engine, keyed by the project's
    revision read in the search's snapshot (journals on SQLite, project_search_stats on PostgreSQL),
    so a write by the other server is never hidden by a cached result."""
    embedder = FakeEmbedder()
    pid = _ingest(container, embedder, "kb", {"penguins.txt": "Emperor penguins huddle through the winter."})
    other = Container.build(container.settings, embedder=embedder)  # the second server: its own engine
    try:
        assert other.store.engine is not container.store.engine
        params = RetrievalParams(mode="hybrid", top_k=5, threshold=0.0)

        def search() -> tuple[bool | None, list[str]]:
            found = retrieve(container.store, embedder, pid, "penguins", params, cache_key=("penguins",))
            return found.cache.result_hit, sorted(c.document_name for c in found.kept)

        assert search() == (False, ["penguins.txt"])
        assert search() == (True, ["penguins.txt"])
        added = Ingestor(other.store, embedder, other.settings.ingest).ingest(
            pid, [Source.from_bytes("more.txt", b"King penguins huddle too.")]
        )
        assert added.count("failed") == 0
        assert search() == (False, ["more.txt", "penguins.txt"])
        assert search() == (True, ["more.txt", "penguins.txt"])
        from app.services import documents

        gone = next(d for d in documents.list_for(other.store, pid) if d.name == "more.txt")
        documents.delete(other.store, gone.id)
        assert search() == (False, ["penguins.txt"])
    finally:
        other.close()


def test_the_nearest_score_is_the_best_candidates_score(container: Container) -> None:
    # A chat turn's probe of its message alone: what a search would score its best candidate, read
    # without the search (no chunk rows, no ranking).
    embedder, pid = _pinned_project(container)
    for query, expected in (([1, 0, 0, 0], 1.0), ([0, 0, 1, 0], 1.0), ([0, 1, 0, 0], math.sqrt(0.75))):
        best = retrieve(
            container.store,
            embedder,
            pid,
            "q",
            RetrievalParams(mode="vector", top_k=1, threshold=0.0),
            query_vector=query,
        )
        assert (
            nearest_score(container.store, embedder, pid, query) == best.candidates[0].score == pytest.approx(expected)
        )
    empty = projects.create(container.store, "empty").id
    assert nearest_score(container.store, embedder, empty, [1, 0, 0, 0]) is None


def _readme_project(container: Container) -> tuple[FakeEmbedder, int]:
    """A tool's README in three one-chunk documents whose cosines to the questions below are all under
    0.30, as a small embedding model scores a short question against the section that answers it."""
    embedder = FakeEmbedder(dimensions=4)
    for question in ("How do I install it?", "What does -n do?", "Does it support Python 2.7?"):
        embedder.pin(question, [1, 0, 0, 0])
    embedder.pin("Getting started. Install via pip: pip install frobnicate", [0.05, 1, 0, 0])  # cosine 0.05
    embedder.pin("Options. - `-n`: skips the summary statistics", [0.24, 0, 0.97, 0])  # cosine 0.24
    embedder.pin("Frobnicate totals widgets and runs on Python 3.9 or newer.", [0.2, 0, 0, 1])  # cosine 0.2
    embedder.pin("Plugins add support for gadgets.", [0.1, 0, 0, 1])  # cosine 0.1
    files = {
        "install.txt": "Getting started. Install via pip: pip install frobnicate",
        "options.txt": "Options. - `-n`: skips the summary statistics",
        "about.txt": "Frobnicate totals widgets and runs on Python 3.9 or newer.",
        "plugins.txt": "Plugins add support for gadgets.",
    }
    return embedder, _ingest(container, embedder, "readme", files)


@pytest.mark.parametrize(
    ("question", "document"), [("How do I install it?", "install.txt"), ("What does -n do?", "options.txt")]
)
def test_a_short_question_keeps_the_passage_holding_all_its_words(
    container: Container, question: str, document: str
) -> None:
    # The cosine of a few generic words says little; the only chunk with all of them answers.
    embedder, pid = _readme_project(container)
    result = retrieve(container.store, embedder, pid, question, RetrievalParams(top_k=5, threshold=0.3))
    assert [(c.document_name, c.passed_on_words) for c in result.kept] == [(document, True)]
    assert result.kept[0].score is not None and result.kept[0].score < 0.3


def test_words_let_in_nothing_that_misses_a_word_or_when_the_cosine_found_something(container: Container) -> None:
    embedder, pid = _readme_project(container)
    params = RetrievalParams(top_k=5, threshold=0.3)
    # "support" and "Python" are in the knowledge base, never in one chunk: nothing answers this.
    assert retrieve(container.store, embedder, pid, "Does it support Python 2.7?", params).kept == []
    # Something passed on its cosine: the search is left as it was.
    found = retrieve(container.store, embedder, pid, "How do I install it?", replace(params, threshold=0.15))
    assert sorted(c.document_name for c in found.kept) == ["about.txt", "options.txt"]
    assert not any(c.passed_on_words for c in found.candidates)
    # A question of more words embeds its meaning: its cosine decides alone.
    # A strict session's threshold still means what it says: the words carry a chunk 0.30 at most.
    assert retrieve(container.store, embedder, pid, "What does -n do?", replace(params, threshold=0.6)).kept == []
    embedder.pin("How do I install it on a laptop at home?", [1, 0, 0, 0])
    assert retrieve(container.store, embedder, pid, "How do I install it on a laptop at home?", params).kept == []
