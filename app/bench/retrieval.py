"""`ragchat bench retrieval`: nDCG@10 and Recall@100 on a BEIR dataset, through the real
ingestion path into a scratch database (kept in the bench cache and reused by later runs with the
same corpus, chunking and embedder), scored with ir-measures (trec_eval semantics)."""

from __future__ import annotations

import asyncio
import dataclasses
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.to_thread
import ir_measures
from ir_measures import R, nDCG

from app.bench import scratch
from app.bench.beir import BeirDataset
from app.container import Container
from app.llm.base import ChatModel, Embedder, Reranker, Vectors
from app.rag.ingest.pipeline import FileResult
from app.rag.search import expansion, query_cache, rerank
from app.rag.search.candidates import Candidate
from app.rag.search.conversation_settings import Quality
from app.rag.search.retrieval import RetrievalParams, RetrievalResult, embed_query, retrieve
from app.rag.search.retrieval_mode import RetrievalMode
from app.rag.session_settings import RagSettings
from app.services import projects
from app.services.chat import turn_search
from app.settings import Settings

CANDIDATES = 300  # chunks per ranking: enough distinct documents for Recall@100


@dataclass
class BenchResult:
    metrics: dict[str, dict[str, float]] = field(default_factory=dict)  # mode -> measure -> value
    timings: dict[str, float] = field(default_factory=dict)
    calibration: dict[str, float] = field(default_factory=dict)
    docs: int = 0
    chunks: int = 0
    queries: int = 0
    reused: bool = False  # the scratch database came from the cache

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "docs": self.docs,
            "chunks": self.chunks,
            "queries": self.queries,
            "reused_cached_database": self.reused,
            "timings_s": self.timings,
            "calibration": self.calibration,
            "modes": self.metrics,
        }
        if len(self.metrics) == 1:  # a single mode: its figures at the top level too
            out.update(next(iter(self.metrics.values())))
        return out


@dataclass(frozen=True)
class Stages:
    """The model stages to run after (expansion: before) each search, as a chat turn does."""

    expansion: ChatModel | None = None  # proposes phrasings
    phrasings: int = 3
    expansion_weight: float = 0.5
    reranker: Reranker | None = None
    window: int = 20
    weight: float = 0.7
    seconds: float = 60.0  # each model call's timeout

    @property
    def any(self) -> bool:
        return self.expansion is not None or self.reranker is not None


def run(
    dataset: BeirDataset,
    embedder: Embedder,
    settings: Settings,
    modes: list[RetrievalMode],
    *,
    progress: Callable[[FileResult], None] | None = None,
    cache: bool = True,
    params: dict[str, object] | None = None,
    stages: Stages = Stages(),
    qualities: Sequence[Quality] = (),
) -> BenchResult:
    """Ingest ``dataset`` (or reuse its cached scratch database: app/bench/scratch.py), then rank its
    queries in each mode, with ``params`` overriding RetrievalParams' fields (fusion, feedback); and
    for each of ``qualities``, search each query as a chat turn of a session with the server's default
    settings at that quality would (app/services/chat/turn_search.py: evaluate and widen), scored on the
    sources the turn keeps (metrics ``turn_<quality>``)."""
    result = BenchResult(docs=len(dataset.corpus), queries=len(dataset.queries))
    with tempfile.TemporaryDirectory(prefix="ragchat-bench-") as tmp:
        started = time.perf_counter()
        folder = None if cache else Path(tmp)
        path, reused = scratch.ingested(dataset, embedder, settings, cache_dir=folder, progress=progress)
        result.timings["ingest"] = time.perf_counter() - started
        result.reused = reused
        container = Container.build(settings.model_copy(update={"database_url": f"sqlite:///{path}"}))
        try:
            project = projects.find(container.store, scratch.PROJECT)
            assert project is not None
            pid = project.id
            result.chunks = _chunks(container, pid)
            started = time.perf_counter()
            vectors = {qid: embed_query(embedder, text) for qid, text in dataset.queries.items()}
            result.timings["embed_queries"] = time.perf_counter() - started
            for mode in modes:
                started = time.perf_counter()
                run_, best_scores = _search(container, embedder, pid, dataset, vectors, mode, params or {}, stages)
                result.timings[f"search_{mode}"] = time.perf_counter() - started
                result.metrics[mode] = _measure(dataset, run_)
                if mode == RetrievalMode.VECTOR:
                    result.calibration = _calibrate(dataset, best_scores)
            if qualities:  # load the in-memory indexes outside the timings
                _turns(container, embedder, settings, pid, dataset, qualities[0], first=1)
            for quality in qualities:
                query_cache.clear_embeddings()  # every quality searches cold, as a new question does
                query_cache.results(container.store.engine).clear()
                started = time.perf_counter()
                run_, passes, empty = _turns(container, embedder, settings, pid, dataset, quality)
                result.timings[f"search_turn_{quality}"] = time.perf_counter() - started
                result.metrics[f"turn_{quality}"] = {
                    **_measure(dataset, run_),
                    "mean_passes": statistics.fmean(passes) if passes else 0.0,
                    "no_source": empty / max(1, len(dataset.queries)),
                }
        finally:
            container.close()
    return result


