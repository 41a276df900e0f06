"""Mutation root: thin resolvers over the services; expected failures come back as union members."""

from __future__ import annotations

from typing import Annotated

import strawberry
from strawberry.file_uploads import Upload

from app.errors import RagchatError, ValidationError
from app.graphql import types
from app.graphql.context import Info
from app.graphql.errors import parse_id, to_graphql
from app.graphql.inputs import ChatSessionInput, CreateProjectInput
from app.graphql.results import (
    ChatSessionResult,
    DeleteResult,
    FileOutcome,
    MessageResult,
    ProjectMutationResult,
    UploadReport,
    UploadResult,
    call,
    deleting,
)
from app.graphql.subscriptions import CLIENT_MESSAGE_ID
from app.rag.ingest import IngestSummary
from app.services import chat_turns, documents, projects, sessions


def _report(summary: IngestSummary, docs: dict[int, types.Document]) -> UploadReport:
    return UploadReport(
        files=[
            FileOutcome(
                name=f.name,
                status=f.status,
                document=docs.get(f.document_id) if f.document_id else None,
                chunks=f.chunks,
                embedded=f.embedded,
                error=f.error,
            )
            for f in summary.files
        ],
        added=summary.count("added"),
        updated=summary.count("updated"),
        unchanged=summary.count("unchanged"),
        failed=summary.count("failed"),
        seconds=round(summary.seconds, 3),
    )


async def _read_uploads(files: list[Upload], limit: int) -> list[tuple[str, bytes]]:
    read: list[tuple[str, bytes]] = []
    try:
        for i, upload in enumerate(files):
            if not callable(getattr(upload, "read", None)):  # a string or number written where a file goes
                raise ValidationError(f"files[{i}]", "must be a file sent as a part of a multipart request")
            data = await upload.read(limit + 1)  # type: ignore[attr-defined]
            if len(data) > limit:
                raise ValidationError(f"files[{i}]", f"the upload limit is {limit} bytes")
            read.append((getattr(upload, "filename", None) or f"upload-{i}", data))
    finally:
        for upload in files:  # spooled temporary files: release them now, not at garbage collection
            if callable(getattr(upload, "close", None)):
                await upload.close()  # type: ignore[attr-defined]
    return read


async def _ingest(info: Info, project_id: strawberry.ID, files: list[tuple[str, bytes]]) -> UploadResult:
    container = info.context.container

    def run() -> UploadReport:
        settings = container.settings
        summary = documents.ingest_uploads(
            container.store,
            container.embedder,
            settings.ingest,
            settings.api.max_upload_bytes,
            parse_id(project_id, "projectId"),
            files,
        )
        ids = [f.document_id for f in summary.files if f.document_id]
        docs = {d.id: types.Document.of(d) for d in documents.get_many(container.store, ids)}
        return _report(summary, docs)

    return await call(run)


@strawberry.type
class Mutation:
    @strawberry.mutation(description="Create a knowledge base.")
    async def create_project(self, info: Info, input: CreateProjectInput) -> ProjectMutationResult:
        store = info.context.container.store
        return await call(lambda: types.Project.of(projects.create(store, input.name, input.description)))

    @strawberry.mutation
    async def rename_project(self, info: Info, id: strawberry.ID, name: str) -> ProjectMutationResult:
        store = info.context.container.store
        return await call(lambda: types.Project.of(projects.rename(store, parse_id(id, "id"), name)))

    @strawberry.mutation(description="Delete a knowledge base with its documents, vectors and chat sessions.")
    async def delete_project(self, info: Info, id: strawberry.ID) -> DeleteResult:
        store = info.context.container.store
        return await call(deleting(lambda pid: projects.delete(store, pid), id))

    @strawberry.mutation(
        description="Upload one or more files (GraphQL multipart request). A file that cannot be parsed is "
        "reported in the result and the others go on; too large or unsupported files reject the request."
    )
    async def upload_documents(self, info: Info, project_id: strawberry.ID, files: list[Upload]) -> UploadResult:
        container = info.context.container
        try:
            read = await _read_uploads(files, container.settings.api.max_upload_bytes)
        except RagchatError as exc:
            return to_graphql(exc)  # type: ignore[return-value]
        return await _ingest(info, project_id, read)

    @strawberry.mutation(description="Add (or update) a document from text.")
    async def add_document(self, info: Info, project_id: strawberry.ID, name: str, text: str) -> UploadResult:
        return await _ingest(info, project_id, [(name, text.encode("utf-8"))])

    @strawberry.mutation
    async def delete_document(self, info: Info, id: strawberry.ID) -> DeleteResult:
        store = info.context.container.store
        return await call(deleting(lambda did: documents.delete(store, did), id))

    @strawberry.mutation(description="Start a chat session; RAG settings you omit take the server's defaults.")
    async def create_chat_session(
        self, info: Info, project_id: strawberry.ID, input: ChatSessionInput | None = None
    ) -> ChatSessionResult:
        c = info.context.container
        changes = (input or ChatSessionInput()).changes()
        return await call(
            lambda: types.ChatSession.of(
                sessions.create(c.store, c.settings, c.chat_models, parse_id(project_id, "projectId"), changes)
            )
        )

    @strawberry.mutation(
        description="Change a session's title, prompt, model or RAG settings; effective from the next message."
    )
    async def update_chat_session(self, info: Info, id: strawberry.ID, input: ChatSessionInput) -> ChatSessionResult:
        c = info.context.container
        return await call(
            lambda: types.ChatSession.of(sessions.update(c.store, c.chat_models, parse_id(id, "id"), input.changes()))
        )

    @strawberry.mutation
    async def delete_chat_session(self, info: Info, id: strawberry.ID) -> DeleteResult:
        store = info.context.container.store
        return await call(deleting(lambda sid: sessions.delete(store, sid), id))

    @strawberry.mutation(
        description="Ask a question and wait for the whole answer (use the `chat` subscription to stream it). "
        "A model failure is not an error here: the answer comes back with status FAILED and its error."
    )
    async def send_message(
        self,
        info: Info,
        session_id: strawberry.ID,
        content: str,
        client_message_id: Annotated[str | None, CLIENT_MESSAGE_ID] = None,
    ) -> MessageResult:
        container = info.context.container
        try:
            sid = parse_id(session_id, "sessionId")
            message_id = await chat_turns.complete(container.chat.live, sid, content, client_message_id)
        except RagchatError as exc:
            return to_graphql(exc)  # type: ignore[return-value]
        return await call(lambda: types.ChatMessage.of(sessions.message(container.store, message_id)))

    @strawberry.mutation(description="Generate an assistant message again (after a failure, or to try anew).")
    async def regenerate_message(
        self,
        info: Info,
        message_id: strawberry.ID,
        client_message_id: Annotated[str | None, CLIENT_MESSAGE_ID] = None,
    ) -> MessageResult:
        container = info.context.container
        try:
            mid = parse_id(message_id, "messageId")
            done = await chat_turns.complete_regenerate(container.chat.live, mid, client_message_id)
        except RagchatError as exc:
            return to_graphql(exc)  # type: ignore[return-value]
        return await call(lambda: types.ChatMessage.of(sessions.message(container.store, done)))
