"""Search a knowledge base directly, or preview what a chat session would retrieve right now."""

from __future__ import annotations

from app.container import Container
from app.errors import ValidationError
from app.rag.retrieval import Mode, RetrievalParams, RetrievalResult, retrieve
from app.rag.sanitize import clean_message
from app.services import projects, sessions
from app.services.sessions import SessionChanges, validate_changes


def params(container: Container, *, top_k: int, threshold: float, mode: Mode) -> RetrievalParams:
    validate_changes(SessionChanges(top_k=top_k, threshold=threshold))
    return RetrievalParams.for_session(container.settings.rag, top_k=top_k, threshold=threshold, mode=mode)


def search(
    container: Container, project_id: int, query: str, *, top_k: int, threshold: float | None, mode: Mode
) -> RetrievalResult:
    text = _query(container, query)
    with container.db.read() as db:
        projects.get(db, project_id)
    chosen = container.settings.rag.threshold if threshold is None else threshold
    return retrieve(
        container.db, container.embedder, project_id, text, params(container, top_k=top_k, threshold=chosen, mode=mode)
    )


def preview(
    container: Container, session_id: int, message: str, *, top_k: int | None, threshold: float | None
) -> RetrievalResult:
    """What the session would retrieve for ``message`` under its settings (or the overrides being
    tuned), with no LLM call."""
    text = _query(container, message)
    session = sessions.get(container.db, session_id)
    chosen = params(
        container,
        top_k=session.top_k if top_k is None else top_k,
        threshold=session.threshold if threshold is None else threshold,
        mode=container.settings.rag.mode,
    )
    return retrieve(container.db, container.embedder, session.project_id, text, chosen)


def _query(container: Container, query: str) -> str:
    try:
        return clean_message(query, container.settings.chat.max_message_chars)
    except ValidationError as exc:
        raise ValidationError("query", exc.reason) from None
