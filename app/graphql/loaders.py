"""Per-request DataLoaders: one SQL statement per kind of thing, however many parents ask.

Each loader is a batch read from :mod:`app.services.batches`, run in a worker thread (sync
SQLAlchemy); the loaders hold no queries of their own. The loaders that read a thing by its id
(a knowledge base, a document) ask with the request's caller, so a nested field never shows one
from a knowledge base the caller does not see; the paged lists hang under a parent the caller was
allowed to read, in the same knowledge base.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from functools import partial
from typing import TypeVar

import anyio.to_thread
from strawberry.dataloader import DataLoader

from app.container import Container
from app.services import batches, documents
from app.services.people.access import Caller
from app.services.records import Document, Project
from app.services.tools import calls as tool_calls
from app.services.tools import catalog as tools

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def _loader(fn: Callable[[list[K]], Sequence[V]]) -> DataLoader[K, V]:
    async def batch(keys: list[K]) -> Sequence[V]:
        return await anyio.to_thread.run_sync(fn, list(keys))

    return DataLoader(load_fn=batch)


class Loaders:
    def __init__(self, container: Container, caller: Callable[[], Caller]) -> None:
        store = container.store
        # The caller is read when a batch runs: a websocket's is named after its context is made.
        self.project: DataLoader[int, Project | None] = _loader(
            lambda ids: batches.projects_by_id(store, ids, caller=caller())
        )
        self.person = _loader(partial(batches.people_by_id, store))
        self.project_stats = _loader(partial(batches.project_stats, store))
        # Keyed by (parent id, page request): parents asking for the same page are read together.
        self.document_pages = _loader(partial(batches.document_pages, store))
        self.chunk_pages = _loader(partial(batches.chunk_pages, store))
        self.message_pages = _loader(partial(batches.message_pages, store))
        self.last_message = _loader(partial(batches.last_messages, store))
        self.job_pages = _loader(partial(batches.job_pages, store))
        self.job_items = _loader(partial(batches.job_items, store))
        self.document: DataLoader[int, Document | None] = _loader(
            lambda ids: batches.documents_by_id(store, ids, caller=caller())
        )
        self.citations_by_message = _loader(partial(batches.citations_by_message, store))
        self.tool_groups: DataLoader[int, list[str]] = _loader(
            lambda ids: list(tools.session_groups(store, ids).values())
        )
        self.tool_calls_by_message = _loader(partial(tool_calls.by_messages, store))
        # Under a Document the caller was allowed to read.
        self.document_tags: DataLoader[int, list[str]] = _loader(partial(documents.tags_by_document, store))
        self.project_tags: DataLoader[int, list[tuple[str, int]]] = _loader(partial(documents.tag_counts, store))
