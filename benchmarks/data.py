"""Benchmark inputs: SciFact texts, embeddings of a SciFact sample (the shape of the synthetic
clusters), query vectors, and knowledge bases of N chunks written through the real tables.

Embedding 500k chunks with the local model would take days here, so the large knowledge bases hold
SciFact chunk texts with synthetic vectors: each is a mix of two real SciFact embeddings plus noise,
so the vectors form clusters shaped like real ones. Everything expensive is cached in
``cfg.cache_dir`` (default ``~/.cache/ragchat/bench``) under a key of everything it depends on.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.db import migrate
from app.db.database import Database
from app.llm.base import SpaceId
from app.rag.index import spaces, vector_store
from benchmarks.common import Config

log = logging.getLogger("benchmarks")

# ../shared beside the checkout, as on the developers' machines and in CI.
SCIFACT = Path(os.environ.get("BENCH_SCIFACT", Path(__file__).resolve().parents[2] / "shared" / "datasets" / "scifact"))
DIMS = 384
LOCAL_SPACE = SpaceId("local", "all-MiniLM-L6-v2-int8", DIMS)
CHUNK_CHARS = 900  # about the 200 tokens ragchat's chunker aims for
CHUNKS_PER_DOCUMENT = 20
BUILDER_VERSION = "3"
NOISE = 0.035  # per dimension: a vector's cosine to its cluster's centre is about 0.8


def texts() -> list[str]:
    """SciFact abstracts (title + text) cut into chunk-sized pieces at word boundaries."""
    pieces: list[str] = []
    for document in _corpus():
        body = f"{document['title']}\n\n{document['text']}" if document.get("title") else document["text"]
        while body:
            cut = len(body) if len(body) <= CHUNK_CHARS else body.rfind(" ", 0, CHUNK_CHARS) + 1 or CHUNK_CHARS
            pieces.append(body[:cut].strip())
            body = body[cut:]
    return [p for p in pieces if p] or ["synthetic text for an empty corpus"]


def documents(limit: int) -> list[tuple[str, str]]:
    """The first ``limit`` SciFact abstracts as ``(file name, text)``."""
    out = []
    for document in _corpus()[:limit]:
        body = f"{document['title']}\n\n{document['text']}" if document.get("title") else document["text"]
        out.append((f"{document['_id']}.txt", body))
    return out


def questions(limit: int) -> list[str]:
    path = SCIFACT / "queries.jsonl"
    if not path.is_file():
        return [f"question number {i} about cells and proteins" for i in range(limit)]
    with path.open() as handle:
        return [json.loads(line)["text"] for line, _ in zip(handle, range(limit), strict=False)]


def _corpus() -> list[dict[str, str]]:
    path = SCIFACT / "corpus.jsonl"
    if not path.is_file():
        # Say so: a git worktree outside /work resolves the default to a folder that does not exist,
        # and these repeated words make the answer guard and hygiene behave unlike on real text.
        log.warning("%s not found (BENCH_SCIFACT): placeholder texts instead", path)
        return [{"_id": str(i), "title": f"Document {i}", "text": "cells proteins genes " * 60} for i in range(50)]
    with path.open() as handle:
        return [json.loads(line) for line in handle]


# -- vectors ----------------------------------------------------------------------------------
def embedded(cfg: Config, name: str, items: list[str]) -> np.ndarray:
    """``items`` embedded by the local model, cached; random unit vectors in tiny mode."""
    if cfg.tiny:
        return _unit(np.random.default_rng(len(items)).standard_normal((len(items), DIMS)))
    digest = hashlib.sha256("\x00".join(items).encode()).hexdigest()[:16]
    path = cfg.cache_dir / f"{name}-{len(items)}-{digest}.npy"
    if path.is_file():
        return np.load(path)
    from app.llm.embedders.local import LocalEmbedder

    log.info("embedding %d %s with the local model (cached afterwards)", len(items), name)
    vectors = LocalEmbedder().embed(items)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


def centres(cfg: Config) -> np.ndarray:
    pool = texts()
    count = min(cfg.pick(128, 64, 16), len(pool))
    step = max(1, len(pool) // count)
    return embedded(cfg, "scifact-chunks", pool[::step][:count])


def query_vectors(cfg: Config, count: int) -> tuple[list[str], np.ndarray]:
    asked = questions(count)
    return asked, embedded(cfg, "scifact-queries", asked)


def synthetic(centre_vectors: np.ndarray, n: int, seed: int = 7) -> np.ndarray:
    """``n`` unit vectors clustered like ``centre_vectors``: a mix of two centres plus noise."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, DIMS), dtype=np.float32)
    for start in range(0, n, 65536):
        m = min(65536, n - start)
        a = rng.integers(0, len(centre_vectors), m)
        b = rng.integers(0, len(centre_vectors), m)
        w = rng.uniform(0.6, 1.0, (m, 1)).astype(np.float32)
        mixed = w * centre_vectors[a] + (1 - w) * centre_vectors[b]
        out[start : start + m] = _unit(mixed + NOISE * rng.standard_normal((m, DIMS)).astype(np.float32))
    return out


