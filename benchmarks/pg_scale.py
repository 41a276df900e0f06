"""PostgreSQL beside SQLite at 100k and 500k chunks (issue 18): retrieval latency of each mode as
a ratio to the SQLite backend in the same run, and HNSW's recall@10 against exact search.

The knowledge bases are the bench cache's synthetic ones (``benchmarks/data.py``: SciFact chunk
texts cut at ~900 characters, 20 chunks per document, vectors a mix of two real SciFact embeddings
plus noise), used as they are cached (a copy is migrated to head; never rebuilt here if one
exists). Their rows and vectors are loaded once into a PostgreSQL kept in the bench cache
(``pg-scale/``, pgserver, fsync on) with COPY, the GIN and HNSW indexes built after the load
(pgvector's defaults: m 16, ef_construction 64), then reused by later runs.

Per query (SciFact queries, the local embedder's vectors given, so nothing embeds), back to back in
alternating order: ``retrieve()`` on SQLite then PostgreSQL (or the reverse), in each mode, with a
chat turn's parameters (50 candidates per ranking, top 10); in the keyword and hybrid modes also
on PostgreSQL with the exhaustive keyword search (every chunk holding a question word scored, as
before MaxScore: ``--no-before`` skips it). Then PostgreSQL's keyword ranking's work per question,
load-independent: chunks matching, looked at and scored fully, passes, and whether the pruned
top k is the exhaustive one (ids, order, scores). Then, on PostgreSQL alone, the vector
ranking's k=10 search through HNSW at several ``hnsw.ef_search`` values against the exact search
(a sequential scan of the same table, scored exactly): recall@10 against the exact top 10 (float64
cosines from the stored vectors, ties by id) and the latency ratio.

Usage: python -m benchmarks.pg_scale [--quick] [--sizes 100000,500000] [--queries N] [--no-before]
"""

from __future__ import annotations

import argparse
import logging
import math
import shutil
import statistics
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import text
from sqlalchemy.engine import make_url

from app.db import migrate
from app.db.database import Database
from app.db.enums import SpaceStatus
from app.rag.index import keyword_index, pg_rankings, spaces
from app.rag.search.retrieval import RetrievalParams, retrieve
from app.rag.search.retrieval_mode import RetrievalMode
from benchmarks import common, data
from benchmarks.providers import QueryVectorsOnly

log = logging.getLogger("benchmarks")
MODES = (RetrievalMode.VECTOR, RetrievalMode.KEYWORD, RetrievalMode.HYBRID)
EF_SEARCHES = (40, 100, 200, 400, 1000)
BATCH = 50_000
LOADED = "ragchat pg_scale: loaded"
CHUNK_COLUMNS = (
    "id, document_id, project_id, ordinal, text, content_hash, token_count, char_start, char_end, "
    "line_start, line_end, heading_path, page"
)


def sqlite_copy(cfg: common.Config, n: int, folder: Path) -> Path:
    """A migrated copy of the cached knowledge base of ``n`` chunks (built only if none is cached)."""
    centres = len(data.centres(cfg))
    cached = sorted(cfg.cache_dir.glob(f"kb-{n}-c{centres}-*.db"), key=lambda p: p.stat().st_mtime)
    source = cached[-1] if cached else data.knowledge_base(cfg, n).path
    target = folder / f"kb-{n}.db"
    shutil.copyfile(source, target)
    migrate.upgrade(f"sqlite:///{target}")
    return target


def pg_server(cfg: common.Config) -> Any:
    folder = cfg.cache_dir / "pg-scale"
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)  # pgserver runs the server as its own user under root
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver

        return pgserver.get_server(folder / "pgdata", cleanup_mode=None)


