"""The in-memory keyword index over a real migrated SQLite file: FTS5's tokens and BM25 where they
should agree, per-project statistics where FTS5's are global, and coherence with every committed
insert, delete, replacement and re-index, also from another process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from app.container import Container
from app.db.database import Database
from app.rag.index import keyword_fts, keyword_index
from app.rag.ingest.pipeline import Ingestor, Source
from app.rag.ingest.reindex import reindex
from app.rag.search.retrieval import RetrievalParams, retrieve
from app.services import documents, projects
from tests.fakes import FakeEmbedder

pytestmark = pytest.mark.sqlite_only(
    reason="the in-process keyword index over FTS5 and SQLite's keyword journal (PostgreSQL ranks in SQL: tests/rag/index/test_pg_rankings.py)"
)

ROOT = Path(__file__).resolve().parents[3]

CORPUS = {
    "penguins.txt": "Emperor penguins huddle together through the Antarctic winter. Penguins swim fast.",
    "owls.txt": "Owls hunt at night; an owl's hearing locates prey under snow. Owls rarely swim.",
    "whales.txt": "Whales swim thousands of kilometres. Humpback whales sing; the songs change every winter.",
    "cafe.txt": "Le café crème — naïve Zoë's résumé: ÉCOLE, Straße and façade\u00a0words; coöperate.",
    "code.txt": "Set max_tokens=256 in config.yaml, then run `ragchat serve --port 8000` (see README.md).",
    "mixed.txt": "Swimming swimmers swam; the swimmer's swimming pools. Winter, WINTER, wintering.",
}
QUESTIONS = [
    "penguins in winter",
    "Which animals swim?",
    "owl hearing under the snow",
    "cafe creme resume ecole",
    "max tokens config",
    "swimming swimmers winter whales songs",
    "the",
    "nothing matches this xylophone",
]


def _ingest(container: Container, project: str, files: dict[str, str]) -> int:
    project_id = projects.get_or_create(container.store, project)[0].id
    summary = Ingestor(container.store, FakeEmbedder(), container.settings.ingest).ingest(
        project_id, [Source.from_bytes(name, text.encode()) for name, text in files.items()]
    )
    assert summary.count("failed") == 0, [f.error for f in summary.files]
    return project_id


def _index_search(store: Database, pid: int, question: str, k: int = 50) -> list[tuple[int, float]]:
    with store.read() as db:
        return keyword_index.search(db, pid, question, k)


def _fts5_search(store: Database, pid: int, question: str, k: int = 50) -> list[tuple[int, float]]:
    with store.read() as db:
        return keyword_fts.search(db, pid, question, k)


def _fresh(container: Container, pid: int, question: str) -> list[tuple[int, float]]:
    """What an index built from scratch (another engine, so another registry) finds."""
    other = Database.from_url(container.settings.database_url)
    try:
        return _index_search(other, pid, question)
    finally:
        other.dispose()


def _loads(store: Database, pid: int) -> int:
    with store.read() as db:
        return keyword_index._indexes(db)[pid].loads


def _same(found: list[tuple[int, float]], expected: list[tuple[int, float]]) -> None:
    """The same chunks with the same scores, best first; FTS5 orders equal scores arbitrarily, the
    index by chunk id."""
    expected = sorted(expected, key=lambda hit: (round(hit[1], 9), hit[0]))
    assert [cid for cid, _ in found] == [cid for cid, _ in expected]
    assert [score for _, score in found] == pytest.approx([score for _, score in expected], rel=1e-12)


def test_tokens_are_fts5s(container: Container) -> None:
    """Every chunk's terms, counted, equal what FTS5 indexed for it (fts5vocab), non-ASCII included."""
    pid = _ingest(container, "kb", CORPUS)
    with container.store.read() as db:
        conn = db.connection()
        conn.exec_driver_sql("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, chunks_fts, 'instance')")
        rows = conn.exec_driver_sql("SELECT id, text FROM chunks WHERE project_id = ?", (pid,)).all()
        tokens = keyword_index.tokenizer()
        for cid, text in rows:
            fts5 = sorted(t for (t,) in conn.exec_driver_sql("SELECT term FROM temp.v WHERE doc = ?", (cid,)))
            terms = tokens.terms(text)
            names = {i: t for t, i in tokens.term_ids.items()}
            assert sorted(names[t] for t in terms) == fts5, text
        # The index's own path: many texts at once, cut apart again.
        texts = [text for _, text in rows]
        docs, terms = tokens.encode(texts)
        assert [terms[docs == i].tolist() for i in range(len(texts))] == [tokens.terms(t) for t in texts]


