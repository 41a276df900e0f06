"""Batch reads for the GraphQL DataLoaders: one SQL statement per call, however many keys.

Every function takes a list of keys and returns one result per key, in the order asked (None or
an empty list where there is nothing), which is the contract a DataLoader's batch function has.
Listing 50 sessions with their last messages and those messages' citations costs 3 statements,
not 101.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import TypeVar

from sqlalchemy import func, select

from app.db.database import Database
from app.db.models import ChatMessage, Citation, Document, Project
from app.services import projects
from app.services.projects import ProjectStats

R = TypeVar("R")


def _one_each(rows: Iterable[R], key: Callable[[R], int], keys: list[int]) -> list[R | None]:
    found = {key(row): row for row in rows}
    return [found.get(k) for k in keys]


def _all_of_each(rows: Iterable[R], key: Callable[[R], int], keys: list[int]) -> list[list[R]]:
    grouped: dict[int, list[R]] = defaultdict(list)
    for row in rows:
        grouped[key(row)].append(row)
    return [grouped[k] for k in keys]


def projects_by_id(store: Database, ids: list[int]) -> list[Project | None]:
    with store.read() as db:
        return _one_each(db.scalars(select(Project).where(Project.id.in_(ids))), lambda p: p.id, ids)


def project_stats(store: Database, ids: list[int]) -> list[ProjectStats]:
    found = projects.stats(store, ids)
    return [found[i] for i in ids]


def documents_by_project(store: Database, project_ids: list[int]) -> list[list[Document]]:
    """Each project's documents, by name."""
    query = select(Document).where(Document.project_id.in_(project_ids)).order_by(Document.name)
    with store.read() as db:
        return _all_of_each(db.scalars(query), lambda d: d.project_id, project_ids)


def last_messages(store: Database, session_ids: list[int]) -> list[ChatMessage | None]:
    """Each chat session's newest message."""
    latest = (
        select(func.max(ChatMessage.id)).where(ChatMessage.session_id.in_(session_ids)).group_by(ChatMessage.session_id)
    )
    query = select(ChatMessage).where(ChatMessage.id.in_(latest))
    with store.read() as db:
        return _one_each(db.scalars(query), lambda m: m.session_id, session_ids)


def citations_by_message(store: Database, message_ids: list[int]) -> list[list[Citation]]:
    """Each message's citations, by marker."""
    query = select(Citation).where(Citation.message_id.in_(message_ids)).order_by(Citation.marker)
    with store.read() as db:
        return _all_of_each(db.scalars(query), lambda c: c.message_id, message_ids)
