"""The built-in tools over ragchat itself, and the argument check every call passes first.

- ``search_knowledge_base(query, top_k)``: retrieval over the chat's knowledge base, as a chat turn
  does it (the server's mode and threshold);
- ``read_document(document_id, from, to)``: a document's chunks between two ordinals (at most
  :data:`READ_MAX_CHUNKS`), only of the chat's own knowledge base;
- ``list_documents``: the knowledge base's documents (at most :data:`LIST_MAX`).

Each returns a :class:`ToolOutput`: the text the model reads and the chunks it came from, which the
tool loop turns into sources and citations like retrieved chunks. Their definitions (name, schema,
examples) are rows inserted by migration 0011; :data:`EXECUTORS` is keyed by those names.
Arguments are validated against the tool's stored JSON Schema before anything runs
(:func:`check_arguments`); a bad call is a :class:`ValidationError` to hand back to the model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select

from app.db.database import Database
from app.db.enums import DocumentStatus, ToolKind
from app.db.models import Chunk, Document, Tool
from app.errors import NotFoundError, ValidationError
from app.rag.search.candidates import Location
from app.rag.search.retrieval import RetrievalParams, retrieve
from app.services.tools.catalog import EmbedderFactory
from app.services.tools.schema import check_arguments
from app.settings import Settings

READ_MAX_CHUNKS = 20
READ_DEFAULT_SPAN = 5
LIST_MAX = 200
SEARCH_DEFAULT_TOP_K = 5


@dataclass(frozen=True)
class ToolSource:
    """A chunk a tool's output quotes, to be cited like a retrieved one."""

    chunk_id: int
    document_id: int
    document_name: str
    ordinal: int
    text: str
    location: Location
    score: float | None = None


@dataclass(frozen=True)
class ToolOutput:
    content: str  # what the model reads
    sources: tuple[ToolSource, ...] = ()


@dataclass(frozen=True)
class ToolContext:
    """What a built-in tool may reach: the chat's own knowledge base, nothing else."""

    store: Database
    embedder: EmbedderFactory
    settings: Settings
    project_id: int


def run_builtin(context: ToolContext, tool: Tool, arguments: str | Mapping[str, Any]) -> ToolOutput:
    """Validate the arguments, then run the built-in tool."""
    if tool.kind != ToolKind.BUILTIN or tool.name not in EXECUTORS:
        raise ValidationError("tool", f"{tool.name!r} is not a built-in tool")
    return EXECUTORS[tool.name](context, check_arguments(tool, arguments))


def search_knowledge_base(context: ToolContext, arguments: dict[str, Any]) -> ToolOutput:
    rag = context.settings.rag
    top_k = int(arguments.get("top_k", SEARCH_DEFAULT_TOP_K))
    params = RetrievalParams.for_session(rag, top_k=top_k, threshold=rag.threshold)
    result = retrieve(context.store, context.embedder(), context.project_id, arguments["query"], params)
    sources = tuple(
        ToolSource(c.chunk_id, c.document_id, c.document_name, -1, c.text, c.location, c.score) for c in result.kept
    )
    if not sources:
        return ToolOutput("No passage of the knowledge base matches that query.")
    blocks = [f"[{i}] {s.document_name} (document {s.document_id})\n{s.text}" for i, s in enumerate(sources, 1)]
    return ToolOutput("\n\n".join(blocks), sources)


def read_document(context: ToolContext, arguments: dict[str, Any]) -> ToolOutput:
    document_id = int(arguments["document_id"])
    start = int(arguments.get("from", 0))
    end = int(arguments.get("to", start + READ_DEFAULT_SPAN - 1))
    if end < start:
        raise ValidationError("arguments.to", f"must be at least from ({start})")
    end = min(end, start + READ_MAX_CHUNKS - 1)
    with context.store.read() as db:
        document = db.get(Document, document_id)
        # Another knowledge base's document does not exist, as far as this chat can tell.
        if document is None or document.project_id != context.project_id:
            raise NotFoundError("document", document_id)
        chunks = list(
            db.scalars(
                select(Chunk)
                .where(Chunk.document_id == document_id, Chunk.ordinal.between(start, end))
                .order_by(Chunk.ordinal)
            )
        )
    if not chunks:
        last = document.chunk_count - 1
        return ToolOutput(f"{document.name} has no chunks from {start} to {end} (its chunks are 0 to {last}).")
    sources = tuple(ToolSource(c.id, document.id, document.name, c.ordinal, c.text, _location(c)) for c in chunks)
    span = f"chunks {chunks[0].ordinal}-{chunks[-1].ordinal} of {document.chunk_count}"
    header = f"{document.name} (document {document.id}), {span}"
    return ToolOutput(header + "\n\n" + "\n\n".join(f"[chunk {s.ordinal}]\n{s.text}" for s in sources), sources)


def list_documents(context: ToolContext, arguments: dict[str, Any]) -> ToolOutput:
    with context.store.read() as db:
        total = db.scalar(select(func.count()).select_from(Document).where(Document.project_id == context.project_id))
        rows = db.execute(
            select(Document.id, Document.name, Document.kind, Document.chunk_count)
            .where(Document.project_id == context.project_id, Document.status == DocumentStatus.READY)
            .order_by(Document.name)
            .limit(LIST_MAX)
        ).all()
    if not rows:
        return ToolOutput("The knowledge base holds no documents.")
    lines = [f"- {name} (id {doc_id}, {kind}, {chunks} chunks)" for doc_id, name, kind, chunks in rows]
    more = f"\n(the first {LIST_MAX} of {total})" if (total or 0) > LIST_MAX else ""
    return ToolOutput(f"{len(rows)} documents:\n" + "\n".join(lines) + more)


def _location(chunk: Chunk) -> Location:
    return Location(chunk.char_start, chunk.char_end, chunk.line_start, chunk.line_end, chunk.page, chunk.heading_path)


EXECUTORS: dict[str, Callable[[ToolContext, dict[str, Any]], ToolOutput]] = {
    "search_knowledge_base": search_knowledge_base,
    "read_document": read_document,
    "list_documents": list_documents,
}
