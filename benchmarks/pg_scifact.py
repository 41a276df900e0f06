"""SciFact train nDCG@10 on PostgreSQL beside SQLite, in one run (issue 18).

The knowledge base is the bench cache's SciFact database (``ragchat bench retrieval`` builds it:
5,183 abstracts, 200-token chunks, the local embedder), copied first so the cache is not touched
(opening it would migrate the shared file). Its rows (project, documents, chunks, embedding space)
and every stored vector are copied into a fresh PostgreSQL database (pgserver, in a temporary
folder): both backends rank exactly the same chunks and vectors. Each query of the train split
(809) is then searched in each mode on both, back to back, as ``ragchat bench retrieval`` does
(same parameters, documents max-pooled from chunks), and nDCG@10 / recall@100 are computed with
ir-measures; search time is reported as the PostgreSQL / SQLite ratio of the same queries.

Usage: python -m benchmarks.pg_scifact [--queries N] [--cache PATH]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from sqlalchemy import select, text

from app.bench import beir, scratch
from app.bench.retrieval import _measure, _search
from app.container import Container
from app.db import migrate
from app.db.models import Chunk, Document, EmbeddingSpace, Project
from app.rag import spaces, vector_store
from app.rag.retrieval import embed_query
from app.rag.retrieval_mode import RetrievalMode
from app.services import projects
from app.settings import Settings
from benchmarks.data import SCIFACT

MODES = (RetrievalMode.VECTOR, RetrievalMode.KEYWORD, RetrievalMode.HYBRID)
BATCH = 2000


def _copy(source: Container, target: Container) -> int:
    """Every project, document, chunk, embedding space and vector of ``source`` into ``target``, ids
    kept. Returns the chunks copied."""
    with source.store.read() as src:
        project_rows = src.scalars(select(Project)).all()
        document_rows = src.scalars(select(Document)).all()
        space_rows = src.scalars(select(EmbeddingSpace)).all()
        chunk_ids = list(src.scalars(select(Chunk.id).order_by(Chunk.id)))
    columns = {model: [c.key for c in model.__table__.columns] for model in (Project, Document, Chunk)}

    def plain(row: object, model: type) -> dict[str, object]:
        return {key: getattr(row, key) for key in columns[model]}

    with target.store.write() as dst:
        dst.execute(Project.__table__.insert(), [plain(r, Project) for r in project_rows])
        dst.execute(Document.__table__.insert(), [plain(r, Document) for r in document_rows])
    for start in range(0, len(chunk_ids), BATCH):
        batch = chunk_ids[start : start + BATCH]
        with source.store.read() as src:
            rows = [plain(r, Chunk) for r in src.scalars(select(Chunk).where(Chunk.id.in_(batch)))]
        with target.store.write() as dst:
            dst.execute(Chunk.__table__.insert(), rows)
    for space in space_rows:
        with target.store.write() as dst:
            row = spaces.create_space(dst, space.project_id, spaces.space_identity(space), status=space.status)
            table = row.table
        for start in range(0, len(chunk_ids), BATCH):
            batch = chunk_ids[start : start + BATCH]
            with source.store.read() as src:
                found = vector_store.vectors_for(src, space.table, batch)
            with target.store.write() as dst:
                ids = sorted(found)
                if ids:
                    vector_store.put(dst, table, ids, np.stack([found[i] for i in ids]))
    with target.store.write() as dst:
        for name in ("projects", "documents", "chunks"):
            dst.execute(text(f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), (SELECT max(id) FROM {name}))"))
    return len(chunk_ids)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=None, help="the first N train queries (default: all)")
    parser.add_argument("--cache", type=Path, default=None, help="the SciFact bench database (default: found)")
    args = parser.parse_args()
    cache = args.cache or next(Path("~/.cache/ragchat/bench").expanduser().glob("beir-5183-c200-*.db"))
    dataset = beir.load(SCIFACT, "train", max_queries=args.queries)
    with tempfile.TemporaryDirectory(prefix="ragchat-pg-bench-") as tmp:
        folder = Path(tmp)
        folder.chmod(0o755)  # pgserver runs the server as its own user under root
        lite_path = folder / "scifact.db"
        shutil.copy(cache, lite_path)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pgserver

            server = pgserver.get_server(folder / "pgdata", cleanup_mode="delete")
        try:
            uri = server.get_uri().replace("postgresql://", "postgresql+psycopg://", 1)
            server.psql("CREATE DATABASE scifact;")
            pg_url = uri.replace("/postgres?", "/scifact?", 1)
            lite_url = f"sqlite:///{lite_path}"
            for url in (lite_url, pg_url):
                migrate.upgrade(url)
            lite = Container.build(Settings(database_url=lite_url))
            pg = Container.build(Settings(database_url=pg_url), embedder=lite.embedder)
            try:
                started = time.perf_counter()
                chunks = _copy(lite, pg)
                print(f"copied {chunks} chunks and their vectors in {time.perf_counter() - started:.0f} s")
                project = projects.find(pg.store, scratch.PROJECT)
                assert project is not None
                pid = project.id
                vectors = {qid: embed_query(lite.embedder, q) for qid, q in dataset.queries.items()}
                print(f"{len(dataset.queries)} train queries, {len(dataset.corpus)} documents")
                print(
                    f"{'mode':8} {'nDCG@10 SQLite':>15} {'PostgreSQL':>11} {'diff':>8} {'R@100 SQLite':>13} "
                    f"{'PostgreSQL':>11} {'time PG/SQLite':>15}"
                )
                for mode in MODES:
                    measured = {}
                    for name, container in (("sqlite", lite), ("postgresql", pg)):
                        start = time.perf_counter()
                        run, _ = _search(container, container.embedder, pid, dataset, vectors, mode, {})
                        measured[name] = (_measure(dataset, run), time.perf_counter() - start)
                    (a, ta), (b, tb) = measured["sqlite"], measured["postgresql"]
                    print(
                        f"{mode.value:8} {a['ndcg@10']:15.4f} {b['ndcg@10']:11.4f} {b['ndcg@10'] - a['ndcg@10']:+8.4f} "
                        f"{a['recall@100']:13.4f} {b['recall@100']:11.4f} {tb / ta:14.2f}x"
                    )
            finally:
                lite.close()
                pg.close()
        finally:
            server.cleanup()


if __name__ == "__main__":
    main()
