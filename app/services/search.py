"""Search a knowledge base directly, or preview what a chat session would retrieve right now."""

from __future__ import annotations

from app.db.database import Database
from app.errors import ValidationError
from app.llm.base import Embedder
from app.rag.retrieval import RetrievalParams, RetrievalResult, retrieve
from app.rag.retrieval_mode import RetrievalMode
from app.rag.sanitize import clean_message
from app.services import projects, sessions
from app.services.sessions import SessionChanges, validate_changes
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


def preview(
    store: Database,
    embedder: Embedder,
    settings: Settings,
    chat_id: int,
    message: str,
    *,
    top_k: int | None,
    threshold: float | None,
) -> RetrievalResult:
    """What the chat session ``chat_id`` would retrieve for ``message`` under its settings (or the
    overrides being tuned), with no LLM call."""
    text = _query(settings, message)
    chat = sessions.get(store, chat_id)
    chosen = params(
        settings,
        top_k=chat.top_k if top_k is None else top_k,
        threshold=chat.threshold if threshold is None else threshold,
        mode=settings.rag.mode,
    )
    return retrieve(store, embedder, chat.project_id, text, chosen)


def _query(settings: Settings, query: str) -> str:
    try:
        return clean_message(query, settings.chat.max_message_chars)
    except ValidationError as exc:
        raise ValidationError("query", exc.reason) from None
