"""MCP tools: tools of an MCP server (Streamable HTTP), listed by an explicit import and called
through the official ``mcp`` SDK's client — over an HTTP client whose every request passes the
same rules as an HTTP tool's (app/net/fetch.py, app/services/tools/http.py):

- Each request's host is resolved once and the address checked against the tools' address policy
  (``RAGCHAT_TOOLS__ALLOW_PRIVATE``, ``RAGCHAT_TOOLS__ALLOWED_NETWORKS``); the connection goes to
  that very address (Host header and TLS SNI carry the name). Proxies from the environment are ignored.
- Headers carry secrets by name, sent only to the origins each is bound to (the same words as
  :func:`app.services.tools.http.headers` for one that does not exist); a value the server echoes is
  replaced by ``[secret]``.
- One wall-clock deadline bounds a whole listing or call (connecting, the session's handshake, the
  call, closing), however the server paces its bytes; everything runs on the event loop, within one
  slot of the outbound gate.
- The bytes the server sends in one listing or call are cut off past ``RAGCHAT_TOOLS__MAX_RESPONSE_BYTES``;
  compressed answers are refused (a small one may expand without bound).

A failure is a :class:`~app.errors.FetchError` (or UrlRefusedError, TooLargeError) whatever the SDK
raised, so a call's error reaches the model and the person as words, never as a crash.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import TextContent

from app.db.models import Tool
from app.errors import FetchError, RagchatError, TooLargeError
from app.net import outbound
from app.net.addresses import AddressPolicy
from app.net.fetch import _target, _tls
from app.services.tools.builtins import ToolOutput
from app.services.tools.definitions import secret_refused
from app.services.tools.http import redact
from app.settings import ToolSettings, origin_of

T = TypeVar("T")
LIST_PAGES_MAX = 20  # pages of a server's tool listing read in one import
TOOLS_MAX = 200  # tools one import stores


@dataclass(frozen=True)
class RemoteTool:
    """One tool as its server lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool  # the server's annotation readOnlyHint; absent means "may change things"


class _Budget:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.used = 0

    def take(self, n: int) -> None:
        self.used += n
        if self.used > self.max_bytes:
            raise TooLargeError(f"the MCP server sent more than the limit of {self.max_bytes} bytes", self.max_bytes)


