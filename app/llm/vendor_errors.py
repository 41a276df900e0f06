"""Vendor SDK errors translated into :mod:`app.errors`, for every adapter of a vendor (embedders, chat).

Wrap each SDK call, and nothing else, so only the vendor's failures are translated::

    with openai_errors(vendor, model):
        client.embeddings.create(...)

A chat stream, whose block also yields, catches the SDK's errors itself and raises
:func:`from_openai` / :func:`from_ollama`; :func:`stopped` words a stream that ends early.

The translated error is raised ``from`` the vendor's, and its message says what to do about it
(which setting to change, which command to run). Messages never contain the API key: on 401 and
403 none of the vendor's words are quoted (OpenAI's 401 repeats part of the key), and
``Vendor.secret`` is replaced by :data:`REDACTED` everywhere else.

=========================================  ==========================
vendor failure                             raised
=========================================  ==========================
401 / 403                                  ProviderAuthError
404, unknown model                         ModelNotFoundError
429                                        ProviderRateLimitError
timeout, 408, 504                          ProviderTimeoutError
refused / dropped connection, 5xx,         ProviderUnavailableError
an error or the end mid-stream
anything else from the SDK                 ProviderError
=========================================  ==========================
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from app.errors import (
    ModelNotFoundError,
    ProviderAuthError,
    ProviderError,
    ProviderRateLimitError,
    ProviderTimeoutError,
    ProviderUnavailableError,
)

if TYPE_CHECKING:
    import openai

    from app.settings import OllamaSettings, OpenAISettings

# Each vendor's SDK is imported where its errors are handled, so using one vendor never pays
# for importing the other's (the openai SDK alone takes about a second).

OPENAI_BASE_URL = "https://api.openai.com/v1"
_DETAIL_CHARS = 300
REDACTED = "[redacted]"  # stands for the API key in the vendor's words


def display_url(url: str) -> str:
    """``url`` without a ``user:password@`` part, fit for messages (a proxy's credentials stay out)."""
    parts = urlsplit(url)
    if not parts.username and not parts.password:
        return url
    netloc = f"{parts.hostname}:{parts.port}" if parts.port else parts.hostname or ""
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


@dataclass(frozen=True)
class Vendor:
    """Who is being called, for error messages: ``label`` reads well mid-sentence ("OpenAI",
    "Ollama at http://127.0.0.1:11434")."""

    provider: str  # ProviderError.provider: "openai", "ollama"
    label: str
    url: str  # as shown: pass it through display_url
    timeout: float
    settings: str  # the settings group's variable prefix, e.g. "RAGCHAT_OPENAI"
    secret: str | None = None  # redacted from every message

    @property
    def located(self) -> str:
        """The label with the URL, unless it already names it."""
        return self.label if self.url in self.label else f"{self.label} at {self.url}"

    @classmethod
    def openai(cls, settings: OpenAISettings) -> Vendor:
        """OpenAI, or the compatible server ``settings.base_url`` names."""
        shown = display_url((settings.base_url or OPENAI_BASE_URL).rstrip("/"))
        label = "OpenAI" if settings.base_url is None else f"the OpenAI-compatible server at {shown}"
        key = settings.api_key.get_secret_value() if settings.api_key else None
        return cls("openai", label, shown, settings.timeout, "RAGCHAT_OPENAI", secret=key or None)

    @classmethod
    def ollama(cls, settings: OllamaSettings) -> Vendor:
        shown = display_url(settings.host)
        return cls("ollama", f"Ollama at {shown}", shown, settings.timeout, "RAGCHAT_OLLAMA")


def _scrub(vendor: Vendor, text: str) -> str:
    """Text from the vendor or its transport, fit for a message: the key redacted (before anything
    else touches the text), on one line, bounded."""
    if vendor.secret:
        text = text.replace(vendor.secret, REDACTED)
    text = " ".join(text.split())
    return text if len(text) <= _DETAIL_CHARS else text[: _DETAIL_CHARS - 1] + "…"


def _said(vendor: Vendor, text: str) -> str:
    """The vendor's own words, appended to a message."""
    text = _scrub(vendor, text)
    return f". The server said: {text}" if text else ""


def _cause(exc: BaseException) -> str:
    """The transport error under an SDK's generic one (ConnectError, RemoteProtocolError...)."""
    root = exc.__cause__ or exc
    return f"{type(root).__name__}: {root}" if str(root) else type(root).__name__


def _unreadable(vendor: Vendor, exc: Exception) -> ProviderError:
    problem = _scrub(vendor, f"{type(exc).__name__}: {exc}")
    return ProviderError(f"{vendor.label} sent a response ragchat cannot read ({problem})", provider=vendor.provider)


def _timed_out(vendor: Vendor, why: str = "") -> ProviderTimeoutError:
    return ProviderTimeoutError(
        f"{vendor.label} did not answer within {vendor.timeout:g} s{why}: "
        f"try again, or raise {vendor.settings}__TIMEOUT",
        provider=vendor.provider,
        retryable=True,
    )


def stopped(vendor: Vendor, model: str, problem: str) -> ProviderUnavailableError:
    """A chat stream that ended, or turned into an error or garbage, before the answer was complete."""
    return ProviderUnavailableError(
        f"{vendor.label} stopped answering for '{model}' mid-stream ({_scrub(vendor, problem)}): try again",
        provider=vendor.provider,
        retryable=True,
    )


def _unreachable(vendor: Vendor, exc: BaseException, setting: str, *, connect: bool) -> ProviderUnavailableError:
    """Could not connect (``connect``: names the setting to check), or the connection broke mid-request."""
    if connect:
        return ProviderUnavailableError(
            f"cannot connect to {vendor.located}: is it running? Check {vendor.settings}__{setting}",
            provider=vendor.provider,
            retryable=True,
        )
    return ProviderUnavailableError(
        f"the connection to {vendor.located} broke ({_scrub(vendor, _cause(exc))}): try again",
        provider=vendor.provider,
        retryable=True,
    )


# -- OpenAI (and OpenAI-compatible servers) -------------------------------------------------------


def from_openai(exc: Exception, vendor: Vendor, model: str) -> ProviderError:
    """The :mod:`app.errors` equivalent of an ``openai`` SDK error."""
    import httpx2  # the openai SDK's transport, a fork of httpx
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return _timed_out(vendor)
    if isinstance(exc, openai.APIConnectionError):
        return _unreachable(vendor, exc, "BASE_URL", connect=isinstance(exc.__cause__, httpx2.ConnectError))
    if isinstance(exc, openai.APIStatusError):
        return _from_status(vendor, model, exc.status_code, _openai_message(exc), exc.code or "")
    if isinstance(exc, openai.APIError):  # an error event inside a 200 stream
        return stopped(vendor, model, _openai_message(exc) or exc.message)
    return _unreadable(vendor, exc)


def _openai_message(exc: openai.APIError) -> str:
    # The SDK keeps the body's "error" member (some compatible servers nest it once more): an
    # object with a message, or (proxies) a plain string or an HTML page.
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        message = error.get("message") if isinstance(error, dict) else None
        return message if isinstance(message, str) else ""
    return body if isinstance(body, str) else ""


@contextmanager
def openai_errors(vendor: Vendor, model: str) -> Iterator[None]:
    """Translate ``openai`` SDK errors raised in the block (a body that is not JSON surfaces as
    the ``ValueError`` of :func:`json.loads`)."""
    import openai

    try:
        yield
    except (openai.OpenAIError, ValueError) as exc:
        raise from_openai(exc, vendor, model) from exc


# -- Ollama ---------------------------------------------------------------------------------------


def from_ollama(exc: Exception, vendor: Vendor, model: str) -> ProviderError:
    """The :mod:`app.errors` equivalent of an ``ollama`` SDK (or its httpx transport) error."""
    import httpx
    import ollama

    if isinstance(exc, ollama.ResponseError):
        message = str(exc.error)
        if exc.status_code != -1:
            return _from_status(vendor, model, exc.status_code, message, "")
        # An {"error": ...} line inside a 200 stream; a missing model is reported this way too.
        if _names_missing_model(message):
            return _from_status(vendor, model, 404, message, "")
        return stopped(vendor, model, message)
    if isinstance(exc, httpx.TimeoutException):
        return _timed_out(vendor, " (a model may still be loading)")
    if isinstance(exc, ConnectionError | httpx.TransportError):
        # The client turns httpx's ConnectError into a bare ConnectionError.
        connect = type(exc) is ConnectionError or isinstance(exc, httpx.ConnectError)
        return _unreachable(vendor, exc, "HOST", connect=connect)
    return _unreadable(vendor, exc)


@contextmanager
def ollama_errors(vendor: Vendor, model: str) -> Iterator[None]:
    """Translate ``ollama`` SDK errors raised in the block (its client lets some httpx ones through;
    a malformed body surfaces as a ``ValueError`` from JSON or pydantic)."""
    import httpx
    import ollama

    try:
        yield
    except (ollama.ResponseError, ConnectionError, httpx.HTTPError, ValueError) as exc:
        raise from_ollama(exc, vendor, model) from exc


# -- shared: an HTTP status from either vendor ----------------------------------------------------


def _from_status(vendor: Vendor, model: str, status: int, message: str, code: str) -> ProviderError:
    label, name, said = vendor.label, vendor.provider, _said(vendor, message)
    # 401 and 403 quote nothing: OpenAI's 401 body repeats part of the key.
    if status == 401:
        key = f"{vendor.settings}__API_KEY" if name == "openai" else "OLLAMA_API_KEY"
        return ProviderAuthError(f"{label} rejected the API key (401): set {key} to a valid key", provider=name)
    if status == 403:
        return ProviderAuthError(
            f"{label} refused access to model '{model}' (403): use a key allowed to call it", provider=name
        )
    if status == 404 or _names_missing_model(message):
        hint = (
            f"pull it with `ollama pull {model}`"
            if name == "ollama"
            else f"check the model name, and that {vendor.url} is the right server"
        )
        return ModelNotFoundError(f"{label} does not know model '{model}' ({status}): {hint}{said}", provider=name)
    if status == 429:
        if code == "insufficient_quota":
            return ProviderRateLimitError(
                f"{label} refused the request: the account's quota is used up (429){said}", provider=name
            )
        return ProviderRateLimitError(
            f"{label} is rate-limiting requests (429): try again later{said}", provider=name, retryable=True
        )
    if status in (408, 504):  # the server, or a gateway in front of it, gave up waiting
        return ProviderTimeoutError(
            f"{label} timed out (HTTP {status}): try again later{said}", provider=name, retryable=True
        )
    if status >= 500:
        return ProviderUnavailableError(
            f"{label} failed with HTTP {status}: try again later{said}", provider=name, retryable=True
        )
    status_text = f"HTTP {status}" if status > 0 else "an error"
    return ProviderError(f"{label} rejected the request with {status_text}{said}", provider=name)


def _names_missing_model(message: str) -> bool:
    # Ollama answers 404, but some OpenAI-compatible servers use 400 for an unknown model.
    text = message.lower()
    return "model" in text and ("not found" in text or "does not exist" in text)
