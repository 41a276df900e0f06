"""The errors ragchat raises on purpose. Anything else is a bug, masked to clients and logged.

RagchatError                      base; ``code`` is stable and shown to API clients
├── SettingsError                 bad configuration, raised at start-up
├── NotFoundError                 a project / document / session / message does not exist
├── ValidationError               bad input; ``field`` names the offending field
├── ConflictError                 the request contradicts stored state (duplicate name, mixed spaces)
├── BusyError                     too many generations in flight; retry later
├── IngestError                   a file could not be parsed or stored; the batch goes on
├── StorageError                  the database refused a write (disk full, read-only)
└── ProviderError                 an embedder or chat model failed (translated from vendor errors)
    ├── ProviderAuthError         401/403: the key is missing or wrong
    ├── ProviderRateLimitError    429
    ├── ProviderTimeoutError      no answer / no token within the timeout
    ├── ProviderUnavailableError  cannot connect, 5xx, dropped connection
    ├── ModelNotFoundError        the provider does not know the model
    └── UnusableAnswerError       the answer guard refused the model's answer and had nothing to fall back to
"""

from __future__ import annotations


class RagchatError(Exception):
    code = "internal"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class SettingsError(RagchatError):
    code = "settings"


class NotFoundError(RagchatError):
    code = "not_found"

    def __init__(self, kind: str, ident: object) -> None:
        super().__init__(f"{kind} {ident} not found")
        self.kind = kind
        self.ident = ident


class ValidationError(RagchatError):
    code = "validation"

    def __init__(self, field: str, message: str, *, more: list[tuple[str, str]] | None = None) -> None:
        problems = [(field, message), *(more or [])]
        super().__init__("; ".join(f"{f}: {m}" for f, m in problems))
        self.field = field
        self.reason = message
        self.problems = problems  # every (field, message), so a form can mark them all at once


class ConflictError(RagchatError):
    code = "conflict"


class BusyError(RagchatError):
    code = "busy"


class IngestError(RagchatError):
    code = "ingest"


class StorageError(RagchatError):
    code = "storage"


class ProviderError(RagchatError):
    code = "provider"

    def __init__(self, message: str, *, provider: str = "", retryable: bool = False) -> None:
        super().__init__(message)
        self.provider = provider
        self.retryable = retryable


class ProviderAuthError(ProviderError):
    code = "provider_auth"


class ProviderRateLimitError(ProviderError):
    code = "provider_rate_limit"


class ProviderTimeoutError(ProviderError):
    code = "provider_timeout"


class ProviderUnavailableError(ProviderError):
    code = "provider_unavailable"


class ModelNotFoundError(ProviderError):
    code = "model_not_found"


class UnusableAnswerError(ProviderError):
    """The model answered, but its answer looped, only echoed the prompt or was unsupported, and there
    were no sources to quote instead (app/rag/guard.py). Regenerating may help; retryable."""

    code = "unusable_answer"
