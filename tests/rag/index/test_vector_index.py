"""The in-memory vector index over a real migrated SQLite file: exact results, scoping, and
coherence with every committed write and delete (in this process, from another engine, after
journal pruning, after a space is recreated under the same id)."""

from __future__ import annotations

from typing import cast

import numpy as np
import pytest

from app.container import Container
from app.db.database import Database
from app.llm.base import Embedder
from app.rag.index import rankings, spaces, vector_index, vector_store
from app.rag.ingest.pipeline import Ingestor, Source
from app.rag.search.retrieval import RetrievalParams, retrieve
from app.services import documents, projects
from tests.fakes import FakeEmbedder

pytestmark = pytest.mark.sqlite_only(
    reason="the in-process vector index over vec0 and SQLite's vector journal (PostgreSQL searches HNSW in SQL: tests/rag/index/test_pg_rankings.py)"
)

DIMS = 16


def _project(store: Database, name: str) -> tuple[int, str]:
    pid = projects.create(store, name).id
    with store.write() as db:
        table = spaces.ensure_space(db, pid, FakeEmbedder(DIMS).space).table
    return pid, table


def _add_chunks(store: Database, pid: int, vectors: np.ndarray, name: str = "doc.txt") -> list[int]:
    """One document with one chunk per vector, written as ingestion writes them (chunk rows, then vectors)."""
    with store.write() as db:
        conn = db.connection()
        conn.exec_driver_sql(
            "INSERT INTO documents(project_id, name, kind, size_bytes, content_hash, status, chunk_count, "
            "ingested_at, created_at, updated_at) VALUES (?, ?, 'txt', 0, 'h', 'ready', ?, "
            "CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)",
            (pid, name, len(vectors)),
        )
        doc_id = conn.exec_driver_sql("SELECT last_insert_rowid()").scalar_one()
        ids = []
        for ordinal in range(len(vectors)):
            conn.exec_driver_sql(
                "INSERT INTO chunks(document_id, project_id, ordinal, text, content_hash, token_count, char_start, "
                "char_end, line_start, line_end, heading_path) VALUES (?, ?, ?, ?, 'h', 1, 0, 1, 1, 1, '')",
                (doc_id, pid, ordinal, f"chunk {ordinal} of {name}"),
            )
            ids.append(int(conn.exec_driver_sql("SELECT last_insert_rowid()").scalar_one()))
        table = spaces.active_space(db, pid).table  # type: ignore[union-attr]
        vector_store.put(db, table, ids, vectors)
    return ids


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIMS)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _knn(store: Database, table: str, query: np.ndarray, k: int) -> list[tuple[int, float]]:
    with store.read() as db:
        return vector_store.knn(db, table, query, k)


def _loads(store: Database, table: str) -> int:
    with store.read() as db:
        return vector_index._indexes(db)[table].loads


def test_results_are_exact_search_with_exact_scores(container: Container) -> None:
    rng = np.random.default_rng(1)
    pid, table = _project(container.store, "kb")
    vectors = _unit(rng, 500)
    ids = np.asarray(_add_chunks(container.store, pid, vectors))
    for query in _unit(rng, 5):
        exact = vectors.astype(np.float64) @ query.astype(np.float64)
        expected = ids[np.argsort(-exact)[:10]]
        found = _knn(container.store, table, query, 10)
        assert [cid for cid, _ in found] == expected.tolist()  # recall@10 = 1
        scores = dict(zip(ids.tolist(), exact.tolist(), strict=True))
        assert [score for _, score in found] == [scores[cid] for cid, _ in found]


def test_writes_are_seen_by_the_next_search_without_a_reload(container: Container) -> None:
    rng = np.random.default_rng(2)
    pid, table = _project(container.store, "kb")
    _add_chunks(container.store, pid, _unit(rng, 50))
    query = _unit(rng, 1)[0]
    assert len(_knn(container.store, table, query, 100)) == 50
    (new_id,) = _add_chunks(container.store, pid, query[None, :], name="new.txt")
    found = _knn(container.store, table, query, 100)
    assert len(found) == 51 and found[0][0] == new_id and found[0][1] == pytest.approx(1.0)
    assert _loads(container.store, table) == 1  # caught up from the journal


