"""2. Hybrid overhead: ``retrieve(mode="hybrid")`` time ÷ ``retrieve(mode="vector")`` time, same
query, same N, measured back to back (SciFact claims as questions, query vectors given).

Before measuring, the keyword query ragchat runs is checked with EXPLAIN QUERY PLAN. When SQLite
plans it chunks-first (every chunk of the project, one FTS5 match each: O(N) evaluations of the
whole query), one shipped search is timed under a time limit and the measurement runs the FTS match
first instead (``keyword.SQL``, a materialised CTE, or else the same SQL with ``CROSS JOIN``); the
output says which.
A third variant also drops common English words from the query (what the goal would need).

Usage: python -m benchmarks.hybrid [--quick]
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

from sqlalchemy import event
from sqlalchemy.orm import Session

from app.db.database import Database
from app.rag import keyword
from app.rag.retrieval import RetrievalParams, retrieve
from benchmarks import common, data
from benchmarks.common import Config
from benchmarks.providers import QueryVectorsOnly

NAME = "hybrid"
GOAL = 1.3
K = 50
log = logging.getLogger("benchmarks")

FTS_FIRST = (
    "SELECT c.id, bm25(chunks_fts) AS score FROM chunks_fts CROSS JOIN chunks c ON c.id = chunks_fts.rowid "
    "WHERE chunks_fts MATCH ? AND c.project_id = ? ORDER BY bm25(chunks_fts) LIMIT ?"
)
STOPWORDS = frozenset(
    "a about after all also an and any are as at be been before between both but by can could did do does "
    "during each for from had has have he her his how if in into is it its may more most no not of on or "
    "other our over she should so some such than that the their them then there these they this those "
    "through to under up was we were what when where which while who will with would you".split()
)
_WORD = re.compile(r"\w+")


def fts_first(stopwords: bool) -> Callable[[Session, int, str, int], list[tuple[int, float]]]:
    def search(db: Session, project_id: int, text: str, limit: int) -> list[tuple[int, float]]:
        if stopwords:
            text = " ".join(w for w in _WORD.findall(text) if w.lower() not in STOPWORDS)
        expression = keyword.match_expression(text)
        if expression is None:
            return []
        sql = getattr(keyword, "SQL", FTS_FIRST)  # the module's own FTS-first query, where it has one
        rows = db.connection().exec_driver_sql(sql, (expression, project_id, int(limit))).all()
        return [(int(cid), float(score)) for cid, score in rows]

    return search


def shipped_plan(store: Database, project_id: int, question: str, limit_s: float) -> dict[str, Any]:
    """The shipped keyword query's plan, and one search timed (aborted after ``limit_s``)."""
    captured: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        if "chunks_fts MATCH" in statement:
            captured.append((statement, parameters))

    event.listen(store.engine, "before_cursor_execute", capture)
    started = time.perf_counter()
    finished = True
    try:
        with store.read() as db, _time_limit(db, limit_s):
            keyword.search(db, project_id, question, K)
    except Exception as exc:  # interrupted by the time limit
        if "interrupt" not in str(exc):
            raise
        finished = False
    finally:
        event.remove(store.engine, "before_cursor_execute", capture)
    seconds = time.perf_counter() - started
    plan: list[str] = []
    if captured:
        with store.read() as db:
            statement, parameters = captured[0]
            plan = [row[-1] for row in db.connection().exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)]
    chunks_first = _chunks_first(plan)
    return {"plan": plan, "chunks_first": chunks_first, "seconds": seconds, "finished": finished}


def _chunks_first(plan: list[str]) -> bool:
    """True when the plan visits the project's chunks before (and so around) the FTS5 match."""
    fts = next((i for i, step in enumerate(plan) if "chunks_fts" in step), len(plan))
    chunks = next((i for i, step in enumerate(plan) if step.startswith(("SEARCH c ", "SCAN c "))), len(plan))
    return chunks < fts


@contextmanager
def _time_limit(db: Session, seconds: float) -> Iterator[None]:
    raw = db.connection().connection.driver_connection
    deadline = time.perf_counter() + seconds
    raw.set_progress_handler(lambda: int(time.perf_counter() > deadline), 10_000)  # type: ignore[union-attr]
    try:
        yield
    finally:
        raw.set_progress_handler(None, 0)  # type: ignore[union-attr]


