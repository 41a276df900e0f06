"""Whether a provider answers right now, for the ``providers`` query and the settings form.

*Available* (:attr:`app.llm.registry.Provider.unavailable`) is what the settings allow and costs
nothing; *reachable* is asked of the provider itself, cheaply and briefly (:data:`PROBE_TIMEOUT`):

- OpenAI and compatible servers: an authenticated ``GET {base_url}/models``;
- Ollama: ``GET {host}/api/version``;
- the local model: its files on disk, read a few bytes, never loaded.

A probe never raises for a provider's failure: it returns why, in words a user can act on, and
never with the API key in them. :class:`ProbeCache` keeps each answer for a short while and lets
concurrent askers share one probe, so a busy UI costs the providers one request per provider
every :data:`CACHE_SECONDS` at most. All of it is async (httpx, file reads in a worker thread).
"""

from __future__ import annotations

import asyncio
import functools
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx

from app.llm.vendor_errors import OPENAI_BASE_URL, display_url
from app.settings import OllamaSettings, OpenAISettings

PROBE_TIMEOUT = 1.5  # seconds: a provider slower than this to list its models is not usable anyway
CACHE_SECONDS = 30.0
GGUF_MAGIC = b"GGUF"


@dataclass(frozen=True)
class Reachability:
    reachable: bool
    reason: str | None = None  # why not, when not


REACHABLE = Reachability(True)
Probe = Callable[[], Awaitable[Reachability]]


def probe_openai(settings: OpenAISettings, *, timeout: float = PROBE_TIMEOUT) -> Probe:
    """``GET {base_url}/models`` with the configured key (none for a keyless compatible server)."""
    base = (settings.base_url or OPENAI_BASE_URL).rstrip("/")
    key = settings.api_key.get_secret_value() if settings.api_key else ""
    check = _HttpCheck(
        shown=display_url(base),
        url=f"{base}/models",
        headers={"Authorization": f"Bearer {key}"} if key else {},
        timeout=timeout,
        auth_hint="the API key",
        auth_fix="check RAGCHAT_OPENAI__API_KEY",
        url_setting="RAGCHAT_OPENAI__BASE_URL",
        expected="an OpenAI-compatible server",
        looks_right=lambda body: isinstance(body, dict) and isinstance(body.get("data"), list),
    )
    return check.run


def probe_ollama(settings: OllamaSettings, *, timeout: float = PROBE_TIMEOUT) -> Probe:
    """``GET {host}/api/version``: Ollama's cheapest endpoint (no model is loaded to answer it)."""
    host = settings.host.rstrip("/")
    check = _HttpCheck(
        shown=display_url(host),
        url=f"{host}/api/version",
        headers={},
        timeout=timeout,
        auth_hint="the request",
        auth_fix="check the proxy in front of Ollama",
        url_setting="RAGCHAT_OLLAMA__HOST",
        expected="Ollama",
        looks_right=lambda body: isinstance(body, dict) and "version" in body,
    )
    return check.run


def probe_model_files(models: Mapping[str, Path]) -> Probe:
    """Each local model's GGUF file is there and is a GGUF file (its magic bytes: an unfetched Git
    LFS pointer is not). Nothing is loaded. Whether llama-cpp-python is installed is the registry's
    availability check, made before any probe."""

    def check() -> Reachability:
        for path in models.values():
            try:
                with path.open("rb") as file:
                    magic = file.read(len(GGUF_MAGIC))
            except FileNotFoundError:
                return Reachability(False, f"the model file {path} is missing")
            except OSError as exc:
                return Reachability(False, f"the model file {path} cannot be read ({exc.strerror})")
            if magic != GGUF_MAGIC:
                return Reachability(False, f"{path} is not a GGUF model file")
        return REACHABLE

    return lambda: asyncio.to_thread(check)


@dataclass(frozen=True)
class _HttpCheck:
    shown: str  # the configured URL, as messages show it
    url: str
    headers: dict[str, str]
    timeout: float
    auth_hint: str  # what a 401/403 rejected
    auth_fix: str
    url_setting: str
    expected: str
    looks_right: Callable[[object], bool]

    async def run(self) -> Reachability:
        tls = await asyncio.to_thread(_tls)
        try:
            async with httpx.AsyncClient(timeout=self.timeout, verify=tls) as client:
                # httpx's timeout is per read, renewed by every byte: the wall clock bounds the whole
                # probe, and its cancellation closes the connection.
                async with asyncio.timeout(self.timeout):
                    response = await client.get(self.url, headers=self.headers)
        except (httpx.TimeoutException, TimeoutError):
            return Reachability(False, f"no answer from {self.shown} within {self.timeout:g} s")
        except httpx.ConnectError as exc:
            if _refused(exc):
                return Reachability(False, f"connection refused at {self.shown}")
            return Reachability(False, f"cannot connect to {self.shown} ({exc or type(exc).__name__})")
        except httpx.HTTPError as exc:
            return Reachability(False, f"{self.shown} broke off the request ({type(exc).__name__})")
        return self._judge(response)

    def _judge(self, response: httpx.Response) -> Reachability:
        status = response.status_code
        if status in (401, 403):
            # The body is not quoted: OpenAI's 401 repeats part of the key.
            return Reachability(False, f"{self.shown} rejected {self.auth_hint} (HTTP {status}): {self.auth_fix}")
        if status >= 400:
            shown_url = display_url(self.url)
            return Reachability(False, f"GET {shown_url} answered HTTP {status}: check {self.url_setting}")
        try:
            body = response.json()
        except ValueError:
            body = None
        if not self.looks_right(body):
            return Reachability(False, f"{self.shown} answered, but not as {self.expected}: check {self.url_setting}")
        return REACHABLE


@functools.cache
def _tls() -> ssl.SSLContext:
    """httpx's default TLS settings, built once: a client building its own loads the CA bundle,
    about 25 ms of CPU that would otherwise land on the event loop at every probe."""
    return httpx.create_ssl_context()


def _refused(exc: BaseException) -> bool:
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ConnectionRefusedError) or "refused" in str(cause).lower():
            return True
        cause = cause.__cause__ or cause.__context__
    return False


class ProbeCache:
    """Each provider's last answer for ``ttl`` seconds; askers arriving while a probe runs share it."""

    def __init__(self, ttl: float = CACHE_SECONDS, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = ttl
        self._clock = clock
        self._answers: dict[str, tuple[float, Reachability]] = {}
        self._running: dict[str, asyncio.Task[Reachability]] = {}

    async def check(self, name: str, probe: Probe) -> Reachability:
        known = self._answers.get(name)
        if known is not None and self._clock() < known[0]:
            return known[1]
        task = self._running.get(name)
        if task is None or task.done() or task.get_loop() is not asyncio.get_running_loop():
            task = asyncio.ensure_future(self._probe(name, probe))
            self._running[name] = task
        # Shielded: one asker going away (a closed request) does not cancel the others' probe.
        return await asyncio.shield(task)

    async def _probe(self, name: str, probe: Probe) -> Reachability:
        try:
            found = await probe()
            self._answers[name] = (self._clock() + self._ttl, found)
            return found
        finally:
            if self._running.get(name) is asyncio.current_task():
                del self._running[name]

    def forget(self, name: str) -> None:
        """Drop what is known about ``name`` (its provider was replaced)."""
        self._answers.pop(name, None)