def _unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


# -- knowledge bases --------------------------------------------------------------------------
@dataclass(frozen=True)
class KnowledgeBase:
    path: Path
    project_id: int
    table: str
    vectors: np.ndarray  # exactly what the vec0 table holds, row i = chunk id ids[i]
    ids: np.ndarray

    @property
    def url(self) -> str:
        return f"sqlite:///{self.path}"

    def copy_to(self, folder: Path) -> KnowledgeBase:
        """A private copy to write into (chat turns store messages)."""
        target = folder / self.path.name
        shutil.copyfile(self.path, target)
        return KnowledgeBase(target, self.project_id, self.table, self.vectors, self.ids)


def knowledge_base(cfg: Config, n: int) -> KnowledgeBase:
    """A migrated database with one project of ``n`` chunks (SciFact texts, synthetic vectors)."""
    centre_vectors = centres(cfg)
    vectors = synthetic(centre_vectors, n)
    key = hashlib.sha256(centre_vectors.tobytes() + f"{n}:{BUILDER_VERSION}:{migrate.head_revision()}".encode())
    family = f"kb-{n}-c{len(centre_vectors)}"  # one per size and mode: quick and full runs keep their own
    path = cfg.cache_dir / f"{family}-{key.hexdigest()[:12]}.db"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        for stale in path.parent.glob(f"{family}-*.db"):
            stale.unlink()
        log.info("building a knowledge base of %d chunks in %s (cached afterwards)", n, path)
        _build(path, vectors)
    store = Database.from_url(f"sqlite:///{path}")
    try:
        with store.read() as db:
            pid, space_id = db.connection().exec_driver_sql("SELECT project_id, id FROM embedding_spaces").one()
    finally:
        store.dispose()
    return KnowledgeBase(path, int(pid), f"vec_space_{space_id}", vectors, np.arange(1, n + 1, dtype=np.int64))


def _build(path: Path, vectors: np.ndarray) -> None:
    partial = path.with_suffix(".partial")
    for leftover in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm")):
        leftover.unlink(missing_ok=True)
    url = f"sqlite:///{partial}"
    migrate.upgrade(url)
    store = Database.from_url(url)
    try:
        with store.write() as db:
            conn = db.connection()
            conn.exec_driver_sql(
                "INSERT INTO projects(id, name, description, created_at, updated_at) VALUES (1, 'bench', '', ?, ?)",
                (_NOW, _NOW),
            )
            table = spaces.ensure_space(db, 1, LOCAL_SPACE).table
        pool = texts()
        for start, stop in _batches(len(vectors), 20_000):
            with store.write() as db:
                _write_chunks(db.connection(), pool, start, stop)
                vector_store.put(db, table, list(range(start + 1, stop + 1)), vectors[start:stop])
        with store.write() as db:
            db.connection().exec_driver_sql("INSERT INTO chunks_fts(chunks_fts) VALUES ('optimize')")
    finally:
        store.dispose()
    checkpoint = Database.from_url(url)
    with checkpoint.engine.connect() as conn:
        conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    checkpoint.dispose()
    partial.rename(path)


_NOW = "2026-01-01 00:00:00.000000"


def _batches(n: int, size: int) -> Iterator[tuple[int, int]]:
    for start in range(0, n, size):
        yield start, min(n, start + size)


def _write_chunks(conn: object, pool: list[str], start: int, stop: int) -> None:
    """Chunk ids are start+1..stop; documents hold CHUNKS_PER_DOCUMENT chunks each."""
    documents = []
    chunks = []
    for cid in range(start + 1, stop + 1):
        doc, ordinal = divmod(cid - 1, CHUNKS_PER_DOCUMENT)
        text = pool[(cid - 1) % len(pool)]
        if ordinal == 0:
            documents.append((doc + 1, f"doc{doc + 1:06d}.txt", CHUNKS_PER_DOCUMENT))
        digest = hashlib.sha256(text.encode()).hexdigest()
        chunks.append((cid, doc + 1, ordinal, text, digest, len(text) // 4, 0, len(text), 1, text.count("\n") + 1))
    execute = conn.exec_driver_sql  # type: ignore[attr-defined]
    execute(
        "INSERT INTO documents(id, project_id, name, kind, size_bytes, content_hash, status, chunk_count, "
        "ingested_at, created_at, updated_at) VALUES (?, 1, ?, 'txt', 0, '', 'ready', ?, "
        f"'{_NOW}', '{_NOW}', '{_NOW}')",
        documents,
    )
    execute(
        "INSERT INTO chunks(id, document_id, project_id, ordinal, text, content_hash, token_count, char_start, "
        "char_end, line_start, line_end, heading_path) VALUES (?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, '')",
        chunks,
    )
