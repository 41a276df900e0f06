"""A chat turn's search in its conversation (issue 15): history-aware query, the chat model's rewrite
(used, failed, timed out), evaluate-and-widen (exits on adequate, on budget, on no improvement), the
progress events, the caches and their invalidation, and the retrieval preview taking the same path.
Real migrated database, the real chat service; fake providers implementing the real Protocols."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from typing import Any

import anyio.from_thread
import pytest

from app.container import Container
from app.errors import ProviderUnavailableError
from app.llm.base import ModelCapabilities
from app.rag.ingest.pipeline import Source
from app.rag.search import query_cache
from app.rag.search.conversation_settings import Quality, RewriteMode
from app.rag.search.retrieval import RetrievalParams, retrieve
from app.services import documents, search
from app.services.chat import turn_search
from app.services.chat.events import RetrievalEvent, SearchProgressEvent, TokenEvent
from app.services.chat.trace_model import RetrievalTrace, parse
from tests.fakes import FakeChatModel, FakeEmbedder
from tests.services.chat.test_service import Rig

OFFICES = {
    "leeds.md": "# Leeds office\n\nThe Leeds office has 38 car parking spaces and 142 desks.",
    "lisbon.md": "# Lisbon office\n\nThe Lisbon office has 3 car parking spaces and 28 desks.",
}
FIRST = "Tell me about the Leeds office."
FOLLOW_UP = "How many car parking spaces does it have?"
STANDALONE = "How many car parking spaces does the Leeds office have?"
ANSWER = "The Leeds office has 38 car parking spaces [1]."
CAPABLE = ModelCapabilities(query_rewriting=True)


class OfficeRig(Rig):
    def __init__(self, container: Container, model: FakeChatModel) -> None:
        super().__init__(container, model, FakeEmbedder())
        documents.ingest(
            container.store,
            self.embedder,
            container.settings.ingest,
            self.project_id,
            [Source.from_bytes(n, t.encode()) for n, t in OFFICES.items()],
        )

    def trace(self, events: list) -> RetrievalTrace:  # type: ignore[type-arg]
        row, _ = self.message(events[-1].message_id)
        trace = parse(row.trace)
        assert trace is not None
        return trace

    async def conversation(self, sid: int, *answers: str | Exception) -> list:  # type: ignore[type-arg]
        """Ask FIRST, then FOLLOW_UP with ``answers`` scripted for the follow-up's model calls."""
        self.model.enqueue("The Leeds office has 142 desks [1].")
        await self.ask(sid, FIRST)
        self.model.enqueue(*answers)
        return await self.ask_all(sid, FOLLOW_UP)


@pytest.fixture
def plain(container: Container) -> OfficeRig:
    return OfficeRig(container, FakeChatModel())


@pytest.fixture
def capable(container: Container) -> OfficeRig:
    return OfficeRig(container, FakeChatModel(capabilities=CAPABLE))


def _kept(trace: RetrievalTrace) -> list[str]:
    by_id = {c.chunk_id: c.document_name for c in trace.candidates}
    return [by_id[i] for i in trace.source_chunk_ids or []]


async def test_a_follow_up_is_searched_with_the_earlier_user_turns(plain: OfficeRig) -> None:
    sid = plain.new_chat(top_k=1, threshold=0.0)
    events = await plain.conversation(sid, ANSWER)
    trace = plain.trace(events)
    assert trace.search is not None and trace.search.earlier == [FIRST] and trace.search.searched == FOLLOW_UP
    assert trace.search.rewrite.outcome == "skipped" and "does not declare" in trace.search.rewrite.reason
    assert _kept(trace) == ["leeds.md"]
    # The same message alone finds the other office first.
    alone = retrieve(plain.container.store, plain.embedder, plain.project_id, FOLLOW_UP, RetrievalParams(top_k=1))
    assert [c.document_name for c in alone.kept] == ["lisbon.md"]


async def test_the_preview_shows_what_the_next_turn_retrieves(plain: OfficeRig) -> None:
    sid = plain.new_chat(top_k=1, threshold=0.0)
    plain.model.enqueue("The Leeds office has 142 desks [1].")
    await plain.ask(sid, FIRST)
    settings = plain.container.settings
    shown = await search.preview(
        plain.container.store, lambda: plain.embedder, settings, plain.models, None, sid, FOLLOW_UP,
        top_k=None, threshold=None,
    )  # fmt: skip
    plain.model.enqueue(ANSWER)
    trace = plain.trace(await plain.ask(sid, FOLLOW_UP))
    assert [c.document_name for c in shown.result.kept] == _kept(trace) == ["leeds.md"]
    assert shown.search.earlier == [FIRST] and shown.search.searched == FOLLOW_UP


