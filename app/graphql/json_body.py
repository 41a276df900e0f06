"""JSON from clients (HTTP bodies, multipart operations, websocket messages), made safe to store.

JSON may escape lone UTF-16 surrogates (``"\\ud800"``); Python decodes them into strings that can
never be encoded as UTF-8, so the first write to SQLite failed with a UnicodeEncodeError. They are
replaced with U+FFFD, as any UTF-8 decoder does with broken text. JSON nested too deeply for the
decoder is refused as malformed rather than escaping as a RecursionError.
"""

from __future__ import annotations

import json
import re
from typing import Any

_LONE_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def decode(data: str | bytes) -> Any:
    """Parse client JSON; raises :class:`json.JSONDecodeError` for anything malformed."""
    try:
        value = json.loads(data)
    except RecursionError as exc:
        raise json.JSONDecodeError("JSON nested too deeply", "", 0) from exc
    except UnicodeDecodeError as exc:  # bytes that are no UTF-8 (nor UTF-16/32) at all
        raise json.JSONDecodeError(f"not UTF-8: {exc.reason}", "", exc.start) from exc
    text = data if isinstance(data, str) else data.decode("utf-8", "replace")
    if _LONE_SURROGATE_ESCAPE.search(text) or _SURROGATE.search(text):
        value = _replace_surrogates(value)
    return value


def _replace_surrogates(value: Any) -> Any:
    """Every string in ``value`` with lone surrogates replaced (iterative: depth is the client's)."""

    def fix(item: Any) -> Any:
        return _SURROGATE.sub("\ufffd", item) if isinstance(item, str) else item

    root = [value]
    stack: list[list[Any] | dict[Any, Any]] = [root]
    while stack:
        container = stack.pop()
        if isinstance(container, dict):
            items = list(container.items())
            container.clear()
            for key, item in items:
                container[fix(key)] = fix(item)
                if isinstance(item, list | dict):
                    stack.append(item)
        else:
            for i, item in enumerate(container):
                container[i] = fix(item)
                if isinstance(item, list | dict):
                    stack.append(item)
    return root[0]
