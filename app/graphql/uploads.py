"""The GraphQL multipart request spec's ``map``, checked before files are put into the operation.

Strawberry follows the map blindly: a path to a list index out of range, through a string, or a
map that is not an object raised IndexError/TypeError/AttributeError, and the client got a 500.
Here every path is resolved first, and anything that does not fit is a 400 that says which path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cross_web import HTTPException

MAX_PATHS = 1000  # starlette already refuses more than 1000 files per request


def _bad(message: str) -> HTTPException:
    return HTTPException(400, f"Invalid multipart request: {message}")


def _slot(operations: Any, path: str) -> tuple[dict[str, Any] | list[Any], str | int]:
    """The container and key a file goes into, for one dotted path of the map."""
    keys = path.split(".")
    target = operations
    for depth, key in enumerate(keys):
        last = depth == len(keys) - 1
        if isinstance(target, list):
            if not (key.isascii() and key.isdigit()) or int(key) >= len(target):
                raise _bad(f"map path {path!r}: {key!r} is not an index of a list of {len(target)}")
            if last:
                return target, int(key)
            target = target[int(key)]
        elif isinstance(target, dict):
            if last:
                return target, key
            if key not in target:
                raise _bad(f"map path {path!r}: operations has no {key!r}")
            target = target[key]
        else:
            raise _bad(f"map path {path!r}: {key!r} does not lead into an object or a list")
    raise _bad(f"map path {path!r} is empty")


def place_files(operations: Any, files_map: Any, files: Mapping[str, Any]) -> Any:
    """``operations`` with each mapped file put where the map says; a 400 for any mismatch."""
    if not isinstance(operations, dict | list):
        raise _bad("'operations' must be a JSON object (or a list for a batch)")
    if not isinstance(files_map, dict):
        raise _bad("'map' must be a JSON object of file field name to a list of paths")
    slots: list[tuple[dict[str, Any] | list[Any], str | int, Any]] = []
    for field, paths in files_map.items():
        if isinstance(files.get(field), str | None):  # form fields and file parts share one mapping
            raise _bad(f"the map names file field {field!r}, but no such file part was sent")
        if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
            raise _bad(f"map entry {field!r} must be a non-empty list of paths (strings)")
        for path in paths:
            if len(slots) >= MAX_PATHS:
                raise _bad(f"the map has more than {MAX_PATHS} paths")
            container, key = _slot(operations, path)
            slots.append((container, key, files[field]))
    for container, key, upload in slots:  # only once every path is known to be good
        container[key] = upload  # type: ignore[index]
    return operations