def pg_database(server: Any, lite: Path, n: int) -> str:
    """The PostgreSQL copy of ``lite`` (loaded on first use, then reused) and its URL."""
    import psycopg

    name = f"kb_{n}"
    admin = server.get_uri()
    url = admin.replace("postgresql://", "postgresql+psycopg://", 1).replace("/postgres?", f"/{name}?", 1)
    raw = url.replace("postgresql+psycopg://", "postgresql://", 1)
    with psycopg.connect(admin, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is not None:
            with psycopg.connect(raw) as db:  # complete: the comment is written last
                if db.execute(
                    "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s", (name,)
                ).fetchone() == (LOADED,):
                    migrate.upgrade(url)  # a later migration may have rebuilt columns: fresh statistics
                    db.execute("ANALYZE chunks")
                    _vacuum(raw)
                    return url
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')  # a load that did not finish
        conn.execute(f'CREATE DATABASE "{name}"')
    migrate.upgrade(url)
    started = time.perf_counter()
    _load(lite, url, raw)
    log.info("loaded %d chunks into PostgreSQL in %.0f s", n, time.perf_counter() - started)
    return url


def _vacuum(raw: str) -> None:
    """What autovacuum does after a large insert (migration 0022 fills ``chunk_terms``): the
    visibility map lets searches read the postings from the index alone."""
    import psycopg

    with psycopg.connect(raw, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE chunk_terms")


@contextmanager
def exhaustive_keywords() -> Iterator[None]:
    """PostgreSQL's keyword ranking as it was before MaxScore (every matching chunk scored): the
    same run's "before"."""
    pruned = pg_rankings.PgKeywordRanking.search
    pg_rankings.PgKeywordRanking.search = pg_rankings.PgKeywordRanking.exhaustive_search  # type: ignore[method-assign]
    try:
        yield
    finally:
        pg_rankings.PgKeywordRanking.search = pruned  # type: ignore[method-assign]


def keyword_work(pg: Database, pid: int, questions: list[str], k: int) -> dict[str, Any]:
    """Per question, PostgreSQL's keyword ranking of ``k``: how many chunks the exhaustive search
    scores (every chunk holding a question word), how many the pruned one looks at (holding an
    essential word, from the postings) and scores fully, in how many passes; and whether the two
    give the same ids in the same order and the same scores."""
    tokenizer = keyword_index.tokenizer()
    rows = []
    for question in questions:
        weights = tokenizer.question(question)
        with pg.read() as db:
            ranking = pg_rankings.PgKeywordRanking(db, pid)
            exhaustive = ranking.exhaustive_search(weights, k)
            matched = ranking.scored
            pruned = ranking.search(weights, k)
        same = [c for c, _ in pruned] == [c for c, _ in exhaustive] and all(
            math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15) for (_, a), (_, b) in zip(pruned, exhaustive, strict=True)
        )
        rows.append(
            {"matched": matched, "candidates": ranking.candidates, "scored": ranking.scored,
             "passes": ranking.passes, "identical": same}
        )  # fmt: skip
    return {
        "k": k,
        "identical": sum(r["identical"] for r in rows),
        "queries": len(rows),
        "matched": statistics.median(r["matched"] for r in rows),
        "candidates": statistics.median(r["candidates"] for r in rows),
        "scored": statistics.median(r["scored"] for r in rows),
        "scored_max": max(r["scored"] for r in rows),
        "passes_max": max(r["passes"] for r in rows),
        "per_query": rows,
    }


def _load(lite: Path, url: str, raw: str) -> None:
    import psycopg
    import pysqlite3.dbapi2 as sqlite3
    import sqlite_vec

    src = sqlite3.connect(f"file:{lite}?mode=ro", uri=True)
    src.enable_load_extension(True)
    sqlite_vec.load(src)
    project = src.execute("SELECT id, name, description, created_at, updated_at FROM projects").fetchall()
    space_id, space_project = src.execute(
        "SELECT id, project_id FROM embedding_spaces WHERE status = 'active'"
    ).fetchone()
    space_table = f"vec_space_{space_id}"
    documents = src.execute(
        "SELECT id, project_id, name, kind, size_bytes, content_hash, status, chunk_count, ingested_at, "
        "created_at, updated_at FROM documents"
    ).fetchall()
    with psycopg.connect(raw) as conn:
        conn.execute("DROP INDEX IF EXISTS ix_chunks_text_search")  # built once after the load
        conn.execute("SET maintenance_work_mem = '1GB'")
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO projects(id, name, description, created_at, updated_at) VALUES (%s, %s, %s, %s, %s)",
                project,
            )
            with cur.copy(
                "COPY documents(id, project_id, name, kind, size_bytes, content_hash, status, chunk_count, "
                "ingested_at, created_at, updated_at) FROM STDIN"
            ) as copy:
                for row in documents:
                    copy.write_row(row)
            last = 0
            while True:
                rows = src.execute(
                    f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE id > ? ORDER BY id LIMIT ?", (last, BATCH)
                ).fetchall()
                if not rows:
                    break
                with cur.copy(f"COPY chunks({CHUNK_COLUMNS}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
                last = rows[-1][0]
                log.info("  chunks up to %d", last)
            conn.execute("CREATE INDEX ix_chunks_text_search ON chunks USING gin (text_search)")
            for table in ("projects", "documents", "chunks"):
                conn.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
        conn.commit()
    store = Database.from_url(url)
    try:
        with store.write() as db:
            space = spaces.create_space(db, int(space_project), data.LOCAL_SPACE, status=SpaceStatus.ACTIVE)
            table = space.table
    finally:
        store.dispose()
    with psycopg.connect(raw) as conn:
        conn.execute(f"DROP INDEX {table}_hnsw")
        with conn.cursor().copy(f"COPY {table}(chunk_id, embedding) FROM STDIN") as copy:
            for rowid, blob in src.execute(f"SELECT rowid, embedding FROM {space_table}"):
                vector = np.frombuffer(blob, dtype=np.float32)
                copy.write_row((rowid, "[" + ",".join(map(repr, vector.tolist())) + "]"))
        conn.commit()
        conn.execute("SET maintenance_work_mem = '2GB'")
        started = time.perf_counter()
        conn.execute(f"CREATE INDEX {table}_hnsw ON {table} USING hnsw (embedding vector_cosine_ops)")
        conn.commit()
        log.info("  HNSW index built in %.0f s", time.perf_counter() - started)
    with psycopg.connect(raw, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
        conn.execute(f"COMMENT ON DATABASE {make_url(url).database} IS '{LOADED}'")
    src.close()


def measure(cfg: common.Config, n: int, server: Any, folder: Path, count: int, before: bool) -> dict[str, Any]:
    lite_path = sqlite_copy(cfg, n, folder)
    pg_url = pg_database(server, lite_path, n)
    questions, vectors = data.query_vectors(cfg, count)
    lite, pg = Database.from_url(f"sqlite:///{lite_path}"), Database.from_url(pg_url)
    embedder = QueryVectorsOnly(data.LOCAL_SPACE)
    try:
        with lite.read() as db:
            pid = int(db.execute(text("SELECT project_id FROM embedding_spaces WHERE status = 'active'")).scalar_one())
            table = str(db.execute(text("SELECT id FROM embedding_spaces WHERE status = 'active'")).scalar_one())
        with pg.read() as db:
            pg_table = "vec_space_" + str(
                db.execute(text("SELECT id FROM embedding_spaces WHERE status = 'active'")).scalar_one()
            )
        out: dict[str, Any] = {"n": n, "queries": len(questions), "modes": {}}
        for mode in MODES:
            params = RetrievalParams(mode=mode, top_k=10, threshold=0.0)
            for store in (lite, pg):  # warm: the SQLite indexes load, PostgreSQL's pages come into memory
                retrieve(store, embedder, pid, questions[0], params, query_vector=vectors[0])

            def run(store: Database, i: int, params: RetrievalParams = params, exhaustive: bool = False) -> float:
                with exhaustive_keywords() if exhaustive else nullcontext():
                    start = time.perf_counter()
                    retrieve(store, embedder, pid, questions[i], params, query_vector=vectors[i])
                    return time.perf_counter() - start

            measures = {"sqlite": lambda i: run(lite, i), "postgresql": lambda i: run(pg, i)}
            if before and mode != RetrievalMode.VECTOR:
                measures["postgresql_exhaustive"] = lambda i: run(pg, i, exhaustive=True)
            timed = common.rounds(len(questions), measures)
            out["modes"][mode.value] = {
                "sqlite": common.summary(timed["sqlite"]),
                "postgresql": common.summary(timed["postgresql"]),
                "ratio": common.ratio(timed["postgresql"], timed["sqlite"]),
            }
            if "postgresql_exhaustive" in timed:
                out["modes"][mode.value] |= {
                    "postgresql_exhaustive": common.summary(timed["postgresql_exhaustive"]),
                    "ratio_exhaustive": common.ratio(timed["postgresql_exhaustive"], timed["sqlite"]),
                    "pruned_over_exhaustive": common.ratio(timed["postgresql"], timed["postgresql_exhaustive"]),
                }
            log.info("%d chunks, %s: %s", n, mode.value, out["modes"][mode.value])
        out["keyword_work"] = keyword_work(pg, pid, questions, RetrievalParams(top_k=10).candidates)
        log.info("%d chunks, keyword work: %s", n, {k: v for k, v in out["keyword_work"].items() if k != "per_query"})
        out["hnsw"] = _hnsw(pg, pg_table, vectors)
        out["sqlite_table"] = f"vec_space_{table}"
        return out
    finally:
        lite.dispose()
        pg.dispose()


def _hnsw(pg: Database, table: str, vectors: np.ndarray) -> dict[str, Any]:
    """Recall@10 of HNSW at each ef_search against the exact search, and their latency ratio."""
    exact_top: list[list[int]] = []
    exact_tenth: list[float] = []
    exact_times: list[float] = []
    for q in vectors:
        with pg.read() as db:
            start = time.perf_counter()
            hits = pg_rankings.PgVectorRanking(db, table, exact=True).search(q, 10)
            exact_times.append(time.perf_counter() - start)
        exact_top.append([cid for cid, _ in hits])
        exact_tenth.append(hits[-1][1])
    out: dict[str, Any] = {"exact": common.summary(exact_times)}
    chosen = pg_rankings.EF_SEARCH
    try:
        for ef in EF_SEARCHES:
            pg_rankings.EF_SEARCH = ef
            recalls, gaps, times = [], [], []
            for q, truth, tenth in zip(vectors, exact_top, exact_tenth, strict=True):
                with pg.read() as db:
                    start = time.perf_counter()
                    hits = pg_rankings.PgVectorRanking(db, table).search(q, 10)
                    times.append(time.perf_counter() - start)
                recalls.append(len({cid for cid, _ in hits} & set(truth)) / len(truth))
                gaps.append(tenth - hits[-1][1])  # how much worse HNSW's 10th cosine is than the exact 10th
            out[f"ef{ef}"] = {
                "recall_at_10": statistics.mean(recalls),
                "cosine_gap_at_10": statistics.mean(gaps),
                "latency": common.summary(times),
                "ratio_to_exact": common.ratio(times, exact_times),
            }
            log.info("HNSW ef_search %d: recall@10 %.4f", ef, out[f"ef{ef}"]["recall_at_10"])
    finally:
        pg_rankings.EF_SEARCH = chosen
    return out


def run(cfg: common.Config, sizes: tuple[int, ...], count: int, before: bool = True) -> dict[str, Any]:
    server = pg_server(cfg)
    results = []
    with tempfile.TemporaryDirectory(prefix="ragchat-pg-scale-") as tmp, common.one_blas_thread():
        for n in sizes:
            results.append(measure(cfg, n, server, Path(tmp), count, before))
    rows = []
    for r in results:
        for mode, m in r["modes"].items():
            rows.append(
                [
                    r["n"],
                    mode,
                    m["sqlite"]["median"],
                    m["postgresql"]["median"],
                    m["ratio"]["median"],
                    m["ratio"]["p95"],
                    m["postgresql_exhaustive"]["median"] if "postgresql_exhaustive" in m else "",
                    m["ratio_exhaustive"]["median"] if "ratio_exhaustive" in m else "",
                    m["pruned_over_exhaustive"]["median"] if "pruned_over_exhaustive" in m else "",
                ]
            )
    work_rows = [
        [r["n"], w["k"], w["matched"], w["candidates"], w["scored"], w["scored_max"], w["passes_max"],
         f"{w['identical']}/{w['queries']}"]
        for r in results
        for w in [r["keyword_work"]]
    ]  # fmt: skip
    hnsw_rows = [
        [r["n"], ef, r["hnsw"][f"ef{ef}"]["recall_at_10"], r["hnsw"][f"ef{ef}"]["cosine_gap_at_10"],
         r["hnsw"][f"ef{ef}"]["latency"]["median"], r["hnsw"]["exact"]["median"],
         r["hnsw"][f"ef{ef}"]["ratio_to_exact"]["median"]]
        for r in results
        for ef in EF_SEARCHES
    ]  # fmt: skip
    table = common.table(
        "Retrieval, PostgreSQL beside SQLite (median ms; ratio PostgreSQL / SQLite per query)",
        ["chunks", "mode", "SQLite ms", "PostgreSQL ms", "ratio median", "ratio p95", "exhaustive ms",
         "exhaustive ratio", "pruned / exhaustive"],
        rows,
    ) + "\n" + common.table(
        "PostgreSQL keyword ranking's work per question (medians)",
        ["chunks", "k", "chunks matching", "looked at", "scored fully", "scored fully, max", "passes, max",
         "identical to exhaustive"],
        work_rows,
    ) + "\n" + common.table(
        "HNSW k=10 against the exact scan on PostgreSQL",
        ["chunks", "ef_search", "recall@10", "cosine gap at 10", "HNSW ms", "exact ms", "HNSW / exact"],
        hnsw_rows,
    )  # fmt: skip
    common.write(cfg, "pg_scale", {"sizes": results, "table": table}, None)
    return {"table": table}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sizes", default="100000,500000")
    parser.add_argument("--queries", type=int, default=None, help="default: 100 (30 with --quick)")
    parser.add_argument("--load-only", action="store_true", help="load the PostgreSQL copies, measure nothing")
    parser.add_argument("--no-before", action="store_true", help="skip the exhaustive keyword search's timings")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for noisy in ("alembic", "httpx"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    cfg = common.Config(quick=args.quick)
    count = args.queries or cfg.pick(100, 30, 3)
    if args.load_only:
        server = pg_server(cfg)
        with tempfile.TemporaryDirectory(prefix="ragchat-pg-scale-") as tmp:
            for n in (int(s) for s in args.sizes.split(",")):
                pg_database(server, sqlite_copy(cfg, n, Path(tmp)), n)
        return
    print(run(cfg, tuple(int(s) for s in args.sizes.split(",")), count, not args.no_before)["table"])


if __name__ == "__main__":
    main()
