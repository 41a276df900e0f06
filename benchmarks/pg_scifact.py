"""SciFact train nDCG@10 on PostgreSQL beside SQLite, in one run (issue 18).

The knowledge base is the bench cache's SciFact database (``ragchat bench retrieval`` builds it:
5,183 abstracts, 200-token chunks, the local embedder), copied first so the cache is not touched
(opening it would migrate the shared file). It is copied, every row and stored vector with its
id, into a fresh PostgreSQL database (pgserver, in a temporary folder) by what ``ragchat
copy-database`` runs: both backends rank exactly the same chunks and vectors. Each query of the
train split (809) is then searched in each mode on both, back to back, as ``ragchat bench retrieval`` does
(same parameters, documents max-pooled from chunks), and nDCG@10 / recall@100 are computed with
ir-measures; search time is reported as the PostgreSQL / SQLite ratio of the same queries. The
keyword and hybrid modes run a third time on PostgreSQL with the exhaustive keyword search (every
chunk holding a question word scored, as before MaxScore): its nDCG@10, its time, and on how many
queries its documents and scores are the pruned search's.

Usage: python -m benchmarks.pg_scifact [--queries N] [--cache PATH]
"""

from __future__ import annotations

import argparse
import math
import shutil
import tempfile
import time
import warnings
from contextlib import nullcontext
from pathlib import Path

from app.bench import beir, scratch
from app.bench.retrieval import _measure, _search
from app.container import Container
from app.db import migrate
from app.rag.search.retrieval import embed_query
from app.rag.search.retrieval_mode import RetrievalMode
from app.services import database_copy, projects
from app.settings import Settings
from benchmarks.data import SCIFACT
from benchmarks.pg_scale import exhaustive_keywords

MODES = (RetrievalMode.VECTOR, RetrievalMode.KEYWORD, RetrievalMode.HYBRID)


def _identical(a: dict[str, dict[str, float]], b: dict[str, dict[str, float]]) -> int:
    """How many queries have the same documents, in the same order, with the same scores."""
    return sum(
        list(a[q]) == list(b[q]) and all(math.isclose(a[q][d], b[q][d], rel_tol=1e-9, abs_tol=1e-12) for d in a[q])
        for q in b
    )


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
            started = time.perf_counter()
            report = database_copy.copy_database(lite_url, pg_url)  # what `ragchat copy-database` runs
            print(
                f"copied {report.rows['chunks']} chunks and {sum(report.vectors.values())} vectors "
                f"in {time.perf_counter() - started:.0f} s"
            )
            server.psql("\\c scifact\nVACUUM ANALYZE;")  # what autovacuum does after the copy's inserts
            lite = Container.build(Settings(database_url=lite_url))
            pg = Container.build(Settings(database_url=pg_url), embedder=lite.embedder)
            try:
                project = projects.find(pg.store, scratch.PROJECT)
                assert project is not None
                pid = project.id
                vectors = {qid: embed_query(lite.embedder, q) for qid, q in dataset.queries.items()}
                print(f"{len(dataset.queries)} train queries, {len(dataset.corpus)} documents")
                print(
                    f"{'mode':8} {'nDCG@10 SQLite':>15} {'PostgreSQL':>11} {'diff':>8} {'R@100 SQLite':>13} "
                    f"{'PostgreSQL':>11} {'time PG/SQLite':>15}"
                )
                exhaustive_lines = []
                for mode in MODES:
                    measured = {}
                    runs = {}
                    sides = [("sqlite", lite, False), ("postgresql", pg, False)]
                    if mode != RetrievalMode.VECTOR:
                        sides.append(("exhaustive", pg, True))
                    for name, container, exhaustive in sides:
                        with exhaustive_keywords() if exhaustive else nullcontext():
                            start = time.perf_counter()
                            run, _ = _search(container, container.embedder, pid, dataset, vectors, mode, {})
                            measured[name] = (_measure(dataset, run), time.perf_counter() - start)
                        runs[name] = run
                    (a, ta), (b, tb) = measured["sqlite"], measured["postgresql"]
                    print(
                        f"{mode.value:8} {a['ndcg@10']:15.4f} {b['ndcg@10']:11.4f} {b['ndcg@10'] - a['ndcg@10']:+8.4f} "
                        f"{a['recall@100']:13.4f} {b['recall@100']:11.4f} {tb / ta:14.2f}x"
                    )
                    if "exhaustive" in measured:
                        c, tc = measured["exhaustive"]
                        exhaustive_lines.append(
                            f"{mode.value:8} exhaustive keyword search on PostgreSQL: nDCG@10 {c['ndcg@10']:.4f}, "
                            f"R@100 {c['recall@100']:.4f}, time {tc / ta:.2f}x SQLite's (pruned: {tb / tc:.2f}x "
                            f"the exhaustive's); queries whose 100 documents and scores are the pruned search's: "
                            f"{_identical(runs['postgresql'], runs['exhaustive'])} of {len(runs['exhaustive'])}"
                        )
                for line in exhaustive_lines:
                    print(line)
            finally:
                lite.close()
                pg.close()
        finally:
            server.cleanup()


if __name__ == "__main__":
    main()
