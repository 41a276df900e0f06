"""Per-request DataLoaders: one SQL statement per kind of thing, however many parents ask.

Listing 50 sessions with their last messages and those messages' citations costs 3 statements,
not 101. Each batch runs in a worker thread (sync SQLAlchemy).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import TypeVar

import anyio.to_thread
from sqlalchemy import func, select
from strawberry.dataloader import DataLoader

from app.db.database import Database
from app.db.models import ChatMessage, Citation, Document, Project
from app.services import projects
from app.services.projects import ProjectStats

K = TypeVar("K")
V = TypeVar("V")


def _loader(fn: Callable[[list[int]], Sequence[V]]) -> DataLoader[int, V]:
    async def batch(keys: list[int]) -> Sequence[V]:
        return await anyio.to_thread.run_sync(fn, list(keys))

    return DataLoader(load_fn=batch)


class Loaders:
    def __init__(self, store: Database) -> None:
        self.store = store
        self.project = _loader(self._projects)
        self.project_stats = _loader(self._stats)
        self.documents_by_project = _loader(self._documents)
        self.last_message = _loader(self._last_messages)
        self.citations_by_message = _loader(self._citations)

    def _projects(self, ids: list[int]) -> list[Project | None]:
        with self.store.read() as db:
            rows = {p.id: p for p in db.scalars(select(Project).where(Project.id.in_(ids)))}
        return [rows.get(i) for i in ids]

    def _stats(self, ids: list[int]) -> list[ProjectStats]:
        found = projects.stats(self.store, ids)
        return [found[i] for i in ids]

    def _documents(self, ids: list[int]) -> list[list[Document]]:
        grouped: dict[int, list[Document]] = defaultdict(list)
        with self.store.read() as db:
            for doc in db.scalars(select(Document).where(Document.project_id.in_(ids)).order_by(Document.name)):
                grouped[doc.project_id].append(doc)
        return [grouped[i] for i in ids]

    def _last_messages(self, ids: list[int]) -> list[ChatMessage | None]:
        latest = (
            select(func.max(ChatMessage.id)).where(ChatMessage.session_id.in_(ids)).group_by(ChatMessage.session_id)
        )
        with self.store.read() as db:
            rows = {m.session_id: m for m in db.scalars(select(ChatMessage).where(ChatMessage.id.in_(latest)))}
        return [rows.get(i) for i in ids]

    def _citations(self, ids: list[int]) -> list[list[Citation]]:
        grouped: dict[int, list[Citation]] = defaultdict(list)
        with self.store.read() as db:
            query = select(Citation).where(Citation.message_id.in_(ids)).order_by(Citation.marker)
            for cite in db.scalars(query):
                grouped[cite.message_id].append(cite)
        return [grouped[i] for i in ids]
