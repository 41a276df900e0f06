"""Batch reads for the GraphQL DataLoaders: one SQL statement per call, however many keys.

Every function takes a list of keys and returns one result per key, in the order asked (None or
an empty list where there is nothing), which is the contract a DataLoader's batch function has.
Listing 50 sessions with their last messages and those messages' citations costs 3 statements,
not 101. Paged lists (a page of each session's messages) are keyed by parent and page request; the
parents asking for the same page are read together (app/services/pages.py: the page in one
statement, the counts in one more, and one for what lies behind a cursor when there is one).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import TypeVar

from sqlalchemy import func, select

from app.db.database import Database
from app.db.models import ChatMessage, Chunk, Citation, Document, IngestionItem, IngestionJob, Project, User
from app.services import documents, projects, sessions
from app.services.ingestion import jobs
from app.services.pages import Page, PageRequest
from app.services.people import access
from app.services.people.access import THE_SERVER, Caller
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


def projects_by_id(store: Database, ids: list[int], *, caller: Caller = THE_SERVER) -> list[Project | None]:
    """The knowledge bases of ``ids`` the caller sees (None for the others, as for missing ones)."""
    with store.read() as db:
        query = select(Project).where(Project.id.in_(ids))
        if (visible := access.visible_projects(db, caller)) is not None:
            query = query.where(Project.id.in_(visible))
        return _one_each(db.scalars(query), lambda p: p.id, ids)


def people_by_id(store: Database, ids: list[int]) -> list[User | None]:
    """The people of ``ids`` (a chat's owner: whoever may read the chat may see who made it)."""
    with store.read() as db:
        return _one_each(db.scalars(select(User).where(User.id.in_(ids))), lambda u: u.id, ids)


def project_stats(store: Database, ids: list[int]) -> list[ProjectStats]:
    found = projects.stats(store, ids)
    return [found[i] for i in ids]


Paged = tuple[int, PageRequest]  # (parent id, the page asked of its list)


def _paged(read: Callable[[list[int], PageRequest], list[Page[R]]], keys: list[Paged]) -> list[Page[R]]:
    """One read per distinct page request, for all the parents that asked for it."""
    parents: dict[PageRequest, list[int]] = defaultdict(list)
    for parent, request in dict.fromkeys(keys):
        parents[request].append(parent)
    found: dict[Paged, Page[R]] = {}
    for request, ids in parents.items():
        found.update(((parent, request), got) for parent, got in zip(ids, read(ids, request), strict=True))
    return [found[key] for key in keys]


def document_pages(store: Database, keys: list[Paged]) -> list[Page[Document]]:
    """A page of each project's documents, by name."""
    return _paged(lambda ids, request: documents.pages_for(store, ids, request), keys)


def job_pages(store: Database, keys: list[Paged]) -> list[Page[IngestionJob]]:
    """A page of each project's ingestion jobs, newest first."""
    return _paged(lambda ids, request: jobs.pages_for(store, ids, request), keys)


def job_items(store: Database, job_ids: list[int]) -> list[list[IngestionItem]]:
    """Each ingestion job's items, in the order they were sent."""
    return jobs.items_of(store, job_ids)


def documents_by_id(store: Database, ids: list[int], *, caller: Caller = THE_SERVER) -> list[Document | None]:
    """The documents of ``ids`` the caller may read (None for the others, as for missing ones)."""
    return _one_each(documents.get_many(store, ids, caller=caller), lambda d: d.id, ids)


def chunk_pages(store: Database, keys: list[Paged]) -> list[Page[Chunk]]:
    """A page of each document's chunks, in document order."""
    return _paged(lambda ids, request: documents.chunk_pages(store, ids, request), keys)


def message_pages(store: Database, keys: list[Paged]) -> list[Page[ChatMessage]]:
    """A page of each chat session's messages, oldest first."""
    return _paged(lambda ids, request: sessions.message_pages(store, ids, request), keys)


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
