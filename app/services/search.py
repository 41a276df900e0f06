"""Search a knowledge base directly, or preview what a chat session would retrieve right now."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import anyio.to_thread
from pydantic.alias_generators import to_camel

from app.db.database import Database
from app.errors import ValidationError
from app.llm.base import ChatModel, ChatModels, Embedder, Reranker
from app.rag.sanitize import clean_message
from app.rag.search import conversation, rewrite
from app.rag.search.document_filter import DocumentFilter
from app.rag.search.retrieval import RetrievalParams, RetrievalResult, retrieve
from app.rag.search.retrieval_mode import RetrievalMode
from app.rag.session_settings import RagSettings
from app.services import projects, sessions
from app.services.chat import ranking, turn_search
from app.services.chat import store as chat_store
from app.services.chat.slots import SlotPools
from app.services.chat.trace_model import TraceRanking, TraceSearch
from app.services.people.access import THE_SERVER, Caller
from app.services.sessions import SessionChanges, validate_changes
from app.settings import Settings


def params(
    settings: Settings, *, top_k: int, threshold: float, mode: RetrievalMode, only: DocumentFilter | None = None
) -> RetrievalParams:
    validate_changes(SessionChanges(top_k=top_k, threshold=threshold))
    validate_filter(only)
    return RetrievalParams.for_session(settings.rag, top_k=top_k, threshold=threshold, mode=mode, only=only)


def validate_filter(only: DocumentFilter | None, prefix: str = "filter.") -> None:
    """Every problem of a document filter at once, its fields named as the API names them."""
    if only is None:
        return
    problems = [(prefix + to_camel(name), message) for name, message in only.problems()]
    if problems:
        (field, message), *more = problems
        raise ValidationError(field, message, more=more)


def search(
    store: Database,
    embedder: Embedder,
    settings: Settings,
    project_id: int,
    query: str,
    *,
    top_k: int,
    threshold: float | None,
    mode: RetrievalMode,
    only: DocumentFilter | None = None,
    caller: Caller = THE_SERVER,
) -> RetrievalResult:
    """Search a knowledge base the caller may read (``only``: those of its documents)."""
    text = _query(settings, query)
    chosen = settings.rag.threshold if threshold is None else threshold
    searched = params(settings, top_k=top_k, threshold=chosen, mode=mode, only=only)
    projects.get(store, project_id, caller=caller)
    return retrieve(store, embedder, project_id, text, searched)


@dataclass(frozen=True)
class Preview:
    result: RetrievalResult
    search: TraceSearch
    ranking: TraceRanking | None  # the ranking stages that ran (expansion, reranking); None when none did


async def preview(
    store: Database,
    embedder: Callable[[], Embedder],
    settings: Settings,
    models: ChatModels,
    reranker: Reranker | None,
    chat_id: int,
    message: str,
    *,
    top_k: int | None,
    threshold: float | None,
    only: DocumentFilter | None = None,
    slots: SlotPools | None = None,
    caller: Caller = THE_SERVER,
) -> Preview:
    """What the chat session ``chat_id`` would retrieve for ``message`` as its next turn, under its
    settings (or the overrides being tuned): the turn's own retrieval (app/services/chat/turn_search.py:
    expansion, the search after the session's recent user turns, reranking). The chat model is called
    only when the turn would call it (expansion, a rewrite, a judgement the session's settings and
    model ask for), and then the preview takes a generation slot of ``slots`` for its run, as a turn
    does."""
    text = _query(settings, message)

    def load() -> tuple[RagSettings, turn_search.Asker, list[str]]:
        chat = sessions.get(store, chat_id, caller=caller)
        rag = RagSettings.of(chat)
        rag = rag.model_copy(
            update={
                "top_k": rag.top_k if top_k is None else top_k,
                "threshold": rag.threshold if threshold is None else threshold,
            }
        )
        earlier = conversation.user_turns(chat_store.recent(store, chat_id, settings.chat.history_turns))
        return rag, turn_search.Asker(chat.project_id, chat.provider, chat.model, rag), earlier

    rag, asker, earlier = await anyio.to_thread.run_sync(load)
    validate_filter(only)
    chosen = params(
        settings, top_k=rag.top_k, threshold=rag.threshold, mode=settings.rag.mode, only=only or rag.document_filter
    )
    model, _ = ranking.helper_model(models, asker.provider, asker.model, rag)
    # A preview that calls the chat model generates like a turn, so it waits for a slot like one
    # (BusyError when none comes free): otherwise previews would run past the generation cap.
    slot = None
    if slots is not None and _calls_model(models, asker, earlier, helper=model):
        slot = await slots.acquire(asker.provider, asker.model)
    try:
        return await _preview(store, embedder, settings, reranker, text, asker, earlier, chosen, models)
    finally:
        if slot is not None:
            slot.release()


def _calls_model(models: ChatModels, asker: turn_search.Asker, earlier: list[str], *, helper: ChatModel | None) -> bool:
    """Whether the preview may call the session's chat model: expansion or the judge (``helper``), a
    rewrite of the message, or a judgement of a search pass (app/services/chat/turn_search.py)."""
    capabilities = models.capabilities(asker.provider, asker.model)
    rewrites = rewrite.wanted(asker.rag.rewrite, capabilities, earlier) is None
    judges = capabilities.retrieval_judging and asker.rag.quality.passes > 1
    return helper is not None or rewrites or judges


async def _preview(
    store: Database,
    embedder: Callable[[], Embedder],
    settings: Settings,
    reranker: Reranker | None,
    text: str,
    asker: turn_search.Asker,
    earlier: list[str],
    chosen: RetrievalParams,
    models: ChatModels,
) -> Preview:
    steps = turn_search.retrieval(store, embedder, settings, models, reranker, asker, text, earlier, params=chosen)
    done = await turn_search.last(steps)
    if done.error is not None:
        raise done.error
    assert done.found is not None  # a search that did not fail
    result = done.result or RetrievalResult(query=done.found.searched, mode=chosen.mode, params=chosen)
    shown = done.stages.ranking if done.stages.on else None
    return Preview(result, turn_search.trace_entry(done.found, asker.rag), shown)


def _query(settings: Settings, query: str) -> str:
    try:
        return clean_message(query, settings.chat.max_message_chars)
    except ValidationError as exc:
        raise ValidationError("query", exc.reason) from None
