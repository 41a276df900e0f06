"""Expected failures as schema types: clients switch on ``__typename``.

Every error type implements ``Error { message }``; unexpected exceptions are not here — they are
masked by the schema (see schema.py) and logged with a request id.
"""

from __future__ import annotations

import re

import strawberry

from app import errors
from app.graphql import operation_log
from app.graphql.enums import ErrorCode, UrlRefusal


@strawberry.interface(
    description="An expected failure, as a member of a result union: switch on `__typename` (every member "
    "implements this), show `message`."
)
class Error:
    message: str = strawberry.field(description="What went wrong, in words meant for the person using the client.")


@strawberry.type(description="The thing asked for does not exist (or no longer does).")
class NotFoundError(Error):
    kind: str = strawberry.field(
        description='What was looked for: "project", "document", "chat session", "message", "ingestion job" or '
        '"ingestion item".'
    )
    id: strawberry.ID = strawberry.field(description="The id that was looked for, as sent.")


@strawberry.type(description="One input field's problem.")
class FieldError:
    field: str = strawberry.field(
        description="The argument or input field, as the schema names it (`name`, `topK`, `files[0]`)."
    )
    message: str = strawberry.field(description="What is wrong with its value.")


@strawberry.type(description="The input was rejected; nothing was written.")
class ValidationError(Error):
    fields: list[FieldError] = strawberry.field(
        description="Every problem found, so a form can mark them all at once (at least one)."
    )


@strawberry.type(description="The request contradicts stored state (duplicate name, mixed embedding spaces).")
class ConflictError(Error):
    pass


@strawberry.type(
    description="The API key the request carries may not do this: creating, changing and deleting tools is for "
    "operator keys (RAGCHAT_API__OPERATOR_KEYS). Nothing was written."
)
class ForbiddenError(Error):
    pass


@strawberry.type(
    description="Too many failed sign-ins lately for this account or from this address "
    "(RAGCHAT_PEOPLE__SIGN_IN_ATTEMPTS_PER_ACCOUNT / __PER_ADDRESS within __SIGN_IN_WINDOW_SECONDS); the password "
    "was not checked."
)
class TooManyAttemptsError(Error):
    retry_after_seconds: int = strawberry.field(description="Seconds until a sign-in may be tried again (at least 1).")


@strawberry.type(
    description="Every generation slot of the chat model's provider stayed taken for as long as the server lets a "
    "question wait (RAGCHAT_CHAT__QUEUE_TIMEOUT); nothing was stored, so sending it again is safe."
)
class BusyError(Error):
    retry_after_seconds: int = strawberry.field(
        description="Seconds after which a slot is likely free: the place in line times the average time a slot is "
        "held, divided by the number of slots (at least 1)."
    )
    position: int | None = strawberry.field(
        description="The question's place in line when it gave up (1 = next); null when it was refused without waiting."
    )


@strawberry.type(
    description="An upload or retry would put more files or bytes than the server allows in the knowledge base's "
    "ingestion queue (RAGCHAT_JOBS__MAX_QUEUED_FILES / __MAX_QUEUED_BYTES), the server's, all knowledge bases "
    "together (__SERVER_MAX_QUEUED_FILES / __SERVER_MAX_QUEUED_BYTES), or the upload spool, which also keeps "
    "failed and cancelled files for a retry until __SPOOL_RETENTION (__MAX_SPOOL_BYTES); the message says which. "
    "Nothing was stored. Wait for queued files to finish, or send fewer."
)
class LimitExceededError(Error):
    what: str = strawberry.field(description='Which limit: "files" or "bytes".')
    limit: float = strawberry.field(description="The limit (a count of files, or bytes).")
    queued: float = strawberry.field(description="What the queue (or the spool) held already.")
    requested: float = strawberry.field(description="What the upload or retry would have added.")


@strawberry.type(description="An embedder or chat model failed or is not configured.")
class ProviderError(Error):
    code: ErrorCode = strawberry.field(
        description="Which failure: PROVIDER, PROVIDER_AUTH, PROVIDER_RATE_LIMIT, PROVIDER_TIMEOUT, "
        "PROVIDER_UNAVAILABLE, MODEL_NOT_FOUND or UNUSABLE_ANSWER."
    )
    provider: str = strawberry.field(description='The provider that failed, like "openai" (empty when unknown).')