def test_ranking_and_scores_are_fts5s_on_one_project(container: Container) -> None:
    pid = _ingest(container, "kb", CORPUS)
    for question in QUESTIONS:
        _same(_index_search(container.store, pid, question), _fts5_search(container.store, pid, question))
    assert _index_search(container.store, pid, "nothing matches this xylophone") == []
    assert _index_search(container.store, pid, "?! ...") == []


def test_statistics_are_per_project(container: Container) -> None:
    """A document in project B changes neither project A's scores nor its order; FTS5's global
    statistics did change them."""
    a = _ingest(container, "a", CORPUS)
    before = {q: _index_search(container.store, a, q) for q in QUESTIONS}
    fts5_before = _fts5_search(container.store, a, "penguins in winter")
    _ingest(container, "b", {f"winter{i}.txt": f"winter penguins winter {i}" for i in range(20)})
    assert {q: _index_search(container.store, a, q) for q in QUESTIONS} == before
    assert _fts5_search(container.store, a, "penguins in winter") != fts5_before  # what FTS5 did


def test_uploads_are_seen_by_the_next_search_without_a_reload(container: Container) -> None:
    pid = _ingest(container, "kb", CORPUS)
    assert _index_search(container.store, pid, "narwhal") == []
    _ingest(container, "kb", {"narwhal.txt": "The narwhal's tusk is a tooth. Narwhals swim in winter."})
    found = _index_search(container.store, pid, "narwhal winter")
    assert found and found == _fresh(container, pid, "narwhal winter")
    _same(found, _fts5_search(container.store, pid, "narwhal winter"))
    assert _loads(container.store, pid) == 1  # caught up from the journal


def test_deleted_and_replaced_chunks_are_never_returned(container: Container) -> None:
    pid = _ingest(container, "kb", CORPUS)
    assert _index_search(container.store, pid, "penguins")
    with container.store.read() as db:
        doc = db.connection().exec_driver_sql("SELECT id FROM documents WHERE name = 'penguins.txt'").scalar_one()
    documents.delete(container.store, doc)
    assert _index_search(container.store, pid, "penguins") == []
    # Re-uploading a document under its name replaces its chunks: the old text is gone.
    _ingest(container, "kb", {"owls.txt": "Barn owls nest in old churches."})
    assert _index_search(container.store, pid, "hearing") == []
    for question in (*QUESTIONS, "barn owls churches"):
        found = _index_search(container.store, pid, question)
        assert found == _fresh(container, pid, question)  # the statistics too: document count, lengths
        _same(found, _fts5_search(container.store, pid, question))
    assert _loads(container.store, pid) == 1


def test_reindex_keeps_the_keyword_ranking(container: Container) -> None:
    pid = _ingest(container, "kb", CORPUS)
    before = {q: _index_search(container.store, pid, q) for q in QUESTIONS}
    reindex(container.store, pid, FakeEmbedder(dimensions=32))
    assert {q: _index_search(container.store, pid, q) for q in QUESTIONS} == before
    result = retrieve(
        container.store, FakeEmbedder(dimensions=32), pid, "penguins winter", RetrievalParams(mode="hybrid")
    )
    assert result.candidates and {c.keyword_rank for c in result.candidates} - {None}


