"""Parsing in a worker process that can be killed, so a parser bomb costs a bounded time.

A crafted file (a PDF whose small compressed content stream expands to megabytes of operators,
an HTML page nested a million levels deep) can keep a parser busy for minutes. In a thread it
could not be stopped and would hold the server's GIL all along; in a process it runs on its own
interpreter and is killed when ``timeout`` runs out. The file then fails with the reason.

One :class:`ParseWorker` serves one ingestion: its process is started on first use, kept warm
for the following files (a round trip costs well under a millisecond; a new process costs
milliseconds) and replaced only after it was killed or died. Processes come from a
``forkserver`` (``spawn`` where there is none): forking the server itself, which runs threads,
could copy a lock held by another thread into the child.
"""

from __future__ import annotations

import multiprocessing
import signal
import sys
import traceback
from multiprocessing.connection import Connection
from multiprocessing.context import ForkServerContext, SpawnContext
from multiprocessing.process import BaseProcess
from types import TracebackType

from app.errors import IngestError
from app.rag.ingest.parsing import ParseLimits, parse
from app.rag.ingest.types import ParsedDocument

__all__ = ["ParseWorker"]

# Imported once by the forkserver, so each worker it forks starts with the parsers loaded. The main
# module is among them, as multiprocessing's default has it: a worker that finds it already
# imported skips re-running it (the `ragchat` script would otherwise be imported per worker).
_PRELOAD = ["__main__", "app.rag.ingest.parse_worker"]


def _context() -> ForkServerContext | SpawnContext:
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([*_PRELOAD, *_main_module()])
        return context
    return multiprocessing.get_context("spawn")


def _main_module() -> list[str]:
    """The main module by name when it was run with ``python -m NAME``: "__main__" preloads a main
    *file* only, and every worker re-ran a ``-m`` main with all it imports (``python -m
    benchmarks.ingestion``: ~650 ms per ingestion's first file, against ~7 ms once preloaded)."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    name = getattr(spec, "name", None)
    return [name] if isinstance(name, str) and not name.endswith("__main__") else []


class RemoteParseError(Exception):
    """The traceback of an unexpected parser exception, as the worker formatted it."""


def _serve(conn: Connection) -> None:
    """The worker's loop: ``(data, filename, limits)`` in, ``("ok", doc, "")`` or ``("error", exc,
    traceback)`` out (the traceback only for an exception that is not an :class:`IngestError`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C is for the parent, which then stops us
    while True:
        try:
            data, filename, limits = conn.recv()
        except (EOFError, OSError):  # the parent is gone
            return
        try:
            reply: tuple[str, object, str] = ("ok", parse(data, filename, limits), "")
        except Exception as exc:
            reply = ("error", exc, "" if isinstance(exc, IngestError) else traceback.format_exc())
        try:
            conn.send(reply)
        except Exception as exc:  # an exception that does not pickle: send what it said
            conn.send(("error", RuntimeError(f"{type(exc).__name__}: {exc}"), reply[2]))


class ParseWorker:
    """:func:`app.rag.ingest.parsing.parse` in a child process, bounded by ``timeout`` seconds per file.

    Not thread-safe: one ingestion (one thread) uses one worker. Use it as a context manager, or
    call :meth:`close`, so the process ends with the ingestion.
    """

    def __init__(self, limits: ParseLimits, timeout: float) -> None:
        self.limits = limits
        self.timeout = timeout
        self._process: BaseProcess | None = None
        self._conn: Connection | None = None

    def parse(self, data: bytes, filename: str) -> ParsedDocument:
        """Parse in the worker. Raises :class:`IngestError` for a bad file, a parse that took longer
        than ``timeout`` (the worker is killed) or a worker that died; re-raises anything else the
        parser raised, as an inline parse would."""
        conn = self._start()
        try:
            conn.send((data, filename, self.limits))
            if not conn.poll(self.timeout):
                self._stop(kill=True)
                raise IngestError(f"parsing took longer than {self.timeout:g} s; the file may be malformed")
            status, payload, remote = conn.recv()
        except (EOFError, OSError) as exc:
            code = self._process.exitcode if self._process is not None else None
            self._stop(kill=True)
            raise IngestError(f"the parser stopped while reading this file (exit code {code})") from exc
        if status == "ok":
            assert isinstance(payload, ParsedDocument)
            return payload
        assert isinstance(payload, BaseException)
        if remote:  # a bug, not a bad file: keep where it happened for the log
            raise payload from RemoteParseError(remote)
        raise payload

    def _start(self) -> Connection:
        if self._conn is not None and self._process is not None and self._process.is_alive():
            return self._conn
        self._stop(kill=True)
        context = _context()
        parent, child = context.Pipe()
        process = context.Process(target=_serve, args=(child,), name="ragchat-parser", daemon=True)
        process.start()
        child.close()
        self._process, self._conn = process, parent
        return parent

    def _stop(self, *, kill: bool = False) -> None:
        process, conn = self._process, self._conn
        self._process = self._conn = None
        if conn is not None:
            conn.close()  # an idle worker sees EOF and returns
        if process is not None:
            if not kill:
                process.join(1.0)
            if process.is_alive():
                process.kill()
                process.join()
            process.close()

    def close(self) -> None:
        self._stop()

    def __enter__(self) -> ParseWorker:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()