@strawberry.type(description="The database refused a write (disk full, read-only).")
class StorageError(Error):
    pass


@strawberry.type(
    description="The URL could not be fetched: cannot connect, timed out, an HTTP error status, too many "
    "redirects. Nothing was written."
)
class FetchFailedError(Error):
    status: int | None = strawberry.field(description="The HTTP status the server answered with; null when it did not.")


@strawberry.type(
    description="The URL, or an address it resolves or redirects to, is not one this server fetches from. "
    "Nothing was fetched."
)
class UrlRefusedError(Error):
    reason: UrlRefusal = strawberry.field(description="Why.")


@strawberry.type(description="The document at the URL is larger than the limit (counted after decompression).")
class TooLargeError(Error):
    limit_bytes: int = strawberry.field(description="The limit, in bytes (RAGCHAT_INGEST__URL_MAX_BYTES).")


@strawberry.type(description="The server sent a content type no parser reads.")
class UnsupportedTypeError(Error):
    content_type: str = strawberry.field(description='The media type it sent, like "image/png" (empty when none).')


ErrorType = (
    NotFoundError
    | ValidationError
    | ConflictError
    | ForbiddenError
    | TooManyAttemptsError
    | BusyError
    | LimitExceededError
    | ProviderError
    | StorageError
    | FetchFailedError
    | UrlRefusedError
    | TooLargeError
    | UnsupportedTypeError
)


def to_graphql(exc: errors.RagchatError) -> ErrorType:
    """Translate a service error into its schema type (noted as the operation's outcome, for the
    request's log line). Unknown kinds are re-raised (masked)."""
    error = _translate(exc)
    operation_log.note(type(error).__name__)
    return error


def _translate(exc: errors.RagchatError) -> ErrorType:
    if isinstance(exc, errors.NotFoundError):
        return NotFoundError(message=exc.message, kind=exc.kind, id=strawberry.ID(str(exc.ident)))
    if isinstance(exc, errors.ValidationError):
        return ValidationError(message=exc.message, fields=[FieldError(field=f, message=m) for f, m in exc.problems])
    if isinstance(exc, errors.ConflictError):
        return ConflictError(message=exc.message)
    if isinstance(exc, errors.ForbiddenError):
        return ForbiddenError(message=exc.message)
    if isinstance(exc, errors.TooManyAttemptsError):
        return TooManyAttemptsError(message=exc.message, retry_after_seconds=exc.retry_after)
    if isinstance(exc, errors.BusyError):
        return BusyError(message=exc.message, retry_after_seconds=exc.retry_after, position=exc.position)
    if isinstance(exc, errors.LimitExceededError):
        return LimitExceededError(
            message=exc.message, what=exc.what, limit=exc.limit, queued=exc.queued, requested=exc.requested
        )
    if isinstance(exc, errors.ProviderError):
        return ProviderError(message=exc.message, code=exc.code, provider=exc.provider)
    if isinstance(exc, errors.UrlRefusedError):
        return UrlRefusedError(message=exc.message, reason=UrlRefusal(exc.reason))
    if isinstance(exc, errors.TooLargeError):
        return TooLargeError(message=exc.message, limit_bytes=exc.limit)
    if isinstance(exc, errors.UnsupportedTypeError):
        return UnsupportedTypeError(message=exc.message, content_type=exc.content_type)
    if isinstance(exc, errors.FetchError):
        return FetchFailedError(message=exc.message, status=exc.status)
    if isinstance(exc, errors.StorageError | errors.IngestError):
        return StorageError(message=exc.message)
    raise exc


# Ids are written as the schema writes them: ASCII digits, no sign, space, underscore or leading zero.
# int() alone took " 1 ", "+1", "1_0" and "\u0661" (an Arabic-Indic one), so one row had many names.
_ID = re.compile(r"[1-9][0-9]{0,18}")
# Ids are INTEGER columns: 32 bits on PostgreSQL (SQLite's 64-bit rowids never reach it in practice).
# A larger number names no row; refused here rather than failing in the database ("out of range").
MAX_ID = 2**31 - 1


def parse_id(value: str | strawberry.ID, field: str) -> int:
    text = str(value)
    if not _ID.fullmatch(text) or int(text) > MAX_ID:
        raise errors.ValidationError(field, f"{text[:40]!r} is not an id")
    return int(text)
