"""``GET /api/knowledge-bases/{id}/export``: the knowledge base as an archive
(app/services/project_archive.py), for its owners.

A download rather than a GraphQL field: an archive is a file of any size, which a browser saves
through a plain link (the session cookie) and a script with ``curl -H 'Authorization: Bearer …'``.
It is written to a private temporary folder in a worker thread, sent, then deleted.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import anyio.to_thread
from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from starlette.background import BackgroundTask

from app.errors import ForbiddenError, NotFoundError, RagchatError
from app.services import project_archive
from app.services.people.access import Caller, CallerKind

EXPORT_PATH = "/api/knowledge-bases/{project_id}/export"
MEDIA_TYPE = "application/gzip"


def _file_name(name: str) -> str:
    """A file name from the knowledge base's name: letters, digits, '-' and '_' only."""
    return (re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-")[:80] or "knowledge-base") + ".ragchat.tar.gz"


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"errors": [{"message": message}]}, status)


def archive_routes() -> APIRouter:
    router = APIRouter()

    @router.get(EXPORT_PATH)
    async def export(project_id: str, request: Request) -> Response:
        caller = request.scope.get("state", {}).get("caller")
        if not isinstance(caller, Caller) or caller.kind == CallerKind.ANONYMOUS:
            return _error(401, "sign in first: this server knows its people")
        if not (project_id.isascii() and project_id.isdigit()) or len(project_id) > 18:
            return _error(404, f"knowledge base {project_id[:40]!r} not found")
        store = request.app.state.container.store
        folder = Path(tempfile.mkdtemp(prefix="ragchat-export-"))
        target = folder / "archive.tar.gz"
        try:
            report = await anyio.to_thread.run_sync(
                lambda: project_archive.export_project(store, int(project_id), target, caller=caller)
            )
        except RagchatError as exc:
            shutil.rmtree(folder, ignore_errors=True)
            status = 404 if isinstance(exc, NotFoundError) else 403 if isinstance(exc, ForbiddenError) else 500
            return _error(status, exc.message)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return FileResponse(
            target,
            media_type=MEDIA_TYPE,
            filename=_file_name(report.name),
            background=BackgroundTask(shutil.rmtree, folder, ignore_errors=True),
        )

    return router