async def test_a_rewrite_is_searched_and_streamed_before_any_token(capable: OfficeRig) -> None:
    sid = capable.new_chat(top_k=1, threshold=0.0)
    events = await capable.conversation(sid, STANDALONE, ANSWER)
    progress = [e for e in events if isinstance(e, SearchProgressEvent)]
    first_token = next(i for i, e in enumerate(events) if isinstance(e, TokenEvent))
    assert progress and events.index(progress[0]) < first_token
    assert progress[0].rewritten and progress[0].query == STANDALONE
    trace = capable.trace(events)
    assert trace.search is not None and trace.search.rewrite.outcome == "used"
    assert trace.search.searched == STANDALONE and trace.search.earlier == []  # standalone: no history needed
    assert "rewrite" in trace.timings_ms and _kept(trace) == ["leeds.md"]
    rewrite_prompt = capable.model.history[1]
    assert rewrite_prompt[-1].content == f"Earlier question: {FIRST}\nLast question: {FOLLOW_UP}"


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (ProviderUnavailableError("the model is down", provider="fake"), "the model failed: the model is down"),
        ("   ", "not a usable question"),
    ],
)
async def test_a_failed_rewrite_falls_back_to_the_history_aware_query(
    capable: OfficeRig, reply: str | Exception, reason: str
) -> None:
    sid = capable.new_chat(top_k=1, threshold=0.0)
    events = await capable.conversation(sid, reply, ANSWER)
    trace = capable.trace(events)
    assert trace.search is not None and trace.search.rewrite.outcome == "failed"
    assert reason in trace.search.rewrite.reason
    assert trace.search.searched == FOLLOW_UP and trace.search.earlier == [FIRST]
    assert _kept(trace) == ["leeds.md"] and not next(e for e in events if isinstance(e, SearchProgressEvent)).rewritten


async def test_a_slow_rewrite_times_out_and_falls_back(container: Container) -> None:
    settings = container.settings.model_copy(
        update={"chat": container.settings.chat.model_copy(update={"rewrite_timeout": 0.2})}
    )
    rig = OfficeRig(container, FakeChatModel(capabilities=CAPABLE))
    rig.service.settings = settings
    sid = rig.new_chat(top_k=1, threshold=0.0)
    rig.model.enqueue("The Leeds office has 142 desks [1].")
    await rig.ask(sid, FIRST)
    rig.model.first_token_delay = 1.0
    rig.model.enqueue(STANDALONE, ANSWER)
    trace = rig.trace(await rig.ask_all(sid, FOLLOW_UP))
    assert trace.search is not None and trace.search.rewrite.outcome == "timed_out"
    assert trace.search.rewrite.reason == "no rewrite within 0.2 s" and trace.search.searched == FOLLOW_UP


async def test_rewrite_off_is_never_asked_even_of_a_capable_model(capable: OfficeRig) -> None:
    sid = capable.new_chat(top_k=1, threshold=0.0, rewrite=RewriteMode.OFF)
    events = await capable.conversation(sid, ANSWER)
    trace = capable.trace(events)
    assert trace.search is not None and trace.search.rewrite.outcome == "skipped"
    assert len(capable.model.history) == 2  # the two answers, no rewrite


async def test_the_loop_stops_once_a_pass_is_adequate(plain: OfficeRig) -> None:
    sid = plain.new_chat(top_k=2, threshold=0.0, quality=Quality.THOROUGH)
    plain.model.enqueue(ANSWER)
    events = await plain.ask_all(sid, "Lisbon office car parking spaces")
    progress = [e for e in events if isinstance(e, SearchProgressEvent)]
    assert [(p.number, p.budget, p.decision) for p in progress] == [(1, 4, "adequate")]
    (only,) = plain.trace(events).search.passes  # type: ignore[union-attr]
    assert only.adequate and only.judge == "heuristic" and "key terms covered 100%" in only.reason


@pytest.mark.parametrize(
    ("quality", "decisions"), [(Quality.QUICK, ["budget"]), (Quality.BALANCED, ["widen", "no_improvement"])]
)
async def test_the_loop_stops_on_budget_or_when_widening_finds_nothing_better(
    plain: OfficeRig, quality: Quality, decisions: list[str]
) -> None:
    sid = plain.new_chat(threshold=0.95, quality=quality)
    plain.model.enqueue("I could not find that in the documents.")
    events = await plain.ask_all(sid, "quantum chromodynamics lattice")
    progress = [e for e in events if isinstance(e, SearchProgressEvent)]
    assert [p.decision for p in progress] == decisions
    passes = plain.trace(events).search.passes  # type: ignore[union-attr]
    assert [p.decision for p in passes] == decisions
    if len(passes) == 2:  # the widened pass: more candidates, a lower threshold (a floor below the session's)
        assert passes[1].candidates > passes[0].candidates and passes[1].threshold == pytest.approx(0.9)
    retrieval = next(e for e in events if isinstance(e, RetrievalEvent))
    assert retrieval.no_context


