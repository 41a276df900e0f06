"""Ingestion into a real migrated database (SQLite or PostgreSQL): add, no-op, partial update,
deletion, failures."""

from __future__ import annotations

from sqlalchemy import text

from app.container import Container
from app.rag.ingest.pipeline import Ingestor, Source
from app.services import documents, projects
from tests.fakes import FakeEmbedder

PARAGRAPHS = [f"Paragraph {i} talks about topic number {i} in some depth. " * 12 for i in range(12)]


def _count(container: Container, sql: str) -> int:
    with container.store.read() as db:
        return int(db.connection().exec_driver_sql(sql).scalar_one())


def _keyword_hits(container: Container, *words: str) -> int:
    """Chunks whose full-text index entry holds every word: FTS5 on SQLite, the tsvector column on
    PostgreSQL (docs/STORAGE.md, "PostgreSQL")."""
    with container.store.read() as db:
        if db.get_bind().dialect.name == "postgresql":
            query = "SELECT count(*) FROM chunks WHERE text_search @@ to_tsquery('ragchat_english', :q)"
            return int(db.execute(text(query), {"q": " & ".join(words)}).scalar_one())
        query = "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH :q"
        return int(db.execute(text(query), {"q": " AND ".join(words)}).scalar_one())


def _setup(container: Container) -> tuple[Ingestor, FakeEmbedder, int]:
    embedder = FakeEmbedder()
    pid = projects.create(container.store, "kb").id
    return Ingestor(container.store, embedder, container.settings.ingest), embedder, pid


def test_add_then_unchanged_is_a_no_op(container: Container) -> None:
    ingestor, embedder, pid = _setup(container)
    doc = "\n\n".join(PARAGRAPHS).encode()
    first = ingestor.ingest(pid, [Source.from_bytes("doc.md", doc), Source.from_bytes("b.txt", b"short note")])
    assert [f.status for f in first.files] == ["added", "added"]
    chunks = _count(container, "SELECT count(*) FROM chunks")
    assert chunks > 2
    assert _count(container, "SELECT count(*) FROM vec_space_1") == chunks
    calls = len(embedder.calls)

    again = ingestor.ingest(pid, [Source.from_bytes("doc.md", doc), Source.from_bytes("b.txt", b"short note")])
    assert [f.status for f in again.files] == ["unchanged", "unchanged"]
    assert len(embedder.calls) == calls  # nothing re-embedded
    assert _count(container, "SELECT count(*) FROM chunks") == chunks


def test_changed_file_re_embeds_only_changed_chunks(container: Container) -> None:
    ingestor, _embedder, pid = _setup(container)
    ingestor.ingest(pid, [Source.from_bytes("doc.md", "\n\n".join(PARAGRAPHS).encode())])
    before = _count(container, "SELECT count(*) FROM chunks")

    edited = [*PARAGRAPHS[:6], "A completely new paragraph about penguins. " * 10, *PARAGRAPHS[7:]]
    result = ingestor.ingest(pid, [Source.from_bytes("doc.md", "\n\n".join(edited).encode())]).files[0]

    assert result.status == "updated"
    assert 0 < result.embedded < before
    assert result.removed >= 1
    after = _count(container, "SELECT count(*) FROM chunks")
    assert _count(container, "SELECT count(*) FROM vec_space_1") == after == result.chunks
    with container.store.read() as db:
        texts = [r[0] for r in db.connection().exec_driver_sql("SELECT text FROM chunks ORDER BY ordinal")]
    assert "penguins" in " ".join(texts) and "topic number 6 " not in " ".join(texts)
    assert _keyword_hits(container, "penguins") >= 1


def test_vanished_chunks_take_their_vectors_and_index_entries(container: Container) -> None:
    ingestor, _, pid = _setup(container)
    ingestor.ingest(pid, [Source.from_bytes("doc.md", "\n\n".join(PARAGRAPHS).encode())])
    ingestor.ingest(pid, [Source.from_bytes("doc.md", PARAGRAPHS[0].encode())])
    chunks = _count(container, "SELECT count(*) FROM chunks")
    assert _count(container, "SELECT count(*) FROM vec_space_1") == chunks
    assert _keyword_hits(container, "topic", "number", "5") == 0
    assert _keyword_hits(container, "topic", "number", "0") >= 1


def test_deleting_a_document_removes_chunks_and_vectors(container: Container) -> None:
    ingestor, _, pid = _setup(container)
    summary = ingestor.ingest(pid, [Source.from_bytes("a.txt", b"alpha text"), Source.from_bytes("b.txt", b"beta")])
    documents.delete(container.store, summary.files[0].document_id or 0)
    assert _count(container, "SELECT count(*) FROM chunks") == 1
    assert _count(container, "SELECT count(*) FROM vec_space_1") == 1


def test_a_bad_file_is_reported_and_the_batch_goes_on(container: Container) -> None:
    ingestor, _, pid = _setup(container)
    summary = ingestor.ingest(
        pid,
        [
            Source.from_bytes("good.txt", b"good text"),
            Source.from_bytes("binary.txt", b"\x00\x01\x02\xff" * 50),
            Source.from_bytes("empty.md", b"   \n\n  "),
            Source.from_bytes("scripts.html", b"<html><body><script>go()</script></body></html>"),
            Source.from_bytes("also-good.md", b"# Title\n\nmore text"),
        ],
    )
    # Binary bytes and an empty file are skipped with their reasons, nothing stored (a retry could
    # change neither); a page with no visible text fails.
    assert [f.status for f in summary.files] == ["added", "skipped", "skipped", "failed", "added"]
    assert all(f.error for f in summary.files if f.status in ("failed", "skipped"))
    assert summary.files[1].skip_reason == "binary" and summary.files[2].skip_reason == "empty"
    with container.store.read() as db:
        rows = db.connection().exec_driver_sql("SELECT name, status, error, chunk_count FROM documents").all()
    failed = {r[0]: r for r in rows if r[1] == "failed"}
    assert set(failed) == {"scripts.html"} and all(r[3] == 0 for r in failed.values())
    assert "empty.md" not in {r[0] for r in rows}
    assert "binary.txt" not in {r[0] for r in rows}


def test_an_update_that_cannot_be_read_keeps_the_last_good_version(container: Container) -> None:
    ingestor, _, pid = _setup(container)
    ingestor.ingest(pid, [Source.from_bytes("a.txt", b"good version")])
    result = ingestor.ingest(pid, [Source.from_bytes("a.txt", b"  \n\n ")]).files[0]
    assert result.status == "skipped" and result.skip_reason == "empty"
    skipped = ingestor.ingest(pid, [Source.from_bytes("a.txt", b"\x00\x00 broken")]).files[0]
    assert skipped.status == "skipped" and skipped.skip_reason == "binary"
    with container.store.read() as db:
        status, text = (
            db.connection()
            .exec_driver_sql("SELECT d.status, c.text FROM documents d JOIN chunks c ON c.document_id = d.id")
            .one()
        )
    assert (status, text) == ("ready", "good version")
