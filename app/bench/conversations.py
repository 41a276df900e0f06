"""`ragchat bench conversations`: follow-up recall on a conversational set.

benchmarks/conversations/conversations.jsonl holds two- and three-turn conversations over
benchmarks/answers/documents (offices, products, travel policies by year, quarterly updates:
documents that share a structure, so a follow-up's "it" decides the document). Every follow-up has
its expected document, a fact its chunk holds, and a standalone version of the same question. Each
follow-up is searched four ways, through the real retrieval path on a scratch database:

- ``raw``: the message alone, as a chat turn searched before it read the conversation;
- ``history``: the model-free history-aware query (app/rag/search/conversation.py);
- ``rewrite``: the chat model's standalone rewrite (app/rag/search/rewrite.py), falling back to
  ``history`` when it fails, as a chat turn does;
- ``standalone``: the standalone question written in the set (the ceiling);
- and, for the design note, ``history_no_hygiene`` (no near-duplicate removal, document cap or
  merging) and ``balanced`` / ``thorough`` (a chat turn's whole search with evaluate-and-widen).

Recall@k: the share of follow-ups with the expected document among the first k sources (``doc``),
and with a source of that document holding the fact (``chunk``). Ranking only: threshold 0.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import anyio
import anyio.from_thread
import anyio.to_thread

from app.container import Container
from app.db import migrate
from app.errors import ValidationError
from app.llm.base import ChatModel, Embedder
from app.rag.ingest.pipeline import Ingestor, Source
from app.rag.search import conversation, query_cache, rewrite
from app.rag.search.conversation_settings import Quality, RewriteMode
from app.rag.search.retrieval import RetrievalParams, RetrievalResult, retrieve
from app.rag.session_settings import RagSettings
from app.services import projects
from app.services.chat import turn_search
from app.settings import Settings

ROOT = Path(__file__).resolve().parents[2] / "benchmarks"
DEFAULT_SET = ROOT / "conversations" / "conversations.jsonl"
DEFAULT_DOCUMENTS = ROOT / "answers" / "documents"
VARIANTS = ("raw", "history", "rewrite", "standalone")
# More ways to search a follow-up, for the design note: the history-aware query without context
# hygiene, and with evaluate-and-widen at each quality (a chat turn's search, app/services/chat/turn_search.py).
EXTRA = ("history_no_hygiene", "balanced", "thorough")
KS = (1, 5)


@dataclass(frozen=True)
class FollowUp:
    conversation: str
    message: str
    earlier: tuple[str, ...]  # the user turns before it, oldest first
    document: str
    fact: str
    standalone: str


def load(path: Path) -> list[FollowUp]:
    """Every follow-up of the set; a malformed line is reported with its number."""
    found: list[FollowUp] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            turns = item["turns"]
            for i, turn in enumerate(turns[1:], start=1):
                earlier = tuple(t["message"] for t in turns[:i])
                found.append(
                    FollowUp(item["id"], turn["message"], earlier, turn["document"], turn["fact"], turn["standalone"])
                )
        except (ValueError, KeyError, TypeError) as exc:
            raise ValidationError("conversations", f"{path.name} line {number}: {exc!r}") from None
    return found


@dataclass
class Report:
    conversations: int
    follow_ups: int
    chunks: int
    model: str
    recall: dict[str, dict[str, float]] = field(default_factory=dict)  # variant -> "doc@1" ... -> share
    ms: dict[str, float] = field(default_factory=dict)  # variant -> median ms per follow-up
    rewrites: dict[str, int] = field(default_factory=dict)  # outcome -> count
    examples: list[dict[str, str]] = field(default_factory=list)  # what the model rewrote

    def as_json(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items()}


def run(
    settings: Settings,
    path: Path = DEFAULT_SET,
    documents: Path = DEFAULT_DOCUMENTS,
    *,
    weights: conversation.HistoryWeights = conversation.DEFAULT_WEIGHTS,
    variants: Sequence[str] = VARIANTS,
    rewrite_timeout: float = 60.0,
    progress: Callable[[], None] | None = None,
) -> Report:
    follow_ups = load(path)
    files = sorted(p for p in documents.iterdir() if p.is_file() and not p.name.startswith("."))
    with tempfile.TemporaryDirectory(prefix="ragchat-bench-conv-") as tmp:
        scratch = settings.model_copy(update={"database_url": f"sqlite:///{Path(tmp) / 'bench.db'}"})
        migrate.upgrade(scratch.database_url)
        container = Container.build(scratch)
        try:
            pid = projects.create(container.store, "bench conversations").id
            sources = [Source.from_bytes(p.name, p.read_bytes()) for p in files]
            ingested = Ingestor(container.store, container.embedder, scratch.ingest).ingest(pid, sources)
            model = (
                container.chat_models.get(settings.llm.provider, settings.llm.model) if "rewrite" in variants else None
            )
            report = Report(
                len({f.conversation for f in follow_ups}),
                len(follow_ups),
                sum(f.chunks for f in ingested.files),
                f"{settings.llm.provider}/{settings.llm.model}",
            )
            search = _Searcher(container, pid, scratch, weights, model, rewrite_timeout)
            anyio.run(_all, search, follow_ups, variants, report, progress)
        finally:
            container.close()
    return report


async def _all(
    search: _Searcher,
    follow_ups: list[FollowUp],
    variants: Sequence[str],
    report: Report,
    progress: Callable[[], None] | None,
) -> None:
    hits: dict[str, dict[str, int]] = {v: {f"{g}@{k}": 0 for g in ("doc", "chunk") for k in KS} for v in variants}
    times: dict[str, list[float]] = {v: [] for v in variants}
    for item in follow_ups:
        for variant in variants:
            query_cache.results(search.container.store.engine).clear()  # measure searches, not the caches
            query_cache.clear_embeddings()
            started = time.perf_counter()
            found = await anyio.to_thread.run_sync(search.one, variant, item, report)
            times[variant].append((time.perf_counter() - started) * 1000)
            for k in KS:
                top = found.candidates[:k]
                hits[variant][f"doc@{k}"] += any(c.document_name == item.document for c in top)
                hits[variant][f"chunk@{k}"] += any(
                    c.document_name == item.document and item.fact in c.text for c in top
                )
        if progress is not None:
            progress()
    n = len(follow_ups)
    report.recall = {v: {m: round(c / n, 4) for m, c in h.items()} for v, h in hits.items()}
    report.ms = {v: round(sorted(t)[len(t) // 2], 2) for v, t in times.items() if t}


@dataclass
class _Searcher:
    container: Container
    project_id: int
    settings: Settings
    weights: conversation.HistoryWeights
    model: ChatModel | None
    rewrite_timeout: float

    @property
    def embedder(self) -> Embedder:
        return self.container.embedder

    def params(self) -> RetrievalParams:
        return RetrievalParams.for_session(self.settings.rag, top_k=max(KS), threshold=0.0)

    def plain(self, text: str) -> RetrievalResult:
        vector = query_cache.embed(self.embedder, [text])[0]
        return retrieve(self.container.store, self.embedder, self.project_id, text, self.params(), query_vector=vector)

    def turn(self, item: FollowUp, quality: Quality) -> RetrievalResult:
        rag = RagSettings.of(self.settings.rag).model_copy(
            update={"top_k": max(KS), "threshold": 0.0, "quality": quality, "rewrite": RewriteMode.OFF}
        )
        asker = turn_search.Asker(self.project_id, self.settings.llm.provider, self.settings.llm.model, rag)
        steps = turn_search.search(
            self.container.store,
            lambda: self.embedder,
            self.settings,
            self.container.chat_models,
            asker,
            item.message,
            item.earlier,
            params=self.params(),
        )
        found = anyio.from_thread.run(turn_search.last, steps)  # this runs in a worker thread of the bench's loop
        assert found.result is not None
        return found.result

    def one(self, variant: str, item: FollowUp, report: Report) -> RetrievalResult:
        if variant in ("balanced", "thorough"):
            return self.turn(item, Quality(variant))
        if variant == "raw":
            return self.plain(item.message)
        if variant == "standalone":
            return self.plain(item.standalone)
        if variant == "rewrite" and self.model is not None:
            done = anyio.from_thread.run(rewrite.rewrite, self.model, item.message, item.earlier, self.rewrite_timeout)
            report.rewrites[done.outcome] = report.rewrites.get(done.outcome, 0) + 1
            if len(report.examples) < 12:
                report.examples.append({"message": item.message, "rewritten": str(done.query), "outcome": done.outcome})
            if done.query is not None:
                return self.plain(done.query)
        query = conversation.build(self.embedder, item.message, item.earlier, self.weights)
        params = self.params()
        if variant == "history_no_hygiene":
            params = replace(params, dedupe=False, per_document=0, merge_adjacent=False)
        return retrieve(
            self.container.store,
            self.embedder,
            self.project_id,
            query.text,
            params,
            query_vector=query.vector,
            terms=query.terms,
        )
