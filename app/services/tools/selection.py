"""Which tools a message is offered, chosen by retrieval, in three stages (each kept in the result):

1. **filter**: only the tools of the session's allowed groups (none allowed: no tools);
2. **rank**: the message is embedded and the allowed tools ranked by cosine similarity against their
   stored vectors (each tool's ``{name} — {description}`` and example requests, embedded and
   averaged: app/services/tools/catalog.py); the best ``top_k`` (RAGCHAT_TOOLS__TOP_K, 6) that reach
   ``min_score`` (RAGCHAT_TOOLS__MIN_SCORE, none by default) are kept;
3. **core**: the ``core`` tools of those groups are added, whatever their score.

A tool whose vector is missing (the embedder failed when it was saved), stale (its text changed) or
of another space (the embedder changed) is embedded now, with the message, and stored: no space
ever mixes. When the embedder fails here, every allowed tool is offered, and the result says so
(``degraded``) and the log says why: a model with too many tools still works, one without none does.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from sqlalchemy import delete, select

from app.db import locks
from app.db.database import Database
from app.db.models import Tool, ToolVector
from app.errors import StorageError, ValidationError
from app.rag.sanitize import clean_message
from app.services import sessions
from app.services.people.access import THE_SERVER, Caller
from app.services.tools import catalog as tools
from app.services.tools.catalog import EmbedderFactory, text_hash, tool_text, tool_vectors
from app.settings import Settings, ToolSettings

log = logging.getLogger("ragchat.tools")


class Reason(StrEnum):
    RANKED = "ranked"  # among the top_k by similarity
    CORE = "core"  # a core tool of an allowed group
    ALL = "all"  # degraded: every allowed tool


@dataclass(frozen=True)
class Candidate:
    """An allowed tool and its cosine similarity to the message (None when it could not be ranked)."""

    tool: Tool
    score: float | None


@dataclass(frozen=True)
class Chosen:
    tool: Tool
    score: float | None
    reason: Reason


@dataclass(frozen=True)
class Selection:
    groups: tuple[str, ...]  # stage 1: the allowed groups
    candidates: tuple[Candidate, ...]  # stage 2: every allowed tool, best first
    chosen: tuple[Chosen, ...]  # stages 2 and 3: what the model is offered, ranked first, then core
    top_k: int
    min_score: float | None
    degraded: str | None = None  # why every allowed tool is offered instead, when so
    embedded_tools: int = 0  # tool vectors built during this selection (missing, stale or other space)


def select_tools(
    store: Database,
    embedder: EmbedderFactory,
    settings: ToolSettings,
    groups: Sequence[str],
    message: str,
    project_id: int,
) -> Selection:
    """The three stages for ``message`` over the tools of ``groups`` that a chat in the knowledge
    base ``project_id`` may call: the server's, and that knowledge base's own."""
    allowed_groups = tuple(sorted(set(groups)))
    top_k, min_score = settings.top_k, settings.min_score
    if not allowed_groups:
        return Selection((), (), (), top_k, min_score)
    with store.read() as db:
        mine = Tool.project_id.is_(None) | (Tool.project_id == project_id)
        allowed = list(db.scalars(select(Tool).where(Tool.tool_group.in_(allowed_groups), mine).order_by(Tool.name)))
        stored = {
            v.tool_id: v for v in db.scalars(select(ToolVector).where(ToolVector.tool_id.in_(t.id for t in allowed)))
        }
    try:
        scores, built = _scores(store, embedder, allowed, stored, message)
    except Exception as exc:  # the embedder (or its store) failed: offer everything, say so
        log.warning("tool selection degraded to all %d allowed tools: %s", len(allowed), exc, exc_info=True)
        reason = f"the embedder failed ({type(exc).__name__}): every allowed tool is offered"
        candidates = tuple(Candidate(t, None) for t in allowed)
        everything = tuple(Chosen(t, None, Reason.ALL) for t in allowed)
        return Selection(allowed_groups, candidates, everything, top_k, min_score, degraded=reason)
    order = sorted(range(len(allowed)), key=lambda i: (-scores[i], allowed[i].name))
    candidates = tuple(Candidate(allowed[i], scores[i]) for i in order)
    ranked = [c for c in candidates if min_score is None or c.score is None or c.score >= min_score][:top_k]
    chosen: list[Chosen] = [Chosen(c.tool, c.score, Reason.RANKED) for c in ranked]
    taken = {c.tool.id for c in chosen}
    chosen += [Chosen(c.tool, c.score, Reason.CORE) for c in candidates if c.tool.core and c.tool.id not in taken]
    return Selection(allowed_groups, candidates, tuple(chosen), top_k, min_score, embedded_tools=built)


def _scores(
    store: Database, embedder: EmbedderFactory, allowed: list[Tool], stored: dict[int, ToolVector], message: str
) -> tuple[list[float], int]:
    model = embedder()
    space = model.space.label
    texts = [tool_text(t) for t in allowed]
    stale = [i for i, t in enumerate(allowed) if not _current(stored.get(t.id), space, texts[i])]
    query, *built = tool_vectors(model, [allowed[i] for i in stale], prefix=[message])
    rebuilt = {allowed[i].id: built[n] for n, i in enumerate(stale)}
    if rebuilt:
        _store(store, {allowed[i].id: (texts[i], rebuilt[allowed[i].id]) for i in stale}, space)
    matrix = np.stack(
        [rebuilt[t.id] if t.id in rebuilt else np.frombuffer(stored[t.id].vector, dtype=np.float32) for t in allowed]
    )
    # Rows are L2-normalised (the Embedder contract), so the dot product is the cosine.
    return [float(s) for s in np.clip(matrix @ query, -1.0, 1.0)], len(stale)


def _current(vector: ToolVector | None, space: str, text: str) -> bool:
    return vector is not None and vector.space == space and vector.text_hash == text_hash(text)


def _store(store: Database, built: dict[int, tuple[str, np.ndarray]], space: str) -> None:
    """Keep the vectors built now. A refused write costs only their rebuilding next time: this
    selection has them already, so it goes on (logged)."""
    try:
        with store.write() as db:
            locks.take_turns(db, "tool vectors")  # two servers storing the same tool's vector at once
            existing = set(db.scalars(select(Tool.id).where(Tool.id.in_(built))))
            db.execute(delete(ToolVector).where(ToolVector.tool_id.in_(existing)))
            for tool_id in existing:  # a tool deleted meanwhile keeps no vector
                text, vector = built[tool_id]
                db.add(ToolVector(tool_id=tool_id, space=space, text_hash=text_hash(text), vector=vector.tobytes()))
    except StorageError as exc:
        log.warning("%d tool vectors built but not stored (%s): they are rebuilt next time", len(built), exc)
        return
    log.info("built %d tool vectors in %s", len(existing), space)


def preview(
    store: Database,
    embedder: EmbedderFactory,
    settings: Settings,
    session_id: int,
    message: str,
    *,
    caller: Caller = THE_SERVER,
) -> Selection:
    """What the chat session would offer its model for ``message`` now (no model is called)."""
    try:
        text = clean_message(message, settings.chat.max_message_chars)
    except ValidationError as exc:
        raise ValidationError("message", exc.reason) from None
    chat = sessions.get(store, session_id, caller=caller)
    groups = tools.session_groups(store, [session_id])[session_id]
    return select_tools(store, embedder, settings.tools, groups, text, chat.project_id)