class _CountedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, budget: _Budget) -> None:
        self._inner = inner
        self._budget = budget

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self._budget.take(len(chunk))
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class _GuardedTransport(httpx2.AsyncBaseTransport):
    """Sends each request to the address checked for its host, and counts what comes back."""

    def __init__(self, addresses: AddressPolicy, budget: _Budget, ca_file: str | None = None) -> None:
        self._addresses = addresses
        self._budget = budget
        self._inner = httpx2.AsyncHTTPTransport(verify=_tls(ca_file), trust_env=False)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        target = await _target(str(request.url), self._addresses)  # UrlRefusedError for a refused one
        # A copy goes to the address: the client (and the SDK's origin checks) keep the URL as named.
        sent = httpx2.Request(
            request.method,
            httpx2.URL(str(target.url)),
            headers=request.headers,
            stream=request.stream,
            extensions={**request.extensions, **({"sni_hostname": target.sni} if target.sni else {})},
        )
        sent.headers["Host"] = target.host_header
        sent.headers["Accept-Encoding"] = "identity"
        response = await self._inner.handle_async_request(sent)
        if response.headers.get("content-encoding", "identity").strip().lower() not in ("", "identity"):
            await response.aclose()
            raise FetchError("the MCP server sent a compressed answer, which ragchat does not decode for tools")
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and self._budget.used + int(declared) > self._budget.max_bytes:
            await response.aclose()
            self._budget.take(int(declared))  # raises: it announces more than is left
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        counted = _CountedStream(response.stream, self._budget)
        return httpx2.Response(
            response.status_code, headers=response.headers, stream=counted, extensions=response.extensions
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


def secret_headers(url: str, header_secrets: Mapping[str, str], settings: ToolSettings) -> dict[str, str]:
    """The secret headers for requests to ``url``; FetchError for one that does not exist or may not
    go to its origin."""
    origin = origin_of(url)
    out = {}
    for header, secret in sorted(header_secrets.items()):
        if not settings.may_send(secret, origin):
            raise FetchError(secret_refused(secret, origin or url[:100]))
        out[header] = settings.secrets[secret.lower()].get_secret_value()
    return out


async def _session(
    url: str,
    header_secrets: Mapping[str, str],
    settings: ToolSettings,
    seconds: float,
    work: Callable[[Client], Awaitable[T]],
) -> T:
    """Open a session with the server at ``url``, run ``work`` in it and close it, all within
    ``seconds`` and one outbound slot."""
    sent = secret_headers(url, header_secrets, settings)
    budget = _Budget(settings.max_response_bytes)
    transport = _GuardedTransport(AddressPolicy.of(settings.allow_private, settings.allowed_networks), budget)
    async with outbound.current().slot():
        try:
            async with asyncio.timeout(seconds):
                async with (
                    httpx2.AsyncClient(
                        transport=transport,
                        headers={**sent, "User-Agent": "ragchat-tool"},
                        timeout=seconds + 1,  # a backstop only: the deadline above is the clock
                        trust_env=False,
                        follow_redirects=False,
                    ) as http,
                    Client(streamable_http_client(url, http_client=http)) as client,
                ):
                    return await work(client)
        except TimeoutError as exc:
            raise FetchError(f"the MCP server gave no complete answer within {seconds:g} s") from exc
        except Exception as exc:  # the SDK's errors come in many shapes, often as exception groups
            raise _plain(exc, sent, seconds) from exc


def _plain(exc: BaseException, sent: Mapping[str, str], seconds: float) -> RagchatError:
    """One error in words for whatever the SDK raised: ours when it is inside, else its message."""
    found = _first(exc, RagchatError)
    if found is not None:
        return found
    if _first(exc, TimeoutError) is not None or _first(exc, httpx2.TimeoutException) is not None:
        return FetchError(f"the MCP server gave no complete answer within {seconds:g} s")
    inner = _first(exc, httpx2.HTTPError) or _first(exc, httpx.HTTPError) or _leaf(exc)
    said = str(inner) or type(inner).__name__
    return FetchError(redact(f"the MCP server could not be used: {said}"[:500], sent))


def _first(exc: BaseException, kind: type[Any]) -> Any:
    if isinstance(exc, kind):
        return exc
    for inner in getattr(exc, "exceptions", ()) or ():
        if (found := _first(inner, kind)) is not None:
            return found
    if exc.__cause__ is not None and exc.__cause__ is not exc:
        return _first(exc.__cause__, kind)
    return None


def _leaf(exc: BaseException) -> BaseException:
    while getattr(exc, "exceptions", None):
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc


async def list_tools(
    url: str, header_secrets: Mapping[str, str], settings: ToolSettings, seconds: float
) -> list[RemoteTool]:
    """The server's tools (at most TOOLS_MAX, from at most LIST_PAGES_MAX pages)."""

    async def work(client: Client) -> list[RemoteTool]:
        found: list[RemoteTool] = []
        cursor: str | None = None
        for _ in range(LIST_PAGES_MAX):
            page = await client.list_tools(cursor=cursor)
            for tool in page.tools:
                hint = tool.annotations.read_only_hint if tool.annotations is not None else None
                found.append(
                    RemoteTool(
                        name=tool.name,
                        description=(tool.description or tool.title or tool.name).strip(),
                        input_schema=dict(tool.input_schema),
                        read_only=hint is True,
                    )
                )
            cursor = page.next_cursor
            if cursor is None or len(found) >= TOOLS_MAX:
                break
        return found[:TOOLS_MAX]

    return await _session(url, header_secrets, settings, seconds, work)


async def call(tool: Tool, arguments: Mapping[str, Any], settings: ToolSettings) -> ToolOutput:
    """Call the tool on its server once; its answer as text (structured content as JSON). A result
    the server marks as an error is a FetchError carrying its text."""
    if tool.url_template is None or tool.remote_name is None:
        raise FetchError(f"{tool.name!r} is not an MCP tool")
    remote = tool.remote_name
    sent = secret_headers(tool.url_template, tool.header_secrets, settings)

    async def work(client: Client) -> tuple[bool, str]:
        result = await client.call_tool(remote, dict(arguments))
        parts = [item.text for item in result.content if isinstance(item, TextContent)]
        others = [getattr(item, "type", "?") for item in result.content if not isinstance(item, TextContent)]
        if not parts and result.structured_content is not None:
            parts = [json.dumps(result.structured_content, ensure_ascii=False)]
        if others:
            parts.append(f"({len(others)} non-text parts left out: {', '.join(sorted(set(others)))})")
        return bool(result.is_error), "\n".join(parts)

    failed, text = await _session(tool.url_template, tool.header_secrets, settings, tool.timeout_seconds, work)
    text = redact(text, sent)
    if failed:
        raise FetchError(f"the MCP tool {remote!r} answered with an error: {text[:1000]}")
    return ToolOutput(text)


def describe(tool: Tool, arguments: Mapping[str, Any]) -> str:
    """The call a side-effecting MCP tool would make, in words (MCP has no dry run)."""
    given = json.dumps(dict(arguments), ensure_ascii=False)
    return f"{tool.name} would call the MCP tool {tool.remote_name!r} of {tool.url_template} with {given}"
