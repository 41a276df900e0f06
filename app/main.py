"""The ASGI application: FastAPI + Strawberry GraphQL (GraphiQL at /graphql) + the built frontend."""

from __future__ import annotations

import gc
import importlib
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, Response
from starlette.datastructures import Headers
from starlette.routing import Route
from starlette.types import Scope
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL

from app import __version__
from app.archive_api.router import archive_routes
from app.auth.oidc import oidc_routes
from app.body_limit import BodyLimitMiddleware
from app.container import Container
from app.errors import StorageError
from app.graphql.context import container_of, get_context
from app.graphql.router import RagchatGraphQLRouter
from app.graphql.schema import build_schema
from app.mcp_api.server import MCP_PATH, McpApp
from app.net import outbound
from app.openai_api.router import openai_routes
from app.ops import metrics, scrape, tracing
from app.ops.draining import Drain
from app.ops.readiness import Readiness
from app.request_log import RequestLog
from app.security import (
    KEY_REQUIRED,
    PREFLIGHT_HEADERS,
    HostPolicy,
    Perimeter,
    allowed_origins,
    bearer_token,
    client_address,
    session_cookie,
)
from app.services import health, leases
from app.services.people.access import Caller, CallerKind
from app.services.people.identify import Credentials
from app.settings import Settings
from app.web import BUILT_FRONTEND, frontend_app

log = logging.getLogger("ragchat")
FULL_COLLECTIONS_RARER = 10  # the third GC threshold is multiplied by this while serving (see lifespan)


async def _open_store(container: Container, lease: leases.ServerLease) -> bool:
    """Check the migration state, register this server (app/services/leases.py) and recover what
    stopped processes left unfinished. A database that cannot be opened or written is logged, not
    fatal: a crash here would only become a restart loop, while a running server says what is wrong
    on every request and recovers once the storage does."""
    try:
        state = await anyio.to_thread.run_sync(health.check, container.store)
        if not state.ok:
            log.warning(
                "database is at revision %s, the code expects %s: run `ragchat migrate`",
                state.migration_revision,
                state.head_revision,
            )
            return False
        me = await anyio.to_thread.run_sync(lease.acquire)
        found = await anyio.to_thread.run_sync(lambda: leases.recover(container.store, me, startup=True))
    except StorageError as exc:
        log.error("%s (%s); requests will fail until it can be used", exc.message, container.settings.database_url)
        return False
    leases.report(found, startup=True)
    return True


async def identify_request(scope: Scope, bearer: str, cookie: str) -> Caller | None:
    """The caller a request's key or session cookie names (app/services/people/identify.py); off
    the loop only when that reads the database."""
    container = scope["app"].state.container
    identifier = container.identifier
    given = Credentials(bearer=bearer, cookie=cookie, proxy_email=container.trusted_proxies.email(scope))
    if identifier.needs_database(given):
        return await anyio.to_thread.run_sync(identifier.identify, given)
    return identifier.identify(given)


