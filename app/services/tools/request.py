"""What a tool call would send, as one fingerprint: what approval compares with its preview.

A side-effecting call runs only once the user approves its preview, and the tool may be edited in
between (another method, another host, other secret headers). The preview stores
:func:`fingerprint` of the request it described; approval rebuilds it from the tool as it is then and
runs the call only when the two are equal (app/services/tools/approval.py). The fingerprint covers
the method, the final URL, the body and the header and secret *names* — never a secret's value,
which is read when the request is sent. A built-in tool's covers its name and arguments; an MCP
tool's its server, its name there, the arguments and the header and secret names.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from app.db.enums import ToolKind
from app.db.models import Tool
from app.errors import ValidationError
from app.services.tools.http import fill


def planned(tool: Tool, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The request a call of ``tool`` with these (checked) arguments would send, without secret values."""
    if tool.kind is ToolKind.BUILTIN:
        return {"builtin": tool.name, "arguments": dict(arguments)}
    if tool.kind is ToolKind.MCP:
        return {
            "mcp": tool.url_template,
            "tool": tool.remote_name,
            "arguments": dict(arguments),
            "headers": sorted([header.lower(), secret.lower()] for header, secret in tool.header_secrets.items()),
        }
    method = tool.http_method.value if tool.http_method else "GET"
    try:
        url = fill(tool.url_template or "", arguments)
    except ValidationError as exc:  # it cannot be sent as it is: that, too, must stay as previewed
        url = f"{tool.url_template} ({exc.message})"
    return {
        "method": method,
        "url": url,
        "body": None if method == "GET" else json.dumps(dict(arguments), sort_keys=True),
        "headers": sorted([header.lower(), secret.lower()] for header, secret in tool.header_secrets.items()),
    }


def fingerprint(tool: Tool, arguments: Mapping[str, Any]) -> str:
    """A SHA-256 (hex) of :func:`planned`."""
    text = json.dumps(planned(tool, arguments), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()
