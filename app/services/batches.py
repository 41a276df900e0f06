"""Batch reads for the GraphQL DataLoaders: one SQL statement per call, however many keys.

Every function takes a list of keys and returns one result per key, in the order asked (None or
an empty list where there is nothing), which is the contract a DataLoader's batch function has.
Listing 50 sessions with their last messages and those messages' citations costs 3 statements,
not 101.
"""

from __future__ import annotations

from collections import defaultdict

from sqlalchemy import func, select

from app.db.database import Database
from app.db.models import ChatMessage, Citation, Document, Project
from app.services import projects
from app.services.projects import ProjectStats


def projects_by_id(store: Database, ids: list[int]) -> list[Project | None]:
    with store.read() as db:
        rows = {p.id: p for p in db.scalars(select(Project).where(Project.id.in_(ids)))}
    return [rows.get(i) for i in ids]


def project_stats(store: Database, ids: list[int]) -> list[ProjectStats]:
    found = projects.stats(store, ids)
    return [found[i] for i in ids]


def documents_by_project(store: Database, project_ids: list[int]) -> list[list[Document]]:
    """Each project's documents, by name."""
    grouped: dict[int, list[Document]] = defaultdict(list)
    with store.read() as db:
        query = select(Document).where(Document.project_id.in_(project_ids)).order_by(Document.name)
        for doc in db.scalars(query):
            grouped[doc.project_id].append(doc)
    return [grouped[i] for i in project_ids]


def last_messages(store: Database, session_ids: list[int]) -> list[ChatMessage | None]:
    """Each chat session's newest message."""
    latest = (
        select(func.max(ChatMessage.id)).where(ChatMessage.session_id.in_(session_ids)).group_by(ChatMessage.session_id)
    )
    with store.read() as db:
        rows = {m.session_id: m for m in db.scalars(select(ChatMessage).where(ChatMessage.id.in_(latest)))}
    return [rows.get(i) for i in session_ids]


def citations_by_message(store: Database, message_ids: list[int]) -> list[list[Citation]]:
    """Each message's citations, by marker."""
    grouped: dict[int, list[Citation]] = defaultdict(list)
    with store.read() as db:
        query = select(Citation).where(Citation.message_id.in_(message_ids)).order_by(Citation.marker)
        for cite in db.scalars(query):
            grouped[cite.message_id].append(cite)
    return [grouped[i] for i in message_ids]
