"""Knowledge-base reads: knowledge bases, documents and ingestion jobs."""

from __future__ import annotations

from typing import Annotated

import anyio.to_thread
import strawberry

from app.errors import RagchatError
from app.graphql import types
from app.graphql.connections import After, Before, First, Last, paged
from app.graphql.context import Info, caller_of
from app.graphql.errors import NotFoundError, parse_id, to_graphql
from app.graphql.knowledge import jobs as job_resolvers
from app.graphql.knowledge.document_types import Document
from app.graphql.results import (
    UNREADABLE,
    DocumentResult,
    IngestionJobResult,
    ProjectConnectionResult,
    ProjectResult,
    call,
)
from app.services import documents, projects, records
from app.services.pages import Page, PageRequest

_PROJECT_ID = strawberry.argument(description="The knowledge base.")


@strawberry.type
class KnowledgeQuery:
    @strawberry.field(description="The knowledge bases, by name; the first 50 unless asked otherwise.")
    async def projects(
        self, info: Info, first: First = None, after: After = None, last: Last = None, before: Before = None
    ) -> ProjectConnectionResult:
        store, caller = info.context.container.store, caller_of(info)

        async def load(request: PageRequest) -> Page[records.Project]:
            return await anyio.to_thread.run_sync(lambda: projects.list_page(store, request, caller=caller))

        return await paged(
            info,
            types.ProjectConnection,
            types.PROJECT_CURSOR,
            load,
            types.Project.of,
            first=first,
            after=after,
            last=last,
            before=before,
        )

    @strawberry.field(description="One knowledge base.")
    async def project(self, info: Info, id: Annotated[strawberry.ID, _PROJECT_ID]) -> ProjectResult:
        try:
            pid = parse_id(id, "id")
        except RagchatError as exc:
            return to_graphql(exc)  # type: ignore[return-value]
        row = await info.context.loaders.project.load(pid)
        return types.Project.of(row) if row else NotFoundError(message=f"project {id} not found", kind="project", id=id)

    @strawberry.field(description="One document.")
    async def document(
        self, info: Info, id: Annotated[strawberry.ID, strawberry.argument(description="The document.")]
    ) -> DocumentResult:
        store, caller = info.context.container.store, caller_of(info)
        return await call(
            lambda: Document.of(documents.get(store, parse_id(id, "id"), caller=caller)), raising=UNREADABLE
        )

    @strawberry.field(description="An ingestion job (uploadDocuments returns one), with its files' progress.")
    async def ingestion_job(
        self, info: Info, id: Annotated[strawberry.ID, strawberry.argument(description="The ingestion job.")]
    ) -> IngestionJobResult:
        return await job_resolvers.get(info, id)
