"""PostgreSQL's rankings against SQLite's on the same knowledge base, side by side (issue 18):
the same vector ranking and exact scores, the same BM25 where the two stemmers agree, HNSW
recall. Needs --backends to name postgresql (make test does)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from app.container import Container
from app.db import migrate
from app.db.enums import SpaceStatus
from app.rag.index import keyword_index, pg_rankings, rankings, spaces
from app.rag.ingest.pipeline import Ingestor, Source
from app.rag.search.retrieval import RetrievalParams, retrieve
from app.services import projects
from app.settings import Settings
from tests import backends
from tests.fakes import FakeEmbedder

pytestmark = pytest.mark.sqlite_too(reason="compares PostgreSQL's rankings with SQLite's on the same corpus")

# Words whose english snowball stem (PostgreSQL) and porter stem (FTS5) are the same.
CORPUS = {
    "penguins.txt": "Emperor penguins huddle together through the Antarctic winter. Penguins swim fast.",
    "owls.txt": "Owls hunt at night. An owl can turn its head; owls fly without a sound.",
    "whales.txt": "Whales swim through cold water and sing. A whale calf swims beside its mother.",
    "mixed.txt": "Penguins and whales share cold water. Owls never swim.",
    "winter.txt": "Winter nights are long in the Antarctic; the penguins huddle, the whales leave.",
}
QUESTIONS = ("penguins swim", "owls hunt at night", "cold water whales", "antarctic winter huddle", "zebra")


@pytest.fixture
def both(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[Container, Container, FakeEmbedder, int, int]]:
    if backends.POSTGRESQL not in backends.parse(request.config.getoption("--backends")):
        pytest.skip("compares with PostgreSQL: run with --backends=sqlite,postgresql")
    server: backends.PostgresServer = request.getfixturevalue("postgres_server")
    pg_url = server.create()
    built: list[Container] = []
    try:
        for url in (f"sqlite:///{tmp_path / 'kb.db'}", pg_url):
            settings = Settings(database_url=url)
            migrate.upgrade(url, default_threshold=settings.rag.threshold)
            built.append(Container.build(settings, embedder=FakeEmbedder()))
        embedder = FakeEmbedder()
        ids = []
        for container in built:
            pid = projects.get_or_create(container.store, "kb")[0].id
            summary = Ingestor(container.store, embedder, container.settings.ingest).ingest(
                pid, [Source.from_bytes(name, body.encode()) for name, body in CORPUS.items()]
            )
            assert summary.count("failed") == 0
            ids.append(pid)
        yield built[0], built[1], embedder, ids[0], ids[1]
    finally:
        for container in built:
            container.close()
        server.drop(pg_url)


def _names(container: Container, pid: int, hits: list[tuple[int, float]]) -> list[tuple[str, int, float]]:
    """Hits as (document, ordinal, score): chunk ids may differ between the two databases."""
    from sqlalchemy import select

    from app.db.models import Chunk, Document

    with container.store.read() as db:
        where = dict(
            db.execute(
                select(Chunk.id, Document.name + ":" + Chunk.ordinal.cast(type_=Document.name.type))
                .join(Document, Document.id == Chunk.document_id)
                .where(Chunk.project_id == pid)
            ).all()
        )
    return [(where[cid].split(":")[0], int(where[cid].split(":")[1]), score) for cid, score in hits]


def test_vector_and_keyword_rankings_match_sqlite(both) -> None:  # type: ignore[no-untyped-def]
    lite, pg, embedder, lite_pid, pg_pid = both
    tokenizer = keyword_index.tokenizer()
    for question in QUESTIONS:
        vector = embedder.embed([question])[0]
        weights = tokenizer.question(question)
        found = []
        for container, pid in ((lite, lite_pid), (pg, pg_pid)):
            with container.store.read() as db:
                table = spaces.active_space(db, pid).table  # type: ignore[union-attr]
                vector_hits = rankings.vector_ranking(db, table).search(vector, 10)
                keyword_hits = rankings.keyword_ranking(db, pid).search(weights, 10)
            found.append((_names(container, pid, vector_hits), _names(container, pid, keyword_hits)))
        (lite_vec, lite_kw), (pg_vec, pg_kw) = found
        assert [h[:2] for h in pg_vec] == [h[:2] for h in lite_vec], question
        assert [h[2] for h in pg_vec] == pytest.approx([h[2] for h in lite_vec], abs=1e-12)
        assert [h[:2] for h in pg_kw] == [h[:2] for h in lite_kw], question
        assert [h[2] for h in pg_kw] == pytest.approx([h[2] for h in lite_kw], rel=1e-9), question
    assert found[-1][1] == []  # "zebra": no chunk


def test_retrieval_gives_the_same_candidates_on_both(both) -> None:  # type: ignore[no-untyped-def]
    lite, pg, embedder, lite_pid, pg_pid = both
    for mode in ("vector", "keyword", "hybrid"):
        for question in QUESTIONS:
            params = RetrievalParams(mode=mode, top_k=3, threshold=0.1, feedback_docs=2)
            got = [
                [
                    (c.document_name, c.ordinal, round(c.score or 0.0, 9), c.fate)
                    for c in retrieve(container.store, embedder, pid, question, params).candidates
                ]
                for container, pid in ((lite, lite_pid), (pg, pg_pid))
            ]
            assert got[1] == got[0], (mode, question)


def test_idf_matches_sqlite(both) -> None:  # type: ignore[no-untyped-def]
    lite, pg, _, lite_pid, pg_pid = both
    terms = list(keyword_index.tokenizer().question("penguins owls the zebra"))
    with lite.store.read() as db:
        expected = rankings.keyword_ranking(db, lite_pid).idf(terms)
    with pg.store.read() as db:
        got = rankings.keyword_ranking(db, pg_pid).idf(terms)
    assert set(got) == set(expected)
    assert [got[t] for t in expected] == pytest.approx([expected[t] for t in expected], rel=1e-9)


def test_hnsw_finds_the_exact_top_10_and_beyond_its_limit_searches_exactly(both) -> None:  # type: ignore[no-untyped-def]
    """2,000 random unit vectors: HNSW (ef_search 100) then the exact re-score gives the exact top 10
    for nearly every query; asking for more than pgvector's ef_search limit scans exactly."""
    _, pg, _, _, _ = both
    rng = np.random.default_rng(7)
    data = rng.standard_normal((2000, 32)).astype(np.float32)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    from app.llm.base import SpaceId
    from app.rag.index import vector_store

    pid = projects.get_or_create(pg.store, "random")[0].id
    with pg.store.write() as db:
        space = spaces.create_space(db, pid, SpaceId("fake", "random", 32), status=SpaceStatus.ACTIVE)
        db.connection().exec_driver_sql(
            "INSERT INTO documents(project_id, name, kind, size_bytes, content_hash, status, chunk_count, "
            f"ingested_at, created_at, updated_at) VALUES ({pid}, 'r', 'text', 1, 'h', 'ready', 2000, now(), now(), now())"
        )
        db.connection().exec_driver_sql(
            "INSERT INTO chunks(document_id, project_id, ordinal, text, content_hash, token_count, char_start, "
            "char_end, line_start, line_end, heading_path) SELECT d.id, d.project_id, g, 'x', 'h', 1, 0, 1, 1, 1, '' "
            f"FROM documents d, generate_series(0, 1999) g WHERE d.project_id = {pid} ORDER BY g"
        )
        ids = [
            r[0]
            for r in db.connection().exec_driver_sql(f"SELECT id FROM chunks WHERE project_id = {pid} ORDER BY ordinal")
        ]
        vector_store.put(db, space.table, ids, data)
        table = space.table
    queries = rng.standard_normal((50, 32)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    recall = []
    with pg.store.read() as db:
        ranking = rankings.vector_ranking(db, table)
        for q in queries:
            exact = np.argsort(-(data.astype(np.float64) @ q.astype(np.float64)), kind="stable")
            want = [ids[i] for i in exact[:10]]
            got = [cid for cid, _ in ranking.search(q, 10)]
            recall.append(len(set(got) & set(want)) / 10)
        wide = ranking.search(queries[0], pg_rankings.MAX_EF_SEARCH + 500)
        exact = np.argsort(-(data.astype(np.float64) @ queries[0].astype(np.float64)), kind="stable")
        assert [cid for cid, _ in wide] == [ids[i] for i in exact[: len(wide)]]
        assert len(wide) == pg_rankings.MAX_EF_SEARCH + 500
    assert float(np.mean(recall)) >= 0.98, recall


def test_project_statistics_follow_every_chunk_write(both) -> None:  # type: ignore[no-untyped-def]
    """Migration 0019's triggers keep each project's chunk count, word count and revision in the
    same transaction as inserts, updates and deletes (also cascades); BM25 reads them."""
    from sqlalchemy import text

    from app.services import documents

    _, pg, embedder, _, pid = both

    def stats() -> tuple[tuple[int, int], tuple[int, int], int]:
        with pg.store.read() as db:
            kept = db.execute(
                text("SELECT chunks, words, revision FROM project_search_stats WHERE project_id = :p"), {"p": pid}
            ).one()
            actual = db.execute(
                text(
                    "SELECT count(*), coalesce(sum(ragchat_word_count(text_search)), 0) FROM chunks "
                    "WHERE project_id = :p"
                ),
                {"p": pid},
            ).one()
        return (int(kept[0]), int(kept[1])), (int(actual[0]), int(actual[1])), int(kept[2])

    kept, actual, revision = stats()
    assert kept == actual and actual[0] == len(CORPUS) and actual[1] > 0
    Ingestor(pg.store, embedder, pg.settings.ingest).ingest(pid, [Source.from_bytes("seals.txt", b"Seals bask.")])
    kept, actual, after_insert = stats()
    assert kept == actual and actual[0] == len(CORPUS) + 1 and after_insert > revision
    with pg.store.write() as db:
        db.execute(text("UPDATE chunks SET text = 'seals bask on the ice all day' WHERE text = 'Seals bask.'"))
    kept, actual, after_update = stats()
    assert kept == actual and after_update > after_insert
    seals = next(d for d in documents.list_for(pg.store, pid) if d.name == "seals.txt")
    documents.delete(pg.store, seals.id)  # its chunks go by cascade
    kept, actual, after_delete = stats()
    assert kept == actual and actual[0] == len(CORPUS) and after_delete > after_update
    projects.delete(pg.store, pid)
    with pg.store.read() as db:
        assert db.execute(text("SELECT count(*) FROM project_search_stats")).scalar_one() == 0
