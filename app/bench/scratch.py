"""A BEIR corpus ingested once, reused by every query-time variant: ``ragchat bench retrieval``
keeps the scratch database in the bench cache, keyed by what decides its contents (the corpus,
the chunking settings and the embedding space). A full SciFact ingestion costs ~20-30 CPU-minutes
here; ranking variants (fusion weights, pooling, feedback, reranking) only read the chunks.

An interrupted ingestion resumes: the database is built under a ``.partial`` name and renamed
when complete, and ingestion skips documents already stored with the same content.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

from app.bench.beir import BeirDataset, document_text
from app.container import Container
from app.db import migrate
from app.llm.base import Embedder
from app.rag.ingest.pipeline import FileResult, Ingestor, Source
from app.services import projects
from app.settings import Settings

PROJECT = "bench"


def default_cache_dir() -> Path:
    return Path(os.environ.get("BENCH_CACHE", "~/.cache/ragchat/bench")).expanduser()


def cache_key(dataset: BeirDataset, embedder: Embedder, settings: Settings) -> str:
    digest = hashlib.sha256()
    ingest = settings.ingest
    digest.update(f"{embedder.space.label}|{embedder.tokenizer.name}|{embedder.max_tokens}|".encode())
    # int8 and fp32 share a vector space (one SpaceId) but not their vectors: a cached fp32 ingest
    # must not stand in for an int8 one when the two are compared.
    precision = getattr(embedder, "precision", "fp32")
    if precision != "fp32":  # fp32 keys stay as they were, so existing caches are still found
        digest.update(f"{precision}|".encode())
    digest.update(f"{ingest.chunk_tokens}|{ingest.overlap_tokens}|{ingest.max_chunk_chars}|".encode())
    for doc_id, body in sorted(dataset.corpus.items()):
        digest.update(doc_id.encode() + b"\0" + document_text(*body).encode() + b"\0")
    return digest.hexdigest()[:16]


def ingested(
    dataset: BeirDataset,
    embedder: Embedder,
    settings: Settings,
    *,
    cache_dir: Path | None = None,
    progress: Callable[[FileResult], None] | None = None,
) -> tuple[Path, bool]:
    """The path of a database holding ``dataset``'s corpus in project ``bench``, and whether it
    was reused from the cache (True) or ingested now (False). Migrated to head either way."""
    folder = cache_dir or default_cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    key = cache_key(dataset, embedder, settings)
    final = folder / f"beir-{len(dataset.corpus)}-c{settings.ingest.chunk_tokens}-{key}.db"
    if final.exists():
        migrate.upgrade(_url(final))  # a cached database from before a newer migration
        return final, True
    partial = final.with_suffix(".partial.db")
    url = _url(partial)
    migrate.upgrade(url)
    container = Container.build(settings.model_copy(update={"database_url": url}))
    try:
        project, _ = projects.get_or_create(container.store, PROJECT)
        sources = [
            Source.from_bytes(f"{doc_id}.txt", document_text(*body).encode()) for doc_id, body in dataset.corpus.items()
        ]
        summary = Ingestor(container.store, embedder, settings.ingest).ingest(project.id, sources, progress)
        failed = [f for f in summary.files if f.error]
        if failed:
            raise RuntimeError(f"{len(failed)} documents failed to ingest, e.g. {failed[0].name}: {failed[0].error}")
    finally:
        container.close()
    with closing(sqlite3.connect(partial)) as conn:  # fold the WAL in before the rename
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    os.replace(partial, final)
    return final, False


def _url(path: Path) -> str:
    return f"sqlite:///{path}"
