"""Vendor failures translated into :mod:`app.errors` ``ProviderError`` subclasses.

Both HTTP adapters (OpenAI, Ollama) describe themselves with a :class:`Vendor` and ask this module
for the error that fits an HTTP status, a timeout or a lost connection. Messages name the server,
the model and what to check. They never contain the API key: vendor text goes through
:meth:`Vendor.scrub`, and authentication failures never echo the vendor's text at all (OpenAI's
own 401 message quotes part of the key).
"""

from __future__ import annotations

from dataclasses import dataclass

from app.errors import (
    ModelNotFoundError,
    ProviderAuthError,
    ProviderError,
    ProviderRateLimitError,
    ProviderTimeoutError,
    ProviderUnavailableError,
)

_MAX_DETAIL = 300


@dataclass(frozen=True)
class Vendor:
    """How one configured provider is named in messages, and how to fix the usual mistakes."""

    provider: str  # the registry's provider name, copied onto every error
    label: str  # "OpenAI", "Ollama at http://127.0.0.1:11434"
    auth_hint: str  # what to check on 401/403
    model_hint: str  # what to do on 404; may use {model}
    timeout: float  # the client's own timeout, seconds
    secret: str | None = None  # never allowed into a message

    def scrub(self, text: str) -> str:
        """Vendor text fit for a message: the key replaced, whitespace folded, length capped."""
        if self.secret:
            text = text.replace(self.secret, "***")
        text = " ".join(text.split())
        return text if len(text) <= _MAX_DETAIL else text[: _MAX_DETAIL - 1] + "…"

    def status_error(self, status: int, model: str, detail: str = "") -> ProviderError:
        """The error for an HTTP error status from the vendor."""
        said = f": {self.scrub(detail)}" if detail.strip() else ""
        if status in (401, 403):
            return ProviderAuthError(
                f"{self.label} refused the credentials (HTTP {status}); {self.auth_hint}", provider=self.provider
            )
        if status == 404:
            hint = self.model_hint.format(model=model)
            return ModelNotFoundError(
                f"{self.label} does not know model {model!r} (HTTP 404){said}; {hint}", provider=self.provider
            )
        if status == 429:
            return ProviderRateLimitError(
                f"{self.label} is rate-limiting requests (HTTP 429){said}; retry later",
                provider=self.provider,
                retryable=True,
            )
        if status in (408, 504):
            return self.timeout_error(model, f"HTTP {status}")
        if status >= 500:
            return ProviderUnavailableError(
                f"{self.label} failed (HTTP {status}){said}; retry later", provider=self.provider, retryable=True
            )
        return ProviderError(
            f"{self.label} rejected the request for {model!r} (HTTP {status}){said}", provider=self.provider
        )

    def timeout_error(self, model: str, detail: str = "") -> ProviderTimeoutError:
        """No answer (or no next byte) within the client's timeout."""
        why = f" ({self.scrub(detail)})" if detail else ""
        return ProviderTimeoutError(
            f"{self.label} did not answer for {model!r} within {self.timeout:g} s{why}",
            provider=self.provider,
            retryable=True,
        )

    def unreachable_error(self, detail: str = "") -> ProviderUnavailableError:
        """The connection could not be opened."""
        why = f" ({self.scrub(detail)})" if detail else ""
        return ProviderUnavailableError(
            f"cannot connect to {self.label}{why}; is it running and reachable?", provider=self.provider, retryable=True
        )

    def dropped_error(self, model: str, detail: str = "") -> ProviderUnavailableError:
        """The connection broke, or the stream ended or turned into garbage, before the answer was complete."""
        why = f" ({self.scrub(detail)})" if detail else ""
        return ProviderUnavailableError(
            f"{self.label} stopped answering for {model!r} mid-stream{why}", provider=self.provider, retryable=True
        )