def measure(cfg: Config, n: int, questions: list[str], vectors: Any, count: int, fixed: bool) -> dict[str, Any]:
    kb = data.knowledge_base(cfg, n)
    store = Database.from_url(kb.url)
    embedder = QueryVectorsOnly(data.LOCAL_SPACE)

    def search(mode: str, patch: Callable[..., Any] | None) -> Callable[[int], float]:
        params = RetrievalParams(mode=mode, top_k=10, threshold=-1.0, candidates=K)  # type: ignore[arg-type]

        def once(r: int) -> float:
            with mock.patch.object(keyword, "search", patch) if patch else _nothing():
                return common.timed(
                    lambda: retrieve(
                        store,
                        embedder,
                        kb.project_id,
                        questions[r % len(questions)],
                        params,
                        query_vector=vectors[r % len(vectors)],
                    )
                )[0]

        return once

    try:
        search("vector", None)(0)  # the index loads
        times = common.rounds(
            count,
            {
                "vector": search("vector", None),
                "hybrid": search("hybrid", fts_first(False) if fixed else None),
                "hybrid_no_stopwords": search("hybrid", fts_first(True)),
            },
        )
    finally:
        store.dispose()
    return {
        "n": n,
        "times_ms": {name: common.summary(values) for name, values in times.items()},
        "ratios": {
            "hybrid/vector": common.ratio(times["hybrid"], times["vector"]),
            "hybrid_no_stopwords/vector": common.ratio(times["hybrid_no_stopwords"], times["vector"]),
        },
    }


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def run(cfg: Config) -> dict[str, Any]:
    sizes = cfg.pick([10_000, 100_000, 500_000], [10_000, 50_000], [300])
    count = cfg.pick(15, 8, 2)
    questions, vectors = data.query_vectors(cfg, cfg.pick(50, 20, 4))
    probe_kb = data.knowledge_base(cfg, sizes[0])
    probe_db = Database.from_url(probe_kb.url)
    try:
        probe = shipped_plan(probe_db, probe_kb.project_id, questions[1 % len(questions)], cfg.pick(10.0, 5.0, 2.0))
    finally:
        probe_db.dispose()
    fixed = probe["chunks_first"]
    log.info("shipped keyword plan: %s", probe["plan"])
    results = []
    for n in sizes:
        log.info("hybrid vs vector at N=%d", n)
        results.append(measure(cfg, n, questions, vectors, count, fixed))
    label = "hybrid (FTS-first fix)" if fixed else "hybrid (as shipped)"
    rows = [
        [
            r["n"],
            r["times_ms"]["vector"]["median"],
            r["times_ms"]["hybrid"]["median"],
            r["ratios"]["hybrid/vector"]["median"],
            r["ratios"]["hybrid/vector"]["p95"],
            r["times_ms"]["hybrid_no_stopwords"]["median"],
            r["ratios"]["hybrid_no_stopwords/vector"]["median"],
            common.goal(r["ratios"]["hybrid/vector"]["median"] <= GOAL),
        ]
        for r in results
    ]
    order = "chunks first: one FTS match per chunk" if fixed else "the FTS match first, as intended"
    note = (
        f"Shipped keyword query plan at N={sizes[0]} ({order}): {' / '.join(probe['plan'])}. One shipped keyword "
        f"search took {probe['seconds']:.2f} s{'' if probe['finished'] else ' and was aborted there'}."
    )
    text = common.table(
        f"Hybrid ÷ vector-only retrieval (medians of {count} paired rounds)",
        [
            "N",
            "vector ms",
            f"{label} ms",
            "hybrid/vector",
            "p95",
            "no-stopwords ms",
            "no-stopwords/vector",
            f"goal <={GOAL}x",
        ],
        rows,
    )
    text += "\n" + note + "\n"
    payload = {"k": K, "rounds": count, "shipped_keyword": probe, "fixed_keyword_sql": fixed, "sizes": results}
    return common.write(cfg, NAME, {**payload, "table": text}, _plot(results, label))


def _plot(results: list[dict[str, Any]], label: str) -> Any:
    fig, (ax,) = common.figure(1)
    ns = [r["n"] for r in results]
    ax.plot(ns, [r["ratios"]["hybrid/vector"]["median"] for r in results], marker="o", label=label)
    ax.plot(
        ns,
        [r["ratios"]["hybrid_no_stopwords/vector"]["median"] for r in results],
        marker="o",
        label="hybrid, common words dropped",
    )
    ax.axhline(GOAL, color="grey", linestyle="--", label=f"goal {GOAL}x")
    ax.set(xscale="log", xlabel="chunks", ylabel="hybrid time ÷ vector time (median)")
    ax.legend(fontsize=8)
    fig.suptitle("Hybrid retrieval overhead")
    return fig


def main() -> None:
    common.main(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
