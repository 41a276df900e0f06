"""Running the server: one process, or ``RAGCHAT_WORKERS`` processes on one port.

One event loop streams every answer of its process, and at 32 streams from a remote provider its
CPU (~0.7 ms per token) is more than one GIL gives (docs/BENCHMARKS.md, finding 7). With N workers
uvicorn's supervisor starts N processes (``spawn``: each imports the app through
:func:`app_from_env`, with the parent's settings in its environment), restarts one that dies, and
stops them all on SIGTERM / SIGINT. On Linux each worker listens on a socket of its own in the
port's SO_REUSEPORT group, so that the kernel spreads connections over them (:class:`_SpreadSocket`).

Each worker is a server of its own in the sense of app/services/leases.py: it registers a lease, so
what a killed worker was writing is marked failed by the others (or by its replacement at start-up);
its in-memory indexes follow the other workers' writes through the journals, as separate servers'
do; a client that reconnects to another worker follows its turn through the database
(app/services/chat/follow.py); and the workers count their generation slots together, so a cap
stays the server's (app/services/chat/shared_slots.py, in a folder made for the run); their metrics
are written to another such folder, so that /metrics reports them all (app/ops/metrics.py). ``ragchat serve``
never migrates, so workers never race to: the database is brought up to date by ``ragchat migrate``
beforehand, as for one process.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import sys
import tempfile
from typing import TYPE_CHECKING, Any

from app import logs
from app.ops.metrics import MULTIPROCESS_DIR
from app.security import check_exposure
from app.services.chat import shared_slots
from app.settings import Settings, env_name, load_settings

if TYPE_CHECKING:
    from fastapi import FastAPI

log = logging.getLogger("ragchat")

# A streamed answer is one small websocket message per token or few (~100 bytes): compressing
# each (permessage-deflate, on by default) cost ~0.2 ms of the event loop per message at 32
# streams (benchmarks/provider_concurrency.py) and saves next to nothing.
WEBSOCKET_OPTIONS: dict[str, Any] = {"ws_per_message_deflate": False}
APP_FACTORY = "app.serving:app_from_env"


def app_from_env() -> FastAPI:
    """The app of one worker process: settings from its environment (the parent's), logging set up."""
    settings = load_settings()
    logs.configure(settings)
    from app.main import create_app

    return create_app(settings)


def serve(settings: Settings, *, factory: str = APP_FACTORY, **uvicorn_options: Any) -> None:
    """Serve on ``settings.host``:``settings.port`` with ``settings.workers`` processes, until stopped.
    ``factory`` names the function each worker builds its app with (benchmarks pass their own)."""
    import uvicorn

    check_exposure(settings.host, keys=len(settings.api.all_keys()), allow_open_network=settings.api.allow_open_network)
    options: dict[str, Any] = {**logs.uvicorn_options(settings), **WEBSOCKET_OPTIONS, **uvicorn_options}
    if settings.people.trusted_header:
        # uvicorn would put X-Forwarded-For's address in the connection's place for a peer on
        # 127.0.0.1; the trusted header must be judged by the peer itself (app/security.py).
        options.setdefault("proxy_headers", False)
    if settings.workers == 1 and factory == APP_FACTORY:
        from app.main import create_app

        uvicorn.run(create_app(settings), host=settings.host, port=settings.port, **options)
        return
    warn_about_local_models(settings)
    # The workers load their settings again, from the environment: what the command line changed too.
    for field in ("host", "port", "workers"):
        os.environ[env_name((field,))] = str(getattr(settings, field))
    slots = tempfile.mkdtemp(prefix="ragchat-slots-")
    os.environ[shared_slots.WORKER_SLOTS] = slots
    # The workers' metrics, for a scrape of any of them to report the whole server (app/ops/metrics.py):
    # a fresh folder each run, as prometheus-client asks, set before the workers import it.
    samples = tempfile.mkdtemp(prefix="ragchat-metrics-")
    os.environ[MULTIPROCESS_DIR] = samples
    try:
        from uvicorn.config import STARTUP_FAILURE  # the status uvicorn exits with when it cannot start
        from uvicorn.supervisors import Multiprocess

        config = uvicorn.Config(
            factory, factory=True, host=settings.host, port=settings.port, workers=settings.workers, **options
        )
        if SPREAD:
            try:
                sock = spread_socket(config.host, config.port)
            except OSError as exc:  # as uvicorn's own bind says it: the port taken, the host unknown
                log.error("cannot listen on %s:%d: %s", config.host, config.port, exc)
                raise SystemExit(STARTUP_FAILURE) from None
            where = f"http://{config.host}:{sock.getsockname()[1]}"
            log.info("serving on %s with %d workers (press CTRL+C to quit)", where, settings.workers)
        else:
            sock = config.bind_socket()  # logs where it listens, or exits
        Multiprocess(config, sockets=[sock]).run()
    finally:
        shutil.rmtree(slots, ignore_errors=True)
        shutil.rmtree(samples, ignore_errors=True)


# Linux spreads connections over sockets bound to one port with SO_REUSEPORT (by a hash of each
# connection's addresses); elsewhere the option does not balance, and the workers share one socket.
SPREAD = sys.platform == "linux" and hasattr(socket, "SO_REUSEPORT")


class _SpreadSocket(socket.socket):
    """The parent's socket: bound with SO_REUSEPORT (holding the port) and never listened on. Each
    worker process receives it pickled (uvicorn starts them with ``spawn``) and unpickles a listening
    socket of its own on the same port, so the kernel spreads new connections over the workers.

    With one shared socket, whichever worker's loop woke first accepted nearly every connection
    waiting: 32 opened at once went 31/1, and in the 32-stream benchmark two workers wrote 63/33 and
    75/21 of the answers, the busier one out of GIL while the other idled (docs/BENCHMARKS.md,
    finding 7). Where pickling is not how the workers get it (a fork start), they listen on this
    one socket: the shared behaviour."""

    def __reduce__(self) -> tuple[Any, ...]:
        host, port = self.getsockname()[:2]
        return (_listening, (self.family, host, port))


def spread_socket(host: str, port: int) -> socket.socket:
    """The parent's :class:`_SpreadSocket` on ``host``:``port`` (port 0: one the kernel picks)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return _bound(_SpreadSocket, family, host, port)


def _listening(family: int, host: str, port: int) -> socket.socket:
    """A worker's own socket in the port's SO_REUSEPORT group (uvicorn's server listens on it)."""
    return _bound(socket.socket, family, host, port)


def _bound(kind: type[socket.socket], family: int, host: str, port: int) -> socket.socket:
    sock = kind(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    return sock


def warn_about_local_models(settings: Settings) -> None:
    """Several workers and an in-process model: each worker loads its own copy, and they share the
    cores one copy was given. Said, not refused: a session chooses its chat model, so a server whose
    default is the local model may well serve remote ones (and extractive answers need none)."""
    if settings.workers > 1 and settings.llm.provider == "local":
        log.warning(
            "RAGCHAT_WORKERS=%d with the in-process chat model as the default (RAGCHAT_LLM__PROVIDER=local): "
            "each worker loads its own copy when a session uses it, and they share the cores one copy had; "
            "several workers pay off with remote chat providers (openai, ollama)",
            settings.workers,
        )
