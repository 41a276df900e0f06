"""What the ingestion-job fields do: spool an upload and queue its job, cancel, retry, wait, stream.

The resolvers in knowledge/mutations.py, knowledge/queries.py and subscriptions.py stay one line each over these.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any, BinaryIO

import anyio.to_thread
import strawberry
from strawberry.file_uploads import Upload

from app.errors import RagchatError, ValidationError
from app.graphql.context import Info, caller_of
from app.graphql.errors import parse_id, to_graphql
from app.graphql.knowledge.job_types import IngestionItem, IngestionJob
from app.security import bearer_token, key_number
from app.services import documents, projects
from app.services.ingestion import jobs, spool, url_documents
from app.services.records import JobOrigin, MemberRole

# How often a waiting client re-reads its job when no event came (another process may move it).
POLL = 2.0


def _files(files: list[Upload]) -> list[tuple[str, BinaryIO]]:
    opened: list[tuple[str, BinaryIO]] = []
    for i, upload in enumerate(files):
        handle = getattr(upload, "file", None)
        if handle is None or not callable(getattr(handle, "read", None)):  # a string written where a file goes
            raise ValidationError(f"files[{i}]", "must be a file sent as a part of a multipart request")
        opened.append((getattr(upload, "filename", None) or f"upload-{i}", handle))
    return opened


def _api_key_id(info: Info) -> int | None:
    keys = [k.get_secret_value() for k in info.context.container.settings.api.api_keys]
    request = info.context.request
    header = request.headers.get("authorization") if request is not None else None
    return key_number(bearer_token(header), keys) if keys else None


async def upload(
    info: Info, project_id: strawberry.ID, files: list[Upload], wait: bool, tags: list[str] | None = None
) -> Any:
    """Spool the files, store the job (limits checked) with the tags their documents get, wake the
    worker; with ``wait``, return once every file has ended."""
    container = info.context.container
    settings = container.settings
    key_id = _api_key_id(info)
    caller = caller_of(info)

    def queue() -> int:
        pid = parse_id(project_id, "projectId")
        # Asked before the files are spooled: a caller who may not add documents stores nothing.
        projects.require_role(container.store, pid, MemberRole.EDITOR, caller=caller)
        if tags is not None:  # before the files are spooled: bad tags store nothing
            documents.check_tags(tags)
        intakes = spool.spool(jobs.spool_dir(settings), _files(files), settings.api.max_upload_bytes)
        try:
            job = jobs.create(
                container.store, settings.jobs, pid, JobOrigin.UPLOAD, intakes, key_id, tags=tags, caller=caller
            )
            return job.id
        except BaseException:
            spool.discard(intakes)
            raise

    try:
        job_id = await anyio.to_thread.run_sync(queue)
    except RagchatError as exc:
        return to_graphql(exc)
    finally:
        for item in files:  # starlette's spooled temporary files: release them now
            if callable(getattr(item, "close", None)):
                await item.close()  # type: ignore[attr-defined]
    container.jobs.wake()
    if wait:
        await wait_for_job(info, job_id)
    return await _job(info, job_id)


async def from_url(info: Info, project_id: strawberry.ID, url: str, wait: bool) -> Any:
    """Fetch the document (the SSRF guard and limits apply, on the event loop), queue its job, wake
    the worker; with ``wait``, return once it has ended."""
    container = info.context.container
    key_id = _api_key_id(info)
    try:
        pid = parse_id(project_id, "projectId")
        job_id = await url_documents.queue_from_url(
            container.store, container.settings, pid, url, key_id, caller=caller_of(info)
        )
    except RagchatError as exc:
        return to_graphql(exc)
    container.jobs.wake()
    if wait:
        await wait_for_job(info, job_id)
    return await _job(info, job_id)


async def _job(info: Info, job_id: int) -> Any:
    store, caller = info.context.container.store, caller_of(info)
    try:
        return IngestionJob.of(await anyio.to_thread.run_sync(lambda: jobs.get(store, job_id, caller=caller)))
    except RagchatError as exc:
        return to_graphql(exc)


async def get(info: Info, id: strawberry.ID) -> Any:
    try:
        job_id = parse_id(id, "id")
    except RagchatError as exc:
        return to_graphql(exc)
    return await _job(info, job_id)


def _item_ids(item_ids: list[strawberry.ID] | None) -> list[int] | None:
    if item_ids is None:
        return None
    return [parse_id(item, f"itemIds[{i}]") for i, item in enumerate(item_ids)]


async def change(info: Info, id: strawberry.ID, item_ids: list[strawberry.ID] | None, *, retry: bool) -> Any:
    """Cancel or retry a job's items (all of them when ``item_ids`` is null); publishes the changes."""
    container, caller = info.context.container, caller_of(info)
    try:
        job_id = parse_id(id, "id")
        chosen = _item_ids(item_ids)
        if retry:
            limits = container.settings.jobs
            changed = await anyio.to_thread.run_sync(
                lambda: jobs.retry(container.store, limits, job_id, chosen, caller=caller)
            )
        else:
            changed = await anyio.to_thread.run_sync(
                lambda: jobs.cancel(container.store, job_id, chosen, caller=caller)
            )
    except RagchatError as exc:
        return to_graphql(exc)
    for row in changed:
        container.jobs.events.publish(row)
    if retry:
        container.jobs.wake()
    return await _job(info, job_id)


async def wait_for_job(info: Info, job_id: int) -> None:
    """Until every item of the job has ended."""
    async for _ in progress(info, None, strawberry.ID(str(job_id))):
        pass


async def progress(
    info: Info, project_id: strawberry.ID | None, job_id: strawberry.ID | None
) -> AsyncGenerator[Any, None]:
    """The stored state of each item first (so a client that reconnects picks up where things are),
    then every change as it happens. Per job it ends when every item has; per project it goes on."""
    container = info.context.container
    try:
        if (project_id is None) == (job_id is None):
            raise ValidationError("projectId", "give either projectId or jobId")
        pid = parse_id(project_id, "projectId") if project_id is not None else None
        jid = parse_id(job_id, "jobId") if job_id is not None else None
    except RagchatError as exc:
        yield to_graphql(exc)
        return
    with container.jobs.events.subscribe() as changes:  # before reading, so no change falls between
        try:
            caller = caller_of(info)
            stored = await anyio.to_thread.run_sync(
                lambda: jobs.unfinished_items(container.store, pid, jid, caller=caller)
            )
        except RagchatError as exc:
            yield to_graphql(exc)
            return
        state = {row.id: row for row in stored}
        for row in stored:
            yield IngestionItem.of(row)
        while jid is None or any(row.state in jobs.UNFINISHED_ITEM_STATES for row in state.values()):
            try:
                row = await asyncio.wait_for(changes.get(), POLL)
            except TimeoutError:
                if jid is not None:  # moved by another process, or deleted with its project
                    fresh = await anyio.to_thread.run_sync(jobs.items_of, container.store, [jid])
                    for now in fresh[0]:
                        if now.state != state.get(now.id, now).state or now.id not in state:
                            yield IngestionItem.of(now)
                    state = {now.id: now for now in fresh[0]}
                continue
            if (jid is not None and row.job_id != jid) or (pid is not None and row.project_id != pid):
                continue
            state[row.id] = row
            yield IngestionItem.of(row)