def test_deleted_chunks_are_never_returned(container: Container) -> None:
    rng = np.random.default_rng(3)
    pid, table = _project(container.store, "kb")
    keep = _add_chunks(container.store, pid, _unit(rng, 20), name="keep.txt")
    query = _unit(rng, 1)[0]
    gone = _add_chunks(container.store, pid, np.repeat(query[None, :], 5, axis=0), name="gone.txt")
    assert {cid for cid, _ in _knn(container.store, table, query, 5)} == set(gone)
    with container.store.read() as db:
        doc_id = db.connection().exec_driver_sql("SELECT id FROM documents WHERE name = 'gone.txt'").scalar_one()
    documents.delete(container.store, doc_id)
    found = _knn(container.store, table, query, 50)
    assert {cid for cid, _ in found} == set(keep)
    with container.store.read() as db:
        assert vector_store.vectors_for(db, table, gone) == {}


def test_a_write_from_another_engine_is_seen(container: Container) -> None:
    """Another process (the CLI ingesting while the server runs) has its own engine and index."""
    rng = np.random.default_rng(4)
    pid, table = _project(container.store, "kb")
    _add_chunks(container.store, pid, _unit(rng, 30))
    query = _unit(rng, 1)[0]
    _knn(container.store, table, query, 5)
    other = Database.from_url(container.settings.database_url)
    try:
        (new_id,) = _add_chunks(other, pid, query[None, :], name="cli.txt")
        with other.write() as db:  # and a delete there too
            db.connection().exec_driver_sql("DELETE FROM chunks WHERE id = 1")
    finally:
        other.dispose()
    found = _knn(container.store, table, query, 100)
    assert found[0][0] == new_id
    assert 1 not in {cid for cid, _ in found} and len(found) == 30


def test_search_stays_in_its_project(container: Container) -> None:
    rng = np.random.default_rng(5)
    vectors = _unit(rng, 40)
    a, table_a = _project(container.store, "a")
    b, table_b = _project(container.store, "b")
    ids_a = _add_chunks(container.store, a, vectors)
    ids_b = _add_chunks(container.store, b, vectors)
    for query in _unit(rng, 3):
        assert {cid for cid, _ in _knn(container.store, table_a, query, 100)} == set(ids_a)
        assert {cid for cid, _ in _knn(container.store, table_b, query, 100)} == set(ids_b)


def test_an_index_behind_the_pruned_journal_reloads(container: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vector_store, "JOURNAL_KEEP", 3)
    rng = np.random.default_rng(6)
    pid, table = _project(container.store, "kb")
    _add_chunks(container.store, pid, _unit(rng, 10))
    query = _unit(rng, 1)[0]
    _knn(container.store, table, query, 5)
    for n in range(3):
        _add_chunks(container.store, pid, _unit(rng, 2), name=f"more{n}.txt")
    with container.store.read() as db:
        rows = db.connection().exec_driver_sql("SELECT count(*) FROM vector_journal").scalar_one()
    assert rows <= 5  # pruned
    assert len(_knn(container.store, table, query, 100)) == 16
    assert _loads(container.store, table) == 2


def test_many_changes_reload_instead_of_catching_up(container: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vector_index, "MIN_RELOAD_CHANGES", 4)
    rng = np.random.default_rng(7)
    pid, table = _project(container.store, "kb")
    _add_chunks(container.store, pid, _unit(rng, 10))
    query = _unit(rng, 1)[0]
    _knn(container.store, table, query, 5)
    _add_chunks(container.store, pid, _unit(rng, 2), name="few.txt")
    _knn(container.store, table, query, 5)
    assert _loads(container.store, table) == 1
    _add_chunks(container.store, pid, _unit(rng, 8), name="many.txt")
    assert len(_knn(container.store, table, query, 100)) == 20
    assert _loads(container.store, table) == 2


