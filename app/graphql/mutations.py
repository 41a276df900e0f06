"""Mutation root: thin resolvers over the services; expected failures come back as union members."""

from __future__ import annotations

from typing import Annotated

import strawberry
from strawberry.file_uploads import Upload

from app.errors import RagchatError, ValidationError
from app.graphql import types
from app.graphql.context import Info
from app.graphql.errors import parse_id, to_graphql
from app.graphql.inputs import CreateChatSessionInput, CreateProjectInput, UpdateChatSessionInput, UpdateProjectInput
from app.graphql.results import (
    ChatSessionDeleted,
    ChatSessionResult,
    DeleteChatSessionResult,
    DeleteDocumentResult,
    DeleteProjectResult,
    DocumentDeleted,
    FileOutcome,
    MessageResult,
    ProjectDeleted,
    ProjectMutationResult,
    UploadReport,
    UploadResult,
    call,
)
from app.graphql.subscriptions import CLIENT_MESSAGE_ID, QUESTION
from app.rag.ingest import FileStatus, IngestSummary
from app.services import chat_turns, documents, projects, sessions


async def _answer(info: Info, finished: chat_turns.Finished) -> MessageResult:
    """The answer a turn ended with: as its own transaction read it back when it stored it, else read now."""
    if finished.stored is not None:
        return types.ChatMessage.stored(info, finished.stored)
    store = info.context.container.store
    return await call(lambda: types.ChatMessage.of(sessions.message(store, finished.answer_id)))


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
        added=summary.count(FileStatus.ADDED),
        updated=summary.count(FileStatus.UPDATED),
        unchanged=summary.count(FileStatus.UNCHANGED),
        failed=summary.count(FileStatus.FAILED),
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


_PROJECT_ID = strawberry.argument(description="The knowledge base.")
_DOCUMENT_ID = strawberry.argument(description="The document.")
_SESSION_ID = strawberry.argument(description="The chat session.")


@strawberry.type(description="Changes: knowledge bases, documents, chat sessions, and questions answered in one call.")
class Mutation:
    @strawberry.mutation(description="Create a knowledge base.")
    async def create_project(
        self,
        info: Info,
        input: Annotated[CreateProjectInput, strawberry.argument(description="Its name and description.")],
    ) -> ProjectMutationResult:
        store = info.context.container.store
        return await call(lambda: types.Project.of(projects.create(store, input.name, input.description)))

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
        store = info.context.container.store
        return await call(
            lambda: types.Project.of(
                projects.update(store, parse_id(id, "id"), name=input.name, description=input.description)
            )
        )

    @strawberry.mutation(description="Delete a knowledge base with its documents, vectors and chat sessions.")
    async def delete_project(self, info: Info, id: Annotated[strawberry.ID, _PROJECT_ID]) -> DeleteProjectResult:
        store = info.context.container.store

        def run() -> ProjectDeleted:
            row = projects.delete(store, parse_id(id, "id"))
            return ProjectDeleted(id=strawberry.ID(str(row.id)))

        return await call(run)

    @strawberry.mutation(
        description="Upload one or more files (GraphQL multipart request). A file that cannot be parsed is "
        "reported in the result and the others go on; too large or unsupported files reject the request."
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
    ) -> UploadResult:
        container = info.context.container
        try:
            read = await _read_uploads(files, container.settings.api.max_upload_bytes)
        except RagchatError as exc:
            return to_graphql(exc)  # type: ignore[return-value]
        return await _ingest(info, project_id, read)

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
    ) -> UploadResult:
        return await _ingest(info, project_id, [(name, text.encode("utf-8"))])

    @strawberry.mutation(description="Delete a document with its chunks and vectors.")
    async def delete_document(self, info: Info, id: Annotated[strawberry.ID, _DOCUMENT_ID]) -> DeleteDocumentResult:
        store = info.context.container.store

        def run() -> DocumentDeleted:
            row = documents.delete(store, parse_id(id, "id"))
            return DocumentDeleted(id=strawberry.ID(str(row.id)), project_id=strawberry.ID(str(row.project_id)))

        return await call(run)

    @strawberry.mutation(description="Start a chat session; RAG settings you omit take the server's defaults.")
    async def create_chat_session(
        self,
        info: Info,
        project_id: Annotated[strawberry.ID, strawberry.argument(description="The knowledge base it searches.")],
        input: Annotated[
            CreateChatSessionInput | None,
            strawberry.argument(description="Its title, model and settings; omitted: all the defaults."),
        ] = None,
    ) -> ChatSessionResult:
        c = info.context.container
        changes = (input or CreateChatSessionInput()).changes()
        return await call(
            lambda: types.ChatSession.of(
                sessions.create(c.store, c.settings, c.chat_models, parse_id(project_id, "projectId"), changes)
            )
        )

    @strawberry.mutation(
        description="Change a session's title, prompt, model or RAG settings; effective from the next message."
    )
    async def update_chat_session(
        self,
        info: Info,
        id: Annotated[strawberry.ID, _SESSION_ID],
        input: Annotated[UpdateChatSessionInput, strawberry.argument(description="The fields to change.")],
    ) -> ChatSessionResult:
        c = info.context.container
        return await call(
            lambda: types.ChatSession.of(sessions.update(c.store, c.chat_models, parse_id(id, "id"), input.changes()))
        )

    @strawberry.mutation(description="Delete a chat session with its messages.")
    async def delete_chat_session(
        self, info: Info, id: Annotated[strawberry.ID, _SESSION_ID]
    ) -> DeleteChatSessionResult:
        store = info.context.container.store

        def run() -> ChatSessionDeleted:
            row = sessions.delete(store, parse_id(id, "id"))
            return ChatSessionDeleted(id=strawberry.ID(str(row.id)), project_id=strawberry.ID(str(row.project_id)))

        return await call(run)

    @strawberry.mutation(
        description="Ask a question and wait for the whole answer (use the `chat` subscription to stream it). "
        "A model failure is not an error here: the answer comes back with status FAILED and its error."
    )
    async def send_message(
        self,
        info: Info,
        session_id: Annotated[strawberry.ID, _SESSION_ID],
        content: Annotated[str, QUESTION],
        client_message_id: Annotated[str | None, CLIENT_MESSAGE_ID] = None,
    ) -> MessageResult:
        container = info.context.container
        try:
            sid = parse_id(session_id, "sessionId")
            finished = await chat_turns.complete(container.chat.live, sid, content, client_message_id)
        except RagchatError as exc:
            return to_graphql(exc)  # type: ignore[return-value]
        return await _answer(info, finished)

    @strawberry.mutation(
        description="Write an answer again, in place, and wait for it (after a failure, or to try anew)."
    )
    async def regenerate_message(
        self,
        info: Info,
        message_id: Annotated[strawberry.ID, strawberry.argument(description="The answer (an assistant message).")],
        client_message_id: Annotated[str | None, CLIENT_MESSAGE_ID] = None,
    ) -> MessageResult:
        container = info.context.container
        try:
            mid = parse_id(message_id, "messageId")
            finished = await chat_turns.complete_regenerate(container.chat.live, mid, client_message_id)
        except RagchatError as exc:
            return to_graphql(exc)  # type: ignore[return-value]
        return await _answer(info, finished)