def _chunks(container: Container, pid: int) -> int:
    with container.store.read() as db:
        count = db.connection().exec_driver_sql("SELECT count(*) FROM chunks WHERE project_id = ?", (pid,)).scalar()
        return int(count or 0)


def _search(
    container: Container,
    embedder: Embedder,
    pid: int,
    dataset: BeirDataset,
    vectors: dict[str, Vectors],
    mode: RetrievalMode,
    overrides: dict[str, object],
    stages: Stages = Stages(),
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    base = RetrievalParams(mode=mode, top_k=CANDIDATES * 2, threshold=-1.0, candidates=CANDIDATES)
    params = dataclasses.replace(base, **overrides)  # type: ignore[arg-type]
    run_: dict[str, dict[str, float]] = {}
    best: dict[str, dict[str, float]] = {}
    for qid, text in dataset.queries.items():
        if stages.any:
            found = asyncio.run(_staged(container, embedder, pid, text, params, vectors[qid], stages))
        else:
            found = retrieve(container.store, embedder, pid, text, params, query_vector=vectors[qid])
        scores: dict[str, float] = {}
        for cand in found.candidates:
            doc_id = _doc_id(cand)
            if cand.score is not None:
                scores[doc_id] = max(scores.get(doc_id, -1.0), cand.score)
        run_[qid] = dict(list(_pooled(found.candidates).items())[:100])
        best[qid] = scores
    return run_, best


async def _staged(
    container: Container,
    embedder: Embedder,
    pid: int,
    text: str,
    params: RetrievalParams,
    vector: Vectors,
    stages: Stages,
) -> RetrievalResult:
    phrasings: list[str] = []
    if stages.expansion is not None:
        phrasings = (
            await expansion.expand(stages.expansion, text, count=stages.phrasings, seconds=stages.seconds)
        ).phrasings
    found = retrieve(
        container.store,
        embedder,
        pid,
        text,
        params,
        query_vector=vector,
        alternatives=phrasings,
        alternative_weight=stages.expansion_weight,
    )
    if stages.reranker is not None:
        found, _ = await rerank.rerank(found, stages.reranker, window=stages.window, weight=stages.weight)
    return found


def _turns(
    container: Container,
    embedder: Embedder,
    settings: Settings,
    pid: int,
    dataset: BeirDataset,
    quality: Quality,
    first: int | None = None,
) -> tuple[dict[str, dict[str, float]], list[int], int]:
    """Each query searched as the first turn of a session at ``quality`` (its other settings the
    server's defaults): the documents of the sources it keeps, best first; the passes each took; and
    how many queries kept no source at all."""
    rag = RagSettings.of(settings.rag).model_copy(update={"quality": quality})
    asker = turn_search.Asker(pid, settings.llm.provider, settings.llm.model, rag)

    async def each() -> tuple[dict[str, dict[str, float]], list[int], int]:
        run_: dict[str, dict[str, float]] = {}
        passes: list[int] = []
        empty = 0
        models = container.chat_models
        for qid, text in list(dataset.queries.items())[:first]:
            steps = turn_search.search(container.store, lambda: embedder, settings, models, asker, text, ())
            found = await turn_search.last(steps)
            kept = found.result.kept if found.result is not None else []
            run_[qid] = _pooled(kept)
            passes.append(len(found.passes))
            empty += not kept
        return run_, passes, empty

    return anyio.run(each)


def _doc_id(candidate: Candidate) -> str:
    return candidate.document_name.removesuffix(".txt")


def _pooled(candidates: Sequence[Candidate]) -> dict[str, float]:
    """Documents best first, each ranked where its best chunk is (max-pooling), as a run's scores."""
    docs: dict[str, float] = {}
    for position, cand in enumerate(candidates):
        docs.setdefault(_doc_id(cand), -float(position))
    return docs


def _measure(dataset: BeirDataset, run_: dict[str, dict[str, float]]) -> dict[str, float]:
    values = ir_measures.calc_aggregate([nDCG @ 10, R @ 100], dataset.qrels, run_)
    return {"ndcg@10": float(values[nDCG @ 10]), "recall@100": float(values[R @ 100])}


def _calibrate(dataset: BeirDataset, best: dict[str, dict[str, float]]) -> dict[str, float]:
    """Score of each relevant document (its best chunk) vs. the scores of all other candidates:
    the threshold that keeps 95% of relevant documents, and what it removes of the rest."""
    relevant = [best[q][d] for q, docs in dataset.qrels.items() for d in docs if d in best.get(q, {})]
    others = [s for q, docs in best.items() for d, s in docs.items() if d not in dataset.qrels.get(q, {})]
    if len(relevant) < 2 or not others:
        return {}
    keep95 = statistics.quantiles(relevant, n=20)[0]
    return {
        "relevant_median": statistics.median(relevant),
        "others_median": statistics.median(others),
        "threshold_keep_95pct_relevant": keep95,
        "others_removed_at_that_threshold": sum(1 for s in others if s < keep95) / len(others),
    }
