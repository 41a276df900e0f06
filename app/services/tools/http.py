"""HTTP tools: a call becomes one request through the SSRF-guarded fetcher (app/net/fetch.py),
never any other client, on the event loop and within the outbound gate (app/net/outbound.py).

- The URL template's ``{name}`` placeholders are filled with the arguments, URL-encoded (a value
  can never add a path segment, a query parameter or a host: the host is never a placeholder,
  app/services/tools/definitions.py). A placeholder whose argument is missing is an error to the model.
- A request that is not a GET carries every argument as its JSON body.
- Headers carry secrets by name (``RAGCHAT_TOOLS__SECRETS__<NAME>``), read now, and only to the
  origins the operator bound each to (``RAGCHAT_TOOLS__SECRET_ORIGINS__<NAME>``): any other fails
  the call, in the same words as a secret that does not exist. A value the server echoes back is
  replaced by ``[secret]`` in the answer; a redirect to another origin drops them (app/net/fetch.py).
- The tool's timeout bounds the whole request, redirects included, by the wall clock; the response is cut off past
  ``RAGCHAT_TOOLS__MAX_RESPONSE_BYTES``; any 2xx status and any content type is an answer, decoded
  as UTF-8 (bad bytes replaced).
- Loopback, private and link-local addresses are refused unless the operator allows them
  (``RAGCHAT_TOOLS__ALLOW_PRIVATE``, ``RAGCHAT_TOOLS__ALLOWED_NETWORKS``).

A side-effecting tool's preview runs its dry-run request (same rules) or, without one, only
describes the request it would send (:func:`describe`). What the model reads is fenced and
stripped of control tokens by the tool loop (app/services/tools/loop.py ``fence``).
"""

from __future__ import annotations

import json
import string
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, unquote

from app.db.models import Tool
from app.errors import FetchError, ValidationError
from app.net.addresses import AddressPolicy
from app.net.fetch import FetchPolicy, fetch
from app.services.tools.builtins import ToolOutput
from app.services.tools.definitions import secret_refused
from app.settings import ToolSettings, origin_of


def fill(template: str, arguments: Mapping[str, Any]) -> str:
    """The URL with every ``{name}`` replaced by its argument, URL-encoded (``/`` too; ``{{`` is a
    literal brace, as in tool_definitions.placeholders). A value filling part of the path stays in
    its segment: ``.`` and ``..`` (in any percent-encoding) and slashes are refused, since servers and
    proxies that decode them would move the request elsewhere (``/users/{id}/profile`` to ``/profile``)."""
    out: list[str] = []
    in_query = False
    for literal, name, _, _ in string.Formatter().parse(template):
        out.append(literal)
        in_query = in_query or "?" in literal or "#" in literal
        if name is None:
            continue
        if arguments.get(name) is None:
            raise ValidationError(f"arguments.{name}", "the tool's URL needs this argument")
        given = arguments[name]
        text = given if isinstance(given, str) else json.dumps(given)
        if not in_query and _leaves_segment(text):
            raise ValidationError(
                f"arguments.{name}", "fills a path segment: it cannot be '.' or '..' or hold a slash or backslash"
            )
        out.append(quote(text, safe=""))
    return "".join(out)


def _leaves_segment(value: str) -> bool:
    """Whether ``value``, decoded as often as a chain of servers might, is a dot segment or has a slash."""
    for _ in range(4):
        if value.strip() in (".", "..") or "/" in value or "\\" in value:
            return True
        decoded = unquote(value)
        if decoded == value:
            return False
        value = decoded
    return True  # still encoded after four decodings: no honest identifier looks like that


def policy(settings: ToolSettings, timeout: float) -> FetchPolicy:
    return FetchPolicy(
        addresses=AddressPolicy.of(settings.allow_private, settings.allowed_networks),
        max_bytes=settings.max_response_bytes,
        timeout=timeout,
        max_redirects=3,
        content_types=None,
        user_agent="ragchat-tool",
        any_success=True,
    )


def headers(tool: Tool, settings: ToolSettings, url: str) -> dict[str, str]:
    """The tool's secret headers for a request to ``url``; FetchError for a secret that does not
    exist or may not go to its origin (the same words for both: tool_definitions.secret_refused)."""
    out = {}
    origin = origin_of(url)
    for header, secret in sorted(tool.header_secrets.items()):
        if not settings.may_send(secret, origin):
            raise FetchError(secret_refused(secret, origin or url[:100]))
        out[header] = settings.secrets[secret.lower()].get_secret_value()
    return out


def redact(text: str, secrets: Mapping[str, str]) -> str:
    """``text`` with every secret value sent replaced, so a server echoing its request gives none back."""
    for value in sorted(set(secrets.values()), key=len, reverse=True):
        if value:
            text = text.replace(value, "[secret]")
    return text


async def call(
    tool: Tool,
    arguments: Mapping[str, Any],
    settings: ToolSettings,
    *,
    method: str | None = None,
    url_template: str | None = None,
) -> ToolOutput:
    """Send the tool's request (or the one given: its dry run) and return the answer's text.
    Raises FetchError (UrlRefusedError, TooLargeError, ...) or ValidationError (a missing argument)."""
    method = method or (tool.http_method.value if tool.http_method else "GET")
    template = url_template or tool.url_template
    if template is None:
        raise ValidationError("tool", f"{tool.name!r} is not an HTTP tool")
    url = fill(template, arguments)
    body = None if method == "GET" else json.dumps(dict(arguments)).encode()
    sent = headers(tool, settings, url)
    fetched = await fetch(url, policy(settings, tool.timeout_seconds), method=method, body=body, headers=sent)
    return ToolOutput(redact(fetched.data.decode("utf-8", errors="replace"), sent))


def describe(tool: Tool, arguments: Mapping[str, Any]) -> str:
    """The request a call would send, in words (a side-effecting tool without a dry run)."""
    method = tool.http_method.value if tool.http_method else "GET"
    try:
        url = fill(tool.url_template or "", arguments)
    except ValidationError as exc:
        url = f"{tool.url_template} ({exc.message})"
    body = "" if method == "GET" else f" with the JSON body {json.dumps(dict(arguments), ensure_ascii=False)}"
    return f"{tool.name} would send {method} {url}{body}"


async def preview(tool: Tool, arguments: Mapping[str, Any], settings: ToolSettings) -> ToolOutput:
    """What a side-effecting call would do: its dry run's answer when it has one, else the request
    described. Never the tool's own request."""
    dry = tool.dry_run
    if not dry:
        return ToolOutput(describe(tool, arguments))
    answer = await call(tool, arguments, settings, method=dry["method"], url_template=dry["url_template"])
    return ToolOutput(f"{describe(tool, arguments)}. Its dry run answered:\n{answer.content}")