def create_app(settings: Settings, container: Container | None = None, *, tune_gc: bool | None = None) -> FastAPI:
    """Build the app. The container (store, providers) is made in the lifespan unless one is given,
    in which case the caller owns it (tests inject fakes this way). ``tune_gc``: whether the app
    may tune the process's garbage collector for a long-lived server (default: when it builds its
    own container, as `ragchat serve` does; a host that hands one in keeps its collector as it is)."""
    keys = settings.api.all_keys()
    tune = container is None if tune_gc is None else tune_gc

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        owned = container is None
        # Requests to addresses users chose wait for a slot of their own, never for the thread pool.
        outbound.configure(settings.outbound)
        traced = bool(settings.ops.otlp_endpoint) and tracing.configure(settings.ops.otlp_endpoint)
        if owned:
            app.state.container = Container.build(settings)
        store = app.state.container.store
        scrape.watch_pool(store.engine)
        metrics.forget_dead_workers()
        lease = leases.ServerLease(store)
        ready = await _open_store(app.state.container, lease)
        # /readyz: the embedder and the indexes load in the background meanwhile (app/ops/readiness.py).
        readiness = app.state.readiness = Readiness(store, lambda: app.state.container.embedder)
        readiness.start()
        # The chat engine's modules, which the container imports on first use, load in a worker
        # thread now rather than on the event loop at the first chat (a ~27 ms stall of every stream).
        await anyio.to_thread.run_sync(importlib.import_module, "app.services.chat.service")
        # On SIGTERM / SIGINT: no new turns, streaming answers finish first (app/ops/draining.py).
        drain = Drain(settings.ops.shutdown_grace, lambda: app.state.container.live.running)
        drain.install()
        worker = app.state.container.jobs
        recoverer = None
        if ready:  # the ingestion worker needs the migrated tables
            await worker.start()
            assert lease.id is not None
            recoverer = leases.Recoverer(lease, settings.recovery_seconds, worker.wake)
            recoverer.start()
        thresholds = gc.get_threshold()
        if tune:
            # Start-up objects live for the whole process: keep the collector from walking them on
            # every full collection (a 134 ms pause at 8 concurrent streams before, 2.4 ms after).
            gc.collect()
            gc.freeze()
            # And full collections 10x rarer: each walks every live turn's objects, and at 32 streams
            # they came every few hundred ms (longest pause 35-265 ms; 14-29 ms with this). Young
            # collections, which free most garbage, run as often as before.
            gc.set_threshold(thresholds[0], thresholds[1], thresholds[2] * FULL_COLLECTIONS_RARER)
        if not keys:
            log.warning(
                "no API keys configured: anyone who can reach %s:%s can use this server", settings.host, settings.port
            )
        try:
            async with mcp.manager.run():  # the MCP transport's task group, for the server's life
                yield
        finally:
            drain.uninstall()
            if tune:
                gc.set_threshold(*thresholds)
                gc.unfreeze()
            if recoverer is not None:
                await recoverer.stop()
            await readiness.stop()
            await worker.stop()
            try:
                await anyio.to_thread.run_sync(lease.release)
            except StorageError as exc:  # its lock is let go all the same: a peer recovers its rows
                log.warning("could not deregister this server: %s", exc.message)
            if owned:
                await app.state.container.aclose()
                del app.state.container
            metrics.process_stopped()
            if traced:
                tracing.shutdown()  # sends the spans still buffered

    mcp = McpApp()  # /mcp (app/mcp_api/): one per app, its manager runs once
    # No OpenAPI pages: the API is GraphQL (schema.graphql, GraphiQL at /graphql).
    app = FastAPI(
        title="ragchat", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None
    )
    if container is not None:
        app.state.container = container
    # Innermost: a body is counted only once the request passed the perimeter (app/body_limit.py).
    app.add_middleware(BodyLimitMiddleware, max_bytes=lambda: settings.api.max_upload_bytes)
    origins = allowed_origins(settings.api.cors_origins)
    # Host, Origin, API key and CSRF checks, for HTTP and websocket handshakes (app/security.py).
    app.add_middleware(
        Perimeter,
        hosts=HostPolicy.build(settings.api.allowed_hosts, settings.host),
        origins=origins,
        identify=identify_request,
    )
    if origins:  # outside the perimeter: preflights are answered, and refusals carry CORS headers the page can read
        app.add_middleware(
            CORSMiddleware,
            allow_origins=sorted(origins),
            allow_methods=["GET", "POST", "OPTIONS"],
            allow_headers=["authorization", "content-type", "x-request-id", *PREFLIGHT_HEADERS],
            expose_headers=["x-request-id"],
        )
    # A span per request when tracing is on (app/ops/tracing.py), inside the request log so its line has the trace id.
    app.add_middleware(tracing.TraceRequests)
    # Outermost of all: refusals and preflights get their id and their line too (app/request_log.py).
    app.add_middleware(RequestLog)
    graphql = RagchatGraphQLRouter(
        build_schema(settings.api),
        context_getter=get_context,
        graphql_ide="graphiql",
        subscription_protocols=[GRAPHQL_TRANSPORT_WS_PROTOCOL],
        allowed_origins=sorted(origins),  # strawberry's own websocket check agrees with the perimeter's
        max_subscriptions_per_connection=settings.api.max_operations_per_socket,
        multipart_uploads_enabled=True,
        frontend_dir=settings.frontend_dir or BUILT_FRONTEND,
    )
    app.include_router(graphql, prefix="/graphql")
    app.include_router(oidc_routes(settings))  # /auth/oidc/login and /callback (app/auth/oidc.py)
    app.include_router(openai_routes())  # /v1/models and /v1/chat/completions (app/openai_api/)
    app.include_router(archive_routes())  # a knowledge base's archive for its owners (app/archive_api/)
    # POST only: stateless, so no session to DELETE and no stream a GET would hold open (MCP lets a
    # server answer those 405).
    app.router.routes.append(Route(MCP_PATH, endpoint=mcp.asgi, methods=["POST"]))

    @app.get("/healthz")
    def healthz(request: Request) -> JSONResponse:
        store = container_of(request).store
        try:
            # And which server process answered: its lease (servers.id) and pid, one per worker.
            return JSONResponse({**vars(health.check(store)), "server": store.owner, "pid": os.getpid()})
        except StorageError as exc:
            return JSONResponse({"ok": False, "error": exc.message}, status_code=503)

    @app.get("/readyz")
    async def readyz(request: Request) -> JSONResponse:
        """200 when this process can serve turns at full speed, else 503 with the reasons
        (app/ops/readiness.py); /healthz says whether it is alive."""
        readiness: Readiness = request.app.state.readiness
        ready, body = await anyio.to_thread.run_sync(readiness.check)
        if not ready:
            readiness.start()  # a warm-up that hit a problem (say, before `ragchat migrate`) tries again
        return JSONResponse({**body, "pid": os.getpid()}, status_code=200 if ready else 503)

    scrapers = scrape.Allowed(settings.ops.metrics_allow)

    @app.get("/metrics")
    async def metrics_page(request: Request) -> Response:
        """Prometheus's scrape (app/ops/metrics.py): for an allow-listed peer, or a caller with full
        rights (the server's key, an administrator's unrestricted key, an open server)."""
        if not scrapers.allows(client_address(request.scope)):
            headers = Headers(scope=request.scope)
            caller = await identify_request(
                request.scope, bearer_token(headers.get("authorization")), session_cookie(headers.get("cookie"))
            )
            if not isinstance(caller, Caller) or caller.kind == CallerKind.ANONYMOUS:
                refused = {"errors": [{"message": KEY_REQUIRED}]}
                return JSONResponse(refused, 401, headers={"WWW-Authenticate": "Bearer"})
            if not caller.full_rights:
                return JSONResponse({"errors": [{"message": "reading metrics needs full rights"}]}, 403)
        try:
            await anyio.to_thread.run_sync(scrape.read_ingestion, container_of(request).store)
        except StorageError as exc:  # the other families still say how the server is doing
            log.warning("metrics: the ingestion queue could not be read: %s", exc.message)
        scrape.read_indexes(container_of(request).store)
        body, content_type = metrics.exposition()
        return Response(body, media_type=content_type)

    frontend = settings.frontend_dir or BUILT_FRONTEND
    if (frontend / "index.html").is_file():
        # Mounted last so that /graphql, /healthz and every other route match first.
        app.mount("/", frontend_app(frontend), name="frontend")
    elif settings.frontend_dir is not None:
        log.warning("no index.html in RAGCHAT_FRONTEND_DIR=%s: serving the API only", frontend)
    return app
