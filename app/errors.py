"""The errors ragchat raises on purpose. Anything else is a bug, masked to clients and logged.

RagchatError                      base; ``code`` is stable and shown to API clients
├── SettingsError                 bad configuration, raised at start-up
├── NotFoundError                 a project / document / session / message does not exist
├── ValidationError               bad input; ``field`` names the offending field
├── ConflictError                 the request contradicts stored state (duplicate name, mixed spaces)
├── ForbiddenError                the caller's API key may not do this (managing tools needs an operator key)
├── TooManyAttemptsError          too many failed sign-ins for the account or the address; retry later
├── BusyError                     every generation slot stayed taken while the caller waited; retry later
├── LimitExceededError            an upload or retry would pass a queue's (or the spool's) file or byte limit
├── IngestError                   a file could not be parsed or stored; the batch goes on
├── StorageError                  the database refused a write (disk full, read-only)
├── FetchError                    a URL could not be fetched: cannot connect, timed out, HTTP error status
│   ├── UrlRefusedError           the URL, or an address it leads to, is not one this server fetches (SSRF guard)
│   ├── TooLargeError             the body is (or would decompress to) more than the limit
│   └── UnsupportedTypeError      the server sent a content type no parser reads
└── ProviderError                 an embedder or chat model failed (translated from vendor errors)
    ├── ProviderAuthError         401/403: the key is missing or wrong
    ├── ProviderRateLimitError    429
    ├── ProviderTimeoutError      no answer / no token within the timeout
    ├── ProviderUnavailableError  cannot connect, 5xx, dropped connection
    ├── ModelNotFoundError        the provider does not know the model
    └── UnusableAnswerError       the answer guard refused the model's answer and had nothing to fall back to
"""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    """Each error's stable ``code``, shown to API clients (GraphQL's ``ErrorCode``). The last three are
    not errors of this tree: they are how a chat turn whose answer was stored as failed ended, told
    to a client that re-attaches to it (app/services/chat/live.py)."""

    INTERNAL = "internal"
    SETTINGS = "settings"
    NOT_FOUND = "not_found"
    VALIDATION = "validation"
    CONFLICT = "conflict"
    FORBIDDEN = "forbidden"
    TOO_MANY_ATTEMPTS = "too_many_attempts"
    BUSY = "busy"
    LIMIT_EXCEEDED = "limit_exceeded"
    INGEST = "ingest"
    STORAGE = "storage"
    FETCH = "fetch"
    URL_REFUSED = "url_refused"
    TOO_LARGE = "too_large"
    UNSUPPORTED_TYPE = "unsupported_type"
    PROVIDER = "provider"
    PROVIDER_AUTH = "provider_auth"
    PROVIDER_RATE_LIMIT = "provider_rate_limit"
    PROVIDER_TIMEOUT = "provider_timeout"
    PROVIDER_UNAVAILABLE = "provider_unavailable"
    MODEL_NOT_FOUND = "model_not_found"
    UNUSABLE_ANSWER = "unusable_answer"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"
    FAILED = "failed"


class RagchatError(Exception):
    code = ErrorCode.INTERNAL

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class SettingsError(RagchatError):
    code = ErrorCode.SETTINGS


class NotFoundError(RagchatError):
    code = ErrorCode.NOT_FOUND

    def __init__(self, kind: str, ident: object) -> None:
        super().__init__(f"{kind} {ident} not found")
        self.kind = kind
        self.ident = ident


class ValidationError(RagchatError):
    code = ErrorCode.VALIDATION

    def __init__(self, field: str, message: str, *, more: list[tuple[str, str]] | None = None) -> None:
        problems = [(field, message), *(more or [])]
        super().__init__("; ".join(f"{f}: {m}" for f, m in problems))
        self.field = field
        self.reason = message
        self.problems = problems  # every (field, message), so a form can mark them all at once


class ConflictError(RagchatError):
    code = ErrorCode.CONFLICT


class ForbiddenError(RagchatError):
    code = ErrorCode.FORBIDDEN


class TooManyAttemptsError(RagchatError):
    """Sign-in refused without checking the password: the account or the client address failed too
    often lately (app/services/people/throttle.py). ``retry_after``: seconds until it may try again."""

    code = ErrorCode.TOO_MANY_ATTEMPTS

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class BusyError(RagchatError):
    """Every generation slot of the provider was taken for as long as the caller would wait.
    ``position`` is its place in line when it gave up (None: refused without waiting);
    ``retry_after`` the seconds after which a slot is likely free (app/services/chat/slots.py)."""

    code = ErrorCode.BUSY

    def __init__(self, message: str, *, retry_after: int = 2, position: int | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.position = position


class LimitExceededError(RagchatError):
    """An upload or a retry would put more than ``limit`` (``what``: "files" or "bytes") in an
    ingestion queue (a knowledge base's, or the server's) or in the upload spool, which already
    holds ``queued``; the message says which. Nothing was stored."""

    code = ErrorCode.LIMIT_EXCEEDED

    def __init__(self, message: str, *, what: str, limit: int, queued: int, requested: int) -> None:
        super().__init__(message)
        self.what = what
        self.limit = limit
        self.queued = queued
        self.requested = requested


class IngestError(RagchatError):
    code = ErrorCode.INGEST


class StorageError(RagchatError):
    code = ErrorCode.STORAGE


class FetchError(RagchatError):
    """A URL could not be fetched. ``status`` is the HTTP status when the server answered with an error."""

    code = ErrorCode.FETCH

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class UrlRefusedError(FetchError):
    """The URL, or an address it resolves or redirects to, is refused; ``reason`` is an
    :class:`app.net.addresses.Refusal` value ("loopback", "private", "scheme", ...)."""

    code = ErrorCode.URL_REFUSED

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class TooLargeError(FetchError):
    code = ErrorCode.TOO_LARGE

    def __init__(self, message: str, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


class UnsupportedTypeError(FetchError):
    code = ErrorCode.UNSUPPORTED_TYPE

    def __init__(self, message: str, content_type: str) -> None:
        super().__init__(message)
        self.content_type = content_type


class ProviderError(RagchatError):
    code = ErrorCode.PROVIDER

    def __init__(self, message: str, *, provider: str = "", retryable: bool = False) -> None:
        super().__init__(message)
        self.provider = provider
        self.retryable = retryable


class ProviderAuthError(ProviderError):
    code = ErrorCode.PROVIDER_AUTH


class ProviderRateLimitError(ProviderError):
    code = ErrorCode.PROVIDER_RATE_LIMIT


class ProviderTimeoutError(ProviderError):
    code = ErrorCode.PROVIDER_TIMEOUT


class ProviderUnavailableError(ProviderError):
    code = ErrorCode.PROVIDER_UNAVAILABLE


class ModelNotFoundError(ProviderError):
    code = ErrorCode.MODEL_NOT_FOUND


class UnusableAnswerError(ProviderError):
    """The model answered, but its answer looped, only echoed the prompt or was unsupported, and there
    were no sources to quote instead (app/rag/answer/guard.py). Regenerating may help; retryable."""

    code = ErrorCode.UNUSABLE_ANSWER
