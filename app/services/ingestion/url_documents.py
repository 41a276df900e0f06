"""Documents added by URL: fetched through the SSRF guard (app/net/fetch.py), named from the
server's file name or the URL, then queued as an ingestion job like an upload (or, for the CLI,
ingested at once), remembering where they came from."""

from __future__ import annotations

import asyncio
import shutil
import uuid

import anyio.to_thread

from app.db.database import Database
from app.db.enums import MemberRole
from app.errors import ValidationError
from app.llm.base import Embedder
from app.net.addresses import AddressPolicy
from app.net.fetch import Fetched, FetchPolicy, fetch
from app.rag.ingest.parsing import kind_by_name
from app.rag.ingest.pipeline import IngestSummary, Source
from app.rag.ingest.types import DocumentKind
from app.services import documents, projects
from app.services.ingestion import jobs
from app.services.people.access import THE_SERVER, Caller
from app.services.records import JobOrigin
from app.settings import IngestSettings, Settings

# The media types a parser reads, and the extension that picks it when the URL's name has none.
MEDIA_TYPES: dict[str, str] = {
    "text/plain": ".txt",
    "text/markdown": ".md",
    "text/x-markdown": ".md",
    "text/html": ".html",
    "application/xhtml+xml": ".html",
    "application/pdf": ".pdf",
    "text/csv": ".csv",
    "text/x-rst": ".rst",
    "application/json": ".json",
    "application/xml": ".xml",
    "text/xml": ".xml",
    "application/yaml": ".yaml",
    "application/x-yaml": ".yaml",
    "application/toml": ".toml",
    "text/x-python": ".py",
}
# A server that says text/plain may be serving Markdown or code (raw file hosts do): the name decides.
_PLAIN_KINDS = frozenset({DocumentKind.TEXT, DocumentKind.MARKDOWN, DocumentKind.CODE})
MAX_URL = 2048


def policy_of(settings: IngestSettings) -> FetchPolicy:
    return FetchPolicy(
        addresses=AddressPolicy.of(settings.url_allow_private, settings.url_allowed_networks),
        max_bytes=settings.url_max_bytes,
        timeout=settings.url_timeout,
        max_redirects=settings.url_max_redirects,
        content_types=frozenset(MEDIA_TYPES),
    )


def document_name(fetched: Fetched) -> str:
    """The name the server or the URL gives, sanitised like an upload's, with the extension of the
    content type added when the name's own says another kind (``index.php`` served as HTML is
    ``index.php.html``; ``notes.md`` served as text/plain stays Markdown)."""
    name = documents.clean_upload_name(fetched.name, "url")
    extension = MEDIA_TYPES[fetched.content_type]
    named = kind_by_name(name)
    if fetched.content_type == "text/plain" and named in _PLAIN_KINDS:
        return name
    if named is kind_by_name(f"x{extension}"):
        return name
    return documents.clean_upload_name(name[: documents.MAX_NAME - len(extension)] + extension, "url")


def _checked(url: str) -> str:
    url = url.strip()
    if not url:
        raise ValidationError("url", "needs a URL")
    if len(url) > MAX_URL:
        raise ValidationError("url", f"is longer than {MAX_URL} characters")
    return url


def add_from_url(
    store: Database, embedder: Embedder, settings: IngestSettings, project_id: int, url: str
) -> IngestSummary:
    """Fetch ``url`` and ingest it now (`ragchat ingest --url`, in its own foreground, outside any
    event loop); the document records the final URL. Raises the fetch errors of app/errors.py
    (nothing written) or ValidationError for a bad URL."""
    url = _checked(url)
    projects.get(store, project_id)  # a missing knowledge base is said before anything is fetched
    fetched = asyncio.run(fetch(url, policy_of(settings)))
    source = Source.from_bytes(document_name(fetched), fetched.data, source_url=fetched.url)
    return documents.ingest(store, embedder, settings, project_id, [source])


async def queue_from_url(
    store: Database,
    settings: Settings,
    project_id: int,
    url: str,
    api_key_id: int | None = None,
    *,
    caller: Caller = THE_SERVER,
) -> int:
    """Fetch ``url`` on the event loop (bounded by the fetch policy and the outbound gate, holding
    no worker thread while the remote answers), spool the body and queue an ingestion job for it
    (origin URL) for the server's worker; returns the job's id. Raises the fetch errors (nothing
    stored), ValidationError, or LimitExceededError when the queue is full."""
    url = _checked(url)
    # Said before anything is fetched: a caller who may not add documents makes the server fetch nothing.
    await anyio.to_thread.run_sync(lambda: projects.require_role(store, project_id, MemberRole.EDITOR, caller=caller))
    fetched = await fetch(url, policy_of(settings.ingest))
    return await anyio.to_thread.run_sync(_queue, store, settings, project_id, fetched, api_key_id, caller)


def _queue(
    store: Database, settings: Settings, project_id: int, fetched: Fetched, api_key_id: int | None, caller: Caller
) -> int:
    folder = jobs.spool_dir(settings) / uuid.uuid4().hex
    folder.mkdir(parents=True)
    target = folder / "0"
    target.write_bytes(fetched.data)
    intake = jobs.Intake(document_name(fetched), len(fetched.data), target, source_url=fetched.url)
    try:
        return jobs.create(store, settings.jobs, project_id, JobOrigin.URL, [intake], api_key_id, caller=caller).id
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
