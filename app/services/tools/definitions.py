"""What a tool definition may say, checked before anything is stored (every problem reported at once).

A tool's input schema must itself be a valid JSON Schema (Draft 2020-12) of an object, since models
are told it and arguments are validated against it before any call. An HTTP tool's URL is fixed up
to its path: placeholders (``{order_id}``) may stand only in the path and query and must name
properties of the input schema, so a model can never choose the host a call goes to. Headers carry
secrets by reference only: each names a secret in the server's settings that may be sent to the
origin of every request the tool makes (``RAGCHAT_TOOLS__SECRET_ORIGINS``).
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from app.db.enums import HttpMethod
from app.settings import SECRET_NAME, ToolSettings, origin_of

NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")  # OpenAI's function-name rule, starting with a letter
GROUP = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
HEADER = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}")  # an HTTP token (RFC 9110)
# Headers the HTTP client sets itself; a tool setting them could smuggle a second request.
RESERVED_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection", "upgrade", "te"})
DESCRIPTION_MAX = 2000
EXAMPLES_MAX = 10
EXAMPLE_MAX = 500
URL_MAX = 2000
TIMEOUT_MAX = 120.0
DEFAULT_TIMEOUT = 10.0


@dataclass(frozen=True)
class DryRun:
    """The request that shows what a side-effecting call would do, without doing it."""

    method: str
    url_template: str


@dataclass(frozen=True)
class ToolChanges:
    """Fields to set; None means "leave as is" (or the default, on create)."""

    name: str | None = None
    description: str | None = None
    input_schema: Any = None  # a JSON object, as the client sent it
    examples: list[str] | None = None
    group: str | None = None
    core: bool | None = None
    method: str | None = None
    url_template: str | None = None
    headers: Mapping[str, str] | None = None  # header name -> secret name
    timeout_seconds: float | None = None
    side_effects: bool | None = None
    dry_run: DryRun | None = None

    def http_fields(self) -> dict[str, Any]:
        """The fields only an HTTP tool has, as given (for refusing them on a built-in one)."""
        names = ("method", "url_template", "headers", "timeout_seconds", "side_effects", "dry_run", "input_schema")
        return {name: getattr(self, name) for name in names if getattr(self, name) is not None}


Problems = list[tuple[str, str]]


def check_common(changes: ToolChanges) -> Problems:
    """The fields every tool has."""
    problems: Problems = []
    if changes.name is not None and not NAME.fullmatch(changes.name):
        problems.append(("name", "1 to 64 letters, digits, '_' or '-', starting with a letter"))
    if changes.description is not None and not 1 <= len(changes.description.strip()) <= DESCRIPTION_MAX:
        problems.append(("description", f"must be 1 to {DESCRIPTION_MAX} characters"))
    if changes.group is not None and not GROUP.fullmatch(changes.group):
        problems.append(("group", "1 to 64 lower-case letters, digits, '_' or '-'"))
    if changes.examples is not None:
        if len(changes.examples) > EXAMPLES_MAX:
            problems.append(("examples", f"at most {EXAMPLES_MAX}"))
        for i, example in enumerate(changes.examples):
            if not 1 <= len(example.strip()) <= EXAMPLE_MAX:
                problems.append((f"examples[{i}]", f"must be 1 to {EXAMPLE_MAX} characters"))
    return problems


def placeholders(template: str) -> list[str]:
    """The ``{name}`` fields of a URL template ("{{" is a literal brace)."""
    return [field for _, field, _, _ in string.Formatter().parse(template) if field is not None]


def check_url(template: str, field: str, properties: set[str]) -> Problems:
    """An http(s) URL whose scheme and host are literal and whose placeholders are input properties."""
    if len(template) > URL_MAX:
        return [(field, f"must be at most {URL_MAX} characters")]
    try:
        names = placeholders(template)
    except ValueError as exc:
        return [(field, f"not a URL template: {exc}")]
    if bad := [name for name in names if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)]:
        return [(field, f"placeholders are plain names like {{order_id}}, not {bad[0]!r}")]
    parts = urlsplit(template)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return [(field, "must be an http:// or https:// URL with a host")]
    if "{" in parts.netloc or "}" in parts.netloc:
        return [(field, "the host cannot be a placeholder: a model must never choose where a call goes")]
    if parts.username or parts.password:
        return [(field, "cannot carry credentials: name a secret in headers instead")]
    if unknown := sorted(set(names) - properties):
        return [(field, f"placeholders {unknown} are not properties of inputSchema")]
    return []


def check_method(method: str, field: str) -> Problems:
    allowed = [m.value for m in HttpMethod]
    return [] if method in allowed else [(field, f"must be one of {', '.join(allowed)}")]


def check_headers(headers: Mapping[str, str], origins: list[str | None], settings: ToolSettings) -> Problems:
    """Each header is a token, not one the client sets itself, and names a secret that may be sent
    to every origin the tool's requests go to (its URL's, its dry run's). An unknown secret and one
    bound elsewhere read the same, so no answer tells which secrets exist."""
    problems: Problems = []
    for header, secret in headers.items():
        where = f"headers.{header[:100]}"
        if not HEADER.fullmatch(header) or header.lower() in RESERVED_HEADERS:
            problems.append((where, "not a header a tool may set"))
        elif not SECRET_NAME.fullmatch(secret.lower()):
            problems.append((where, "a secret's name: letters, digits and '_' (the value stays in the settings)"))
        elif refused := [o for o in origins if o is not None and not settings.may_send(secret, o)]:
            problems.append((where, secret_refused(secret, refused[0])))
    return problems


def secret_refused(secret: str, origin: str) -> str:
    """The one answer for a secret that does not exist and one that may not go to ``origin``."""
    return (
        f"no secret {secret[:64]!r} may be sent to {origin}: the operator configures each secret with the origins "
        "it may be sent to (RAGCHAT_TOOLS__SECRETS__<NAME>, RAGCHAT_TOOLS__SECRET_ORIGINS__<NAME>)"
    )


def check_http(
    *,
    method: str,
    url_template: str,
    headers: Mapping[str, str],
    timeout_seconds: float,
    side_effects: bool,
    dry_run: DryRun | None,
    properties: set[str],
    settings: ToolSettings,
) -> Problems:
    """An HTTP tool's fields, as they will be stored."""
    problems = check_method(method, "method") + check_url(url_template, "urlTemplate", properties)
    urls = [url_template, *([dry_run.url_template] if dry_run is not None else [])]
    problems += check_headers(headers, [origin_of(url) for url in urls], settings)
    if not 0 < timeout_seconds <= TIMEOUT_MAX:
        problems.append(("timeoutSeconds", f"must be above 0 and at most {TIMEOUT_MAX:g}"))
    if dry_run is not None:
        if not side_effects:
            problems.append(("dryRun", "only a tool with side effects has a dry run"))
        problems += check_method(dry_run.method, "dryRun.method")
        problems += check_url(dry_run.url_template, "dryRun.urlTemplate", properties)
    return problems


def check_mcp(*, url: str, headers: Mapping[str, str], timeout_seconds: float, settings: ToolSettings) -> Problems:
    """An MCP tool's server: an http(s) URL without placeholders or credentials, and secret headers
    that may go to its origin."""
    problems = check_url(url, "url", set())
    if not problems and placeholders(url):
        problems.append(("url", "an MCP server's URL has no placeholders"))
    problems += check_headers(headers, [origin_of(url)], settings)
    if not 0 < timeout_seconds <= TIMEOUT_MAX:
        problems.append(("timeoutSeconds", f"must be above 0 and at most {TIMEOUT_MAX:g}"))
    return problems


def schema_properties(schema: Any) -> set[str]:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    return set(properties) if isinstance(properties, dict) else set()
