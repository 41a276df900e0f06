"""An MCP server at ``/mcp`` (Streamable HTTP, the official ``mcp`` SDK): ragchat's knowledge bases
for the IDEs, desktop assistants and agent runtimes that look knowledge up through MCP.

Tools: ``list_knowledge_bases``, ``search`` (hits with document, location, score and text) and
``ask`` (an answer with its citations, through the same chat turn as GraphQL and the OpenAI door: a
chat session of the caller's, deleted once answered). Resources: each document as indexed
(``ragchat://documents/{id}``). Every call runs as the request's caller, named by the perimeter as
for GraphQL (bearer keys, the session cookie), under the same access rules.

Stateless and JSON-answering: each POST is a whole exchange, so any worker of any server answers it
and nothing is kept between requests.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from app.errors import RagchatError
from app.rag.search.retrieval_mode import RetrievalMode
from app.services import documents, projects, search, sessions
from app.services.chat import turns
from app.services.chat.store import title_of
from app.services.pages import PageRequest
from app.services.people.access import Caller, CallerKind
from app.services.sessions import SessionChanges

log = logging.getLogger("ragchat.mcp")

MCP_PATH = "/mcp"
MAX_TOP_K = 20
MAX_DOCUMENT_CHUNKS = 500


def _request(ctx: Context) -> Any:
    request = ctx.request_context.request
    if request is None:  # only over HTTP: the perimeter named the caller on the request
        raise ToolError("this server answers MCP over HTTP only")
    return request


def _caller(ctx: Context) -> Caller:
    caller = _request(ctx).scope.get("state", {}).get("caller")
    if not isinstance(caller, Caller) or caller.kind == CallerKind.ANONYMOUS:
        raise ToolError("sign in first: send 'Authorization: Bearer <key>'")
    return caller


def _container(ctx: Context) -> Any:
    return _request(ctx).app.state.container


async def _knowledge_base(ctx: Context, name_or_id: str) -> tuple[Any, Caller, int]:
    """The container, the caller, and the knowledge base named (by id or by name) that the caller sees."""
    container, caller = _container(ctx), _caller(ctx)
    rows = await anyio.to_thread.run_sync(lambda: projects.visible(container.store, caller=caller))
    wanted = name_or_id.strip()
    found = [r for r in rows if str(r.id) == wanted] or [r for r in rows if r.name.casefold() == wanted.casefold()]
    if len(found) != 1:
        raise ToolError(f"no knowledge base {wanted!r} of yours: list_knowledge_bases names them")
    return container, caller, found[0].id


def _where(location: Any) -> dict[str, Any]:
    return {
        "line_start": location.line_start,
        "line_end": location.line_end,
        "page": location.page,
        "heading_path": location.heading_path,
    }


@contextmanager
def _root_logging_kept() -> Iterator[None]:
    """The SDK's MCPServer calls ``logging.basicConfig`` with a rich handler at INFO when it is made:
    with nothing on the root logger yet (an app built before ``ragchat serve`` configures logging, as
    tests, benchmarks and ``uvicorn --factory`` do) every log line went through rich, a terminal
    probe per record included. A placeholder makes that call a no-op; the root is left as it was."""
    root = logging.getLogger()
    level, placeholder = root.level, logging.NullHandler()
    root.addHandler(placeholder)
    try:
        yield
    finally:
        root.removeHandler(placeholder)
        root.setLevel(level)


def build() -> MCPServer:
    with _root_logging_kept():
        server: MCPServer = MCPServer(
            name="ragchat",
            instructions="Search a team's knowledge bases and ask them questions; answers cite their sources.",
        )

    @server.tool(description="The knowledge bases you may search and ask: id, name and description.")
    async def list_knowledge_bases(ctx: Context) -> list[dict[str, Any]]:
        container, caller = _container(ctx), _caller(ctx)
        rows = await anyio.to_thread.run_sync(lambda: projects.visible(container.store, caller=caller))
        return [{"id": str(r.id), "name": r.name, "description": r.description} for r in rows]

    @server.tool(
        description="Search a knowledge base (by id or name) for passages about a query: each hit with its "
        "document, location (lines, page, heading), score and text, best first. threshold: the least cosine "
        "similarity a hit needs (0-1; the server's default when omitted)."
    )
    async def search_knowledge_base(
        knowledge_base: str, query: str, ctx: Context, top_k: int = 5, threshold: float | None = None
    ) -> list[dict[str, Any]]:
        container, caller, kb = await _knowledge_base(ctx, knowledge_base)
        k = max(1, min(top_k, MAX_TOP_K))
        try:
            result = await anyio.to_thread.run_sync(
                lambda: search.search(
                    container.store, container.embedder, container.settings, kb, query,
                    top_k=k, threshold=threshold, mode=RetrievalMode.HYBRID, caller=caller,
                )
            )  # fmt: skip
        except RagchatError as exc:
            raise ToolError(exc.message) from None
        return [
            {
                "document_id": str(c.document_id),
                "document": c.document_name,
                "location": _where(c.location),
                "score": c.score,
                "text": c.text,
            }
            for c in result.kept
        ]

    @server.tool(
        description="Ask a knowledge base (by id or name) a question: the answer, its [n] citations (document, "
        "location, score), and no_context when nothing in it was close enough to answer."
    )
    async def ask(knowledge_base: str, question: str, ctx: Context) -> dict[str, Any]:
        container, caller, kb = await _knowledge_base(ctx, knowledge_base)
        title = title_of(question)
        try:
            chat = await anyio.to_thread.run_sync(
                lambda: sessions.create(
                    container.store, container.settings, container.chat_models, kb, SessionChanges(title=title),
                    caller=caller,
                )
            )  # fmt: skip
        except RagchatError as exc:
            raise ToolError(exc.message) from None
        try:
            finished = await turns.complete(container.live, chat.id, question, caller=caller)
            answer = await anyio.to_thread.run_sync(
                lambda: sessions.message(container.store, finished.answer_id, caller=caller)
            )
            cited = finished.stored.citations if finished.stored is not None else []
        except RagchatError as exc:
            raise ToolError(exc.message) from None
        finally:
            try:
                await anyio.to_thread.run_sync(lambda: sessions.delete(container.store, chat.id, caller=caller))
            except RagchatError as exc:
                log.warning("could not delete the MCP question's chat %s: %s", chat.id, exc)
        if answer.error:
            raise ToolError(f"the answer failed: {answer.error}")
        trace = answer.trace or {}
        return {
            "answer": answer.content,
            "no_context": bool(trace.get("noContext", False)),
            "citations": [
                {
                    "marker": c.marker,
                    "document_id": str(c.document_id) if c.document_id is not None else None,
                    "document": c.document_name,
                    "location": c.location,
                    "score": c.score,
                    "text": c.snippet,
                }
                for c in cited
            ],
        }

    @server.resource(
        "ragchat://documents/{document_id}",
        name="document",
        description="A document as indexed: its chunks in order, each with its lines.",
        mime_type="text/markdown",
    )
    async def document(document_id: str, ctx: Context) -> str:
        container, caller = _container(ctx), _caller(ctx)
        if not document_id.isdigit():
            raise ToolError(f"{document_id!r} is not a document id")

        def read() -> str:
            row = documents.get(container.store, int(document_id), caller=caller)
            (page,) = documents.chunk_pages(container.store, [row.id], PageRequest(first=MAX_DOCUMENT_CHUNKS))
            parts = [f"# {row.name}"]
            for chunk in page.rows:
                where = f"page {chunk.page}, " if chunk.page is not None else ""
                parts.append(f"<!-- {where}lines {chunk.line_start}-{chunk.line_end} -->\n{chunk.text}")
            return "\n\n".join(parts)

        try:
            return await anyio.to_thread.run_sync(read)
        except RagchatError as exc:
            raise ToolError(exc.message) from None

    return server


class McpApp:
    """The ASGI app at /mcp and the session manager whose ``run()`` the server's lifespan holds."""

    def __init__(self) -> None:
        self.server = build()
        # The perimeter has already checked Host and Origin (and named the caller): the SDK's own
        # DNS-rebinding check would only refuse the hosts an operator allowed.
        self.server.streamable_http_app(
            json_response=True,
            stateless_http=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self.manager: StreamableHTTPSessionManager = self.server.session_manager
        self.asgi = StreamableHTTPASGIApp(self.manager)


__all__ = ["MCP_PATH", "McpApp"]