def test_a_space_recreated_after_a_delete_gets_a_new_id_and_starts_empty(container: Container) -> None:
    """Ids are never reused (migration 0008): a recreated space has its own table and index, so no
    vector of the dropped one can be served from memory under the new space's name."""
    rng = np.random.default_rng(8)
    pid, table = _project(container.store, "old")
    _add_chunks(container.store, pid, _unit(rng, 10))
    query = _unit(rng, 1)[0]
    assert len(_knn(container.store, table, query, 100)) == 10
    projects.delete(container.store, pid)
    new_pid, new_table = _project(container.store, "new")
    assert new_pid != pid and new_table != table
    assert _knn(container.store, new_table, query, 100) == []
    (only,) = _add_chunks(container.store, new_pid, _unit(rng, 1))
    assert [cid for cid, _ in _knn(container.store, new_table, query, 100)] == [only]


def test_an_older_snapshot_scores_from_its_own_vectors(container: Container) -> None:
    """A search whose snapshot began before a write the index has already caught up with ranks with
    the newer index but reads exact scores from the table, as of its own snapshot."""
    rng = np.random.default_rng(9)
    pid, table = _project(container.store, "kb")
    ids = _add_chunks(container.store, pid, _unit(rng, 5))
    query = _unit(rng, 1)[0]
    with container.store.read() as db:
        before = vector_store.vectors_for(db, table, ids)
    with container.store.read() as old:
        old.connection().exec_driver_sql("SELECT count(*) FROM chunks").one()  # the snapshot starts here
        (new_id,) = _add_chunks(container.store, pid, query[None, :], name="new.txt")
        _knn(container.store, table, query, 5)  # another search catches the index up
        _, exact = vector_index.view_for(old, table, spaces.space_row_id(table))
        assert not exact
        again = vector_store.vectors_for(old, table, [*ids, new_id])
    assert set(again) == set(ids)
    assert all(np.array_equal(again[i], before[i]) for i in ids)


def test_search_refuses_a_writing_transaction(container: Container) -> None:
    _, table = _project(container.store, "kb")
    with pytest.raises(RuntimeError, match="read transaction"), container.store.write() as db:
        vector_store.knn(db, table, np.ones(DIMS, dtype=np.float32), 5)


def test_retrieval_sees_a_document_added_after_the_first_search(container: Container) -> None:
    embedder = cast(Embedder, FakeEmbedder())
    pid = projects.create(container.store, "kb").id
    ingestor = Ingestor(container.store, embedder, container.settings.ingest)
    ingestor.ingest(pid, [Source.from_bytes("a.txt", b"penguins huddle through the antarctic winter")])
    params = RetrievalParams(mode="vector", top_k=5, threshold=0.0)
    question = "volcanic islands rise from the sea"
    assert [c.document_name for c in retrieve(container.store, embedder, pid, question, params).kept] == ["a.txt"]
    ingestor.ingest(pid, [Source.from_bytes("b.txt", question.encode())])
    kept = retrieve(container.store, embedder, pid, question, params).kept
    assert kept[0].document_name == "b.txt" and kept[0].score == pytest.approx(1.0, abs=1e-6)


def test_reading_sqlite_vec_storage_matches_a_scan(container: Container) -> None:
    """The fast load reads sqlite-vec's chunk blobs; after deletions (cleared validity bits) it must
    give exactly what a scan through the virtual table gives."""
    rng = np.random.default_rng(10)
    pid, table = _project(container.store, "kb")
    _add_chunks(container.store, pid, _unit(rng, 30), name="a.txt")
    _add_chunks(container.store, pid, _unit(rng, 30), name="b.txt")
    with container.store.write() as db:
        db.connection().exec_driver_sql("DELETE FROM chunks WHERE id % 3 = 0 OR document_id = 2")
    with container.store.read() as db:
        fast = vector_index._read_chunks(db.connection(), table)
        scan = vector_index._scan(db.connection(), table)
    assert fast is not None
    as_dict = [
        {int(i): v.tobytes() for ids, vectors in batches for i, v in zip(ids, vectors, strict=True)}
        for batches in (fast, scan)
    ]
    assert as_dict[0] == as_dict[1] and len(as_dict[0]) == 20