async def test_a_capable_judge_decides_and_a_widened_pass_can_satisfy_it(container: Container) -> None:
    rig = OfficeRig(container, FakeChatModel(capabilities=ModelCapabilities(retrieval_judging=True)))
    sid = rig.new_chat(top_k=1, threshold=0.0, quality=Quality.THOROUGH)
    rig.model.enqueue("NO", "YES", ANSWER)
    events = await rig.ask_all(sid, "Lisbon office desks")
    passes = rig.trace(events).search.passes  # type: ignore[union-attr]
    assert [(p.judge, p.decision) for p in passes] == [("model", "widen"), ("model", "adequate")]
    assert "Question: Lisbon office desks" in rig.model.history[0][-1].content


async def test_results_are_cached_until_the_knowledge_base_changes(plain: OfficeRig) -> None:
    sid = plain.new_chat(top_k=2, threshold=0.0, quality=Quality.QUICK)
    store, settings = plain.container.store, plain.container.settings

    async def preview() -> tuple[bool | None, int, int, list[str]]:
        shown = await search.preview(
            store, lambda: plain.embedder, settings, plain.models, None, sid, "car parking",
            top_k=None, threshold=None,
        )  # fmt: skip
        (one,) = shown.search.passes
        cache = shown.search.cache
        return one.cache_hit, cache.embedding_hits, cache.embedding_misses, [c.document_name for c in shown.result.kept]

    query_cache.clear_embeddings()
    assert (await preview())[:3] == (False, 0, 1)
    assert (await preview())[:3] == (True, 1, 0)
    documents.ingest(
        store, plain.embedder, settings.ingest, plain.project_id,
        [Source.from_bytes("porto.md", b"# Porto office\n\nThe Porto office has 9 car parking spaces.")],
    )  # fmt: skip
    hit, _, _, kept = await preview()
    assert hit is False and "porto.md" in kept
    assert (await preview())[0] is True
    porto = next(d for d in documents.list_for(store, plain.project_id) if d.name == "porto.md")
    documents.delete(store, porto.id)
    hit, _, _, kept = await preview()
    assert hit is False and "porto.md" not in kept


async def test_a_turn_s_retrieval_never_calls_back_from_a_thread_to_the_loop(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rewrite and the judge are awaited on the loop; only embedding and the search go to a
    worker thread, which never waits on the loop (no ``anyio.from_thread``)."""

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("a worker thread called back to the event loop")

    monkeypatch.setattr(anyio.from_thread, "run", refused)
    monkeypatch.setattr(anyio.from_thread, "run_sync", refused)
    able = ModelCapabilities(query_rewriting=True, retrieval_judging=True)
    rig = OfficeRig(container, FakeChatModel(capabilities=able))
    sid = rig.new_chat(top_k=1, threshold=0.0, quality=Quality.THOROUGH)
    events = await rig.conversation(sid, STANDALONE, "YES", ANSWER)
    progress = [e for e in events if isinstance(e, SearchProgressEvent)]
    assert progress and progress[0].rewritten and progress[0].query == STANDALONE
    trace = rig.trace(events)
    assert trace.search is not None and trace.search.rewrite.outcome == "used"
    assert [(p.judge, p.decision) for p in trace.search.passes] == [("model", "adequate")]
    assert _kept(trace) == ["leeds.md"] and events[-1].answer.message.content == ANSWER
    source = inspect.getsource(turn_search)
    assert "from_thread" not in source and "_awaited" not in source


async def test_the_preview_runs_the_turn_s_own_retrieval(plain: OfficeRig, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    own = turn_search.retrieval

    def recorded(*args: Any, **kwargs: Any) -> AsyncIterator[turn_search.Pass | turn_search.Retrieved]:
        calls.append(args[6])  # the message
        return own(*args, **kwargs)

    monkeypatch.setattr(turn_search, "retrieval", recorded)
    sid = plain.new_chat(top_k=1, threshold=0.0)
    shown = await search.preview(
        plain.container.store, lambda: plain.embedder, plain.container.settings, plain.models, None, sid, FIRST,
        top_k=None, threshold=None,
    )  # fmt: skip
    plain.model.enqueue("The Leeds office has 142 desks [1].")
    trace = plain.trace(await plain.ask(sid, FIRST))
    assert calls == [FIRST, FIRST]
    assert [c.document_name for c in shown.result.kept] == _kept(trace) == ["leeds.md"]