def test_a_write_from_another_process_is_seen(container: Container) -> None:
    """The CLI ingesting while the server runs: another process, its own engine and index."""
    pid = _ingest(container, "kb", CORPUS)
    assert _index_search(container.store, pid, "walrus") == []
    script = textwrap.dedent(
        f"""
        from app.db.database import Database
        from app.rag.ingest.pipeline import Ingestor, Source
        from app.settings import Settings
        from tests.fakes import FakeEmbedder
        settings = Settings(database_url={container.settings.database_url!r})
        store = Database.from_url(settings.database_url)
        source = Source.from_bytes("walrus.txt", b"Walruses haul out on winter ice; a walrus swims slowly.")
        summary = Ingestor(store, FakeEmbedder(), settings.ingest).ingest({pid}, [source])
        assert summary.count("failed") == 0
        with store.write() as db:
            db.connection().exec_driver_sql(
                "DELETE FROM documents WHERE project_id = ? AND name = 'whales.txt'", ({pid},))
        store.dispose()
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, "-c", script], check=True, cwd=ROOT, env=env, timeout=120)
    found = _index_search(container.store, pid, "walrus whales winter")
    assert found and found == _fresh(container, pid, "walrus whales winter")
    with container.store.read() as db:
        names = dict(db.connection().exec_driver_sql("SELECT c.id, d.name FROM chunks c JOIN documents d "
                                                     "ON d.id = c.document_id").all())  # fmt: skip
    assert "walrus.txt" in {names[cid] for cid, _ in found}
    assert "whales.txt" not in {names.get(cid) for cid, _ in found}
    assert _loads(container.store, pid) == 1


def test_an_index_behind_the_pruned_journal_reloads(container: Container) -> None:
    pid = _ingest(container, "kb", CORPUS)
    _index_search(container.store, pid, "penguins")
    _ingest(container, "kb", {"seal.txt": "Seals swim under the winter ice."})
    with container.store.write() as db:  # what the prune trigger does to an index this far behind
        db.connection().exec_driver_sql(
            "DELETE FROM keyword_journal WHERE project_id = ? AND seq < (SELECT max(seq) FROM keyword_journal)",
            (pid,),
        )
    found = _index_search(container.store, pid, "seals winter")
    assert _loads(container.store, pid) == 2
    assert found == _fresh(container, pid, "seals winter")


def test_the_journal_prunes_itself(container: Container) -> None:
    pid = projects.create(container.store, "kb").id
    with container.store.write() as db:
        conn = db.connection()
        conn.exec_driver_sql(
            "INSERT INTO keyword_journal(project_id, chunk_id) VALUES (?, ?)", [(pid, i) for i in range(1, 102_001)]
        )
        rows, oldest = conn.exec_driver_sql(
            "SELECT count(*), min(seq) FROM keyword_journal WHERE project_id = ?", (pid,)
        ).one()
    assert 100_000 <= rows <= 101_001 and oldest > 1000


def test_a_deleted_project_leaves_no_journal_and_no_index(container: Container) -> None:
    pid = _ingest(container, "kb", CORPUS)
    assert _index_search(container.store, pid, "penguins")
    projects.delete(container.store, pid)
    with container.store.read() as db:
        assert db.connection().exec_driver_sql("SELECT count(*) FROM keyword_journal").scalar_one() == 0
    assert _index_search(container.store, pid, "penguins") == []
    with container.store.read() as db:
        assert pid not in keyword_index._indexes(db)


def test_many_changes_merge_and_compact_to_what_a_fresh_index_finds(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Random uploads, replacements and deletes, searched after each: the segments and dead rows the
    catch-ups leave rank exactly like an index loaded from scratch, and like FTS5."""
    monkeypatch.setattr(keyword_index, "MERGE_FRACTION", 0.05)
    rng = np.random.default_rng(11)
    words = "penguin owl whale seal winter ice swim song hunt night snow tusk krill colony dive".split()
    pid = _ingest(container, "kb", CORPUS)
    names: list[str] = []
    for step in range(30):
        action = rng.integers(3) if names else 0
        if action == 0:
            name = f"doc{step}.txt"
            names.append(name)
        else:
            name = names[int(rng.integers(len(names)))]
        if action == 2:
            with container.store.read() as db:
                doc = db.connection().exec_driver_sql("SELECT id FROM documents WHERE name = ?", (name,)).scalar_one()
            documents.delete(container.store, doc)
            names.remove(name)
        else:
            text = " ".join(rng.choice(words, size=int(rng.integers(5, 60))))
            _ingest(container, "kb", {name: text})
        question = " ".join(rng.choice(words, size=3))
        found = _index_search(container.store, pid, question)
        _same(found, _fts5_search(container.store, pid, question))
    for question in QUESTIONS:
        assert _index_search(container.store, pid, question) == _fresh(container, pid, question)
    with container.store.read() as db:
        view = keyword_index.view_for(db, pid)
    assert len(view.segments) <= 2
    assert _loads(container.store, pid) == 1


def test_hybrid_ranks_the_same_in_two_threads_or_one(container: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.rag.search import retrieval
    from app.rag.search.stages import Stage

    pid = _ingest(container, "kb", CORPUS)
    params = RetrievalParams(mode="hybrid", top_k=10, threshold=0.0)  # type: ignore[arg-type]

    def ranked(parallel: bool) -> list[tuple[int, int | None, int | None, float]]:
        monkeypatch.setattr(retrieval, "PARALLEL_RANKINGS", parallel)
        found = retrieve(container.store, FakeEmbedder(), pid, "penguins swim in winter", params)
        assert set(found.timings_ms) >= {Stage.RETRIEVAL_VECTOR, Stage.RETRIEVAL_KEYWORD}
        return [(c.chunk_id, c.vector_rank, c.keyword_rank, c.fused_score) for c in found.candidates]

    both = ranked(True)
    assert both == ranked(False)
    assert any(v is not None for _, v, _, _ in both) and any(k is not None for _, _, k, _ in both)