def test_an_unverified_storage_layout_is_scanned(container: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vector_index, "VERIFIED_VEC0_LAYOUTS", ())
    rng = np.random.default_rng(11)
    pid, table = _project(container.store, "kb")
    vectors = _unit(rng, 12)
    ids = _add_chunks(container.store, pid, vectors)
    with container.store.read() as db:
        assert vector_index._read_chunks(db.connection(), table) is None
    assert [cid for cid, _ in _knn(container.store, table, vectors[3], 1)] == [ids[3]]


def test_a_broad_filter_gives_the_exact_best_of_its_rows_like_the_query_or_not(container: Container) -> None:
    """A filter keeping half the rows: the half nearest the query (found in the unfiltered top rows)
    and the half farthest from it (none there: the exact pass over the filter's rows) both give the
    exact k best of the filter; deleted chunks a stale filter still names are never returned."""
    rng = np.random.default_rng(9)
    pid, table = _project(container.store, "kb")
    vectors = _unit(rng, 400)
    ids = np.asarray(_add_chunks(container.store, pid, vectors))
    query = _unit(rng, 1)[0]
    query_ids = _add_chunks(container.store, pid, np.repeat(query[None, :], 3, axis=0), name="gone.txt")
    with container.store.read() as db:
        doc_id = db.connection().exec_driver_sql("SELECT id FROM documents WHERE name = 'gone.txt'").scalar_one()
    documents.delete(container.store, doc_id)
    exact = vectors.astype(np.float64) @ query.astype(np.float64)
    by_similarity = ids[np.argsort(-exact)]
    scores = dict(zip(ids.tolist(), exact.tolist(), strict=True))
    for half in (by_similarity[:200], by_similarity[200:]):
        only = np.sort(np.concatenate([half, np.asarray(query_ids)]))
        with container.store.read() as db:
            found = rankings.vector_ranking(db, table).search(query, 10, only)
        expected = sorted(half.tolist(), key=lambda cid: (-scores[cid], cid))[:10]
        assert [cid for cid, _ in found] == expected
        assert [score for _, score in found] == [scores[cid] for cid in expected]


def _view(store: Database, table: str) -> vector_index.View:
    with store.read() as db:
        return vector_index.view_for(db, table, spaces.space_row_id(table))[0]


def test_a_vector_searched_again_on_the_same_vectors_is_scored_once(container: Container) -> None:
    # A chat turn looks its message up alone (k=1), then, when it stands alone, searches that same
    # vector (k=top candidates): the second search reuses the first one's scores, and stays exact.
    rng = np.random.default_rng(9)
    pid, table = _project(container.store, "kb")
    vectors = _unit(rng, 300)
    ids = np.asarray(_add_chunks(container.store, pid, vectors))
    query, other, third = _unit(rng, 3)
    view = _view(container.store, table)
    nearest = view.search(query, 1)
    scored = view._every_score(query)
    assert view._every_score(query.astype(np.float64)) is scored  # the same vector, however it is typed
    assert not scored.flags.writeable  # shared: nobody may change it
    exact = vectors.astype(np.float64) @ query.astype(np.float64)
    assert [cid for cid, _ in view.search(query, 10)] == ids[np.argsort(-exact)[:10]].tolist()
    assert view.search(query, 10)[0] == nearest[0]
    view._every_score(other), view._every_score(third)  # the oldest is forgotten: memory stays bounded
    assert view._every_score(query) is not scored and np.array_equal(view._every_score(query), scored)
    # New vectors are a new view, with scores of its own.
    (new_id,) = _add_chunks(container.store, pid, query[None, :], name="new.txt")
    assert _view(container.store, table) is not view
    assert _knn(container.store, table, query, 1)[0][0] == new_id
