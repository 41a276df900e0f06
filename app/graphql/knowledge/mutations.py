"""Knowledge-base changes: knowledge bases, documents (uploaded, from text, from a URL) and ingestion jobs."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any

import strawberry
from strawberry.file_uploads import Upload

from app.errors import ValidationError
from app.graphql import types
from app.graphql.context import Info, caller_of
from app.graphql.errors import parse_id
from app.graphql.inputs import CreateProjectInput, UpdateProjectInput
from app.graphql.knowledge import jobs as job_resolvers
from app.graphql.knowledge.document_types import Document
from app.graphql.results import (
    DeleteDocumentResult,
    DeleteProjectResult,
    DocumentDeleted,
    DocumentResult,
    FileOutcome,
    JobChangeResult,
    ProjectDeleted,
    ProjectMutationResult,
    UploadJobResult,
    UploadReport,
    UploadResult,
    UrlDocumentResult,
    call,
)
from app.rag.ingest.pipeline import FileStatus, IngestSummary
from app.services import documents, project_archive, projects


def _report(summary: IngestSummary, docs: dict[int, Document]) -> UploadReport:
    return UploadReport(
        files=[
            FileOutcome(
                name=f.name,
                status=f.status,
                document=docs.get(f.document_id) if f.document_id else None,
                chunks=f.chunks,
                embedded=f.embedded,
                error=f.error,
                skip_reason=f.skip_reason,
            )
            for f in summary.files
        ],
        added=summary.count(FileStatus.ADDED),
        updated=summary.count(FileStatus.UPDATED),
        unchanged=summary.count(FileStatus.UNCHANGED),
        skipped=summary.count(FileStatus.SKIPPED),
        failed=summary.count(FileStatus.FAILED),
        seconds=round(summary.seconds, 3),
    )


async def _ingest(
    info: Info,
    project_id: strawberry.ID,
    files: list[tuple[str, bytes]],
    *,
    tags: list[str] | None = None,
    modified_at: datetime | None = None,
) -> UploadResult:
    container, caller = info.context.container, caller_of(info)

    def run() -> IngestSummary:
        settings = container.settings
        return documents.ingest_uploads(
            container.store,
            container.embedder,
            settings.ingest,
            settings.api.max_upload_bytes,
            parse_id(project_id, "projectId"),
            files,
            tags=tags,
            modified_at=modified_at,
            caller=caller,
        )

    return await _reported(info, run)


async def _reported(info: Info, ingest: Callable[[], IngestSummary]) -> Any:  # the caller's union says what
    """Run an ingestion in a worker thread and report it with its documents, or its error as a schema type."""
    store, caller = info.context.container.store, caller_of(info)

    def run() -> UploadReport:
        summary = ingest()
        ids = [f.document_id for f in summary.files if f.document_id]
        docs = {d.id: Document.of(d) for d in documents.get_many(store, ids, caller=caller)}
        return _report(summary, docs)

    return await call(run)


_PROJECT_ID = strawberry.argument(description="The knowledge base.")
_DOCUMENT_ID = strawberry.argument(description="The document.")
_JOB_ID = strawberry.argument(description="The ingestion job.")
_ITEM_IDS = strawberry.argument(description="Some of its items (IngestionItem ids); null: all of them.")


@strawberry.type
class KnowledgeMutation:
    @strawberry.mutation(description="Create a knowledge base.")
    async def create_project(
        self,
        info: Info,
        input: Annotated[CreateProjectInput, strawberry.argument(description="Its name and description.")],
    ) -> ProjectMutationResult:
        store, caller = info.context.container.store, caller_of(info)
        return await call(
            lambda: types.Project.of(projects.create(store, input.name, input.description, caller=caller))
        )

    @strawberry.mutation(
        description="Rename a knowledge base or change its description: a ValidationError names every bad field, "
        "a ConflictError a name another one has."
    )
    async def update_project(
        self,
        info: Info,
        id: Annotated[strawberry.ID, _PROJECT_ID],
        input: Annotated[UpdateProjectInput, strawberry.argument(description="The fields to change.")],
    ) -> ProjectMutationResult:
        store, caller = info.context.container.store, caller_of(info)
        return await call(
            lambda: types.Project.of(
                projects.update(
                    store, parse_id(id, "id"), name=input.name, description=input.description, caller=caller
                )
            )
        )

    @strawberry.mutation(
        description="Make a new knowledge base from an archive (GraphQL multipart request): one its owner downloaded "
        "from GET /api/knowledge-bases/{id}/export, here or on another server, or wrote with `ragchat "
        "export-project`. Its documents' chunks, vectors (re-embedded when this server's embedder differs), chats "
        "with their messages and citations, and its own tools come in one transaction under new ids; the caller "
        "becomes its owner. A ValidationError says what is wrong with the archive (its tools are held to this "
        "server's rules for a knowledge base's tools), a ConflictError a name or tool name taken here; nothing "
        "is written then. Archives over uploadLimits.maxBytes: `ragchat import-project`."
    )
    async def import_knowledge_base(
        self,
        info: Info,
        file: Annotated[Upload, strawberry.argument(description="The archive (.ragchat.tar.gz).")],
        name: Annotated[
            str | None, strawberry.argument(description="Its name here (default: the name it was exported with).")
        ] = None,
    ) -> ProjectMutationResult:
        container, caller = info.context.container, caller_of(info)
        settings = container.settings

        def run() -> types.Project:
            projects.require_may_create(caller)  # asked first: a refused caller learns nothing of the file
            handle = getattr(file, "file", None)
            if handle is None or not callable(getattr(handle, "read", None)):  # a string written where a file goes
                raise ValidationError("file", "must be a file sent as a part of a multipart request")
            report = project_archive.import_project(
                container.store,
                handle,  # starlette's UploadFile: its spooled temporary file
                container.embedder,
                settings.tools,
                name=name,
                max_bytes=settings.api.max_import_bytes,
                caller=caller,
            )
            return types.Project.of(projects.get(container.store, report.project_id, caller=caller))

        try:
            return await call(run)
        finally:
            if callable(getattr(file, "close", None)):
                await file.close()  # type: ignore[attr-defined]

    @strawberry.mutation(description="Delete a knowledge base with its documents, vectors and chat sessions.")
    async def delete_project(self, info: Info, id: Annotated[strawberry.ID, _PROJECT_ID]) -> DeleteProjectResult:
        store, caller = info.context.container.store, caller_of(info)

        def run() -> ProjectDeleted:
            row = projects.delete(store, parse_id(id, "id"), caller=caller)
            return ProjectDeleted(id=strawberry.ID(str(row.id)))

        return await call(run)

    @strawberry.mutation(
        description="Upload one or more files (GraphQL multipart request): they are stored on the server and the "
        "job that ingests them is returned at once; follow it with the ingestionProgress subscription (or "
        "ingestionJob). A file that cannot be parsed fails in the job and the others go on; too large or "
        "unsupported files, or a full queue (LimitExceededError), reject the request with nothing stored."
    )
    async def upload_documents(
        self,
        info: Info,
        project_id: Annotated[strawberry.ID, _PROJECT_ID],
        files: Annotated[
            list[Upload],
            strawberry.argument(
                description="The files, each at most uploadLimits.maxBytes, of a type uploadLimits.extensions "
                "lists. A file with a stored document's name updates that document."
            ),
        ],
        wait: Annotated[
            bool,
            strawberry.argument(
                description="Return only once every file has ended (READY, FAILED, ...), for scripts that want "
                "the outcome in the response; the request stays open that long."
            ),
        ] = False,
        tags: Annotated[
            list[str] | None,
            strawberry.argument(
                description="Free tags for every file's document (replacing any it has), held to setDocumentTags' "
                "rules: a bad tag is a ValidationError and nothing is stored. Null: a document keeps its tags."
            ),
        ] = None,
    ) -> UploadJobResult:
        return await job_resolvers.upload(info, project_id, files, wait, tags)

    @strawberry.mutation(
        description="Cancel an ingestion job's unfinished files (all, or those of itemIds): queued ones never "
        "start, one being ingested stops before its document is stored. ConflictError when none is unfinished."
    )
    async def cancel_ingestion_job(
        self,
        info: Info,
        id: Annotated[strawberry.ID, _JOB_ID],
        item_ids: Annotated[list[strawberry.ID] | None, _ITEM_IDS] = None,
    ) -> JobChangeResult:
        return await job_resolvers.change(info, id, item_ids, retry=False)

    @strawberry.mutation(
        description="Queue an ingestion job's FAILED and CANCELLED files again (all, or those of itemIds). "
        "ConflictError when none of them failed or was cancelled; LimitExceededError when they would pass a "
        "queue's limit, as an upload would."
    )
    async def retry_ingestion_job(
        self,
        info: Info,
        id: Annotated[strawberry.ID, _JOB_ID],
        item_ids: Annotated[list[strawberry.ID] | None, _ITEM_IDS] = None,
    ) -> JobChangeResult:
        return await job_resolvers.change(info, id, item_ids, retry=True)

    @strawberry.mutation(description="Add (or update) a document from text.")
    async def add_document(
        self,
        info: Info,
        project_id: Annotated[strawberry.ID, _PROJECT_ID],
        name: Annotated[
            str,
            strawberry.argument(
                description='The document\'s name; its extension picks the parser ("notes.md" is Markdown). The '
                "name of a stored document updates it."
            ),
        ],
        text: Annotated[str, strawberry.argument(description="The document's content.")],
        tags: Annotated[
            list[str] | None,
            strawberry.argument(description="Its free tags (replacing any it has); null: as they are."),
        ] = None,
        modified_at: Annotated[
            datetime | None,
            strawberry.argument(description="When the content last changed, if the client knows; null: not known."),
        ] = None,
    ) -> UploadResult:
        return await _ingest(info, project_id, [(name, text.encode("utf-8"))], tags=tags, modified_at=modified_at)

    @strawberry.mutation(
        description="Fetch a document from an http(s) URL and add (or update) it. The server refuses URLs that lead "
        "to loopback, private or link-local addresses (unless its operator allows them), follows a few redirects, "
        "checking each, and limits the size, time and content type. The fetch happens in the request; the "
        "document is then ingested by an ingestion job (origin URL), like an upload, and remembers its sourceUrl."
    )
    async def add_document_from_url(
        self,
        info: Info,
        project_id: Annotated[strawberry.ID, _PROJECT_ID],
        url: Annotated[
            str,
            strawberry.argument(
                description="The document's URL. Its name is the server's file name (Content-Disposition), else "
                "the URL path's last part; the name of a stored document updates it."
            ),
        ],
        wait: Annotated[
            bool,
            strawberry.argument(
                description="Return only once the document has been ingested (or failed), for scripts; the "
                "request stays open that long."
            ),
        ] = False,
    ) -> UrlDocumentResult:
        return await job_resolvers.from_url(info, project_id, url, wait)

    @strawberry.mutation(
        description="Replace a document's free tags (an editor of its knowledge base may). Each tag is 1-64 "
        "characters without leading or trailing spaces; 50 at most. Document filters select by them."
    )
    async def set_document_tags(
        self,
        info: Info,
        id: Annotated[strawberry.ID, _DOCUMENT_ID],
        tags: Annotated[list[str], strawberry.argument(description="Its new tags (an empty list removes them all).")],
    ) -> DocumentResult:
        store, caller = info.context.container.store, caller_of(info)
        return await call(lambda: Document.of(documents.set_tags(store, parse_id(id, "id"), tags, caller=caller)))

    @strawberry.mutation(description="Delete a document with its chunks and vectors.")
    async def delete_document(self, info: Info, id: Annotated[strawberry.ID, _DOCUMENT_ID]) -> DeleteDocumentResult:
        store, caller = info.context.container.store, caller_of(info)

        def run() -> DocumentDeleted:
            row = documents.delete(store, parse_id(id, "id"), caller=caller)
            return DocumentDeleted(id=strawberry.ID(str(row.id)), project_id=strawberry.ID(str(row.project_id)))

        return await call(run)
