"""Search a knowledge base directly, or preview what a chat session would retrieve right now."""

from __future__ import annotations

from dataclasses import dataclass

from app.db.database import Database
from app.errors import ValidationError
from app.llm.base import ChatModels, Embedder
from app.rag import conversation
from app.rag.retrieval import RetrievalParams, RetrievalResult, retrieve
from app.rag.retrieval_mode import RetrievalMode
from app.rag.sanitize import clean_message
from app.rag.session_settings import RagSettings
from app.services import chat_store, projects, sessions, turn_search
from app.services.sessions import SessionChanges, validate_changes
from app.services.trace_model import TraceSearch
from app.settings import Settings


def params(settings: Settings, *, top_k: int, threshold: float, mode: RetrievalMode) -> RetrievalParams:
    validate_changes(SessionChanges(top_k=top_k, threshold=threshold))
    return RetrievalParams.for_session(settings.rag, top_k=top_k, threshold=threshold, mode=mode)


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
) -> RetrievalResult:
    text = _query(settings, query)
    projects.get(store, project_id)
    chosen = settings.rag.threshold if threshold is None else threshold
    return retrieve(store, embedder, project_id, text, params(settings, top_k=top_k, threshold=chosen, mode=mode))


@dataclass(frozen=True)
class Preview:
    result: RetrievalResult
    search: TraceSearch


def preview(
    store: Database,
    embedder: Embedder,
    settings: Settings,
    models: ChatModels,
    chat_id: int,
    message: str,
    *,
    top_k: int | None,
    threshold: float | None,
) -> Preview:
    """What the chat session ``chat_id`` would retrieve for ``message`` as its next turn, under its
    settings (or the overrides being tuned): the same search a turn runs (app/services/turn_search.py),
    after the session's recent user turns. The chat model is called only when that search would call
    it (a rewrite or a judgement the session's settings and model ask for). Runs in a worker thread."""
    text = _query(settings, message)
    chat = sessions.get(store, chat_id)
    rag = RagSettings.of(chat)
    rag = rag.model_copy(
        update={
            "top_k": rag.top_k if top_k is None else top_k,
            "threshold": rag.threshold if threshold is None else threshold,
        }
    )
    chosen = params(settings, top_k=rag.top_k, threshold=rag.threshold, mode=settings.rag.mode)
    earlier = conversation.user_turns(chat_store.recent(store, chat_id, settings.chat.history_turns))
    asker = turn_search.Asker(chat.project_id, chat.provider, chat.model, rag)
    found = turn_search.search(store, embedder, settings, models, asker, text, earlier, params=chosen)
    result = found.result or RetrievalResult(query=found.searched, mode=chosen.mode, params=chosen)
    return Preview(result, turn_search.trace_entry(found, rag))


def _query(settings: Settings, query: str) -> str:
    try:
        return clean_message(query, settings.chat.max_message_chars)
    except ValidationError as exc:
        raise ValidationError("query", exc.reason) from None
