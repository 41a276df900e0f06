"""The schema object, with its protective extensions and error masking."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import strawberry
from graphql import GraphQLError
from strawberry.extensions import (
    AddValidationRules,
    MaxAliasesLimiter,
    MaxTokensLimiter,
    ParserCache,
    QueryDepthLimiter,
    SchemaExtension,
    ValidationCache,
)
from strawberry.printer import print_schema
from strawberry.types import ExecutionContext
from strawberry.types.graphql import OperationType

from app.errors import RagchatError
from app.graphql import operation_log
from app.graphql.connections import DEFAULT_PAGE_SIZE
from app.graphql.cost import cost_limiter
from app.graphql.gate import AnonymousGate
from app.graphql.mutations import Mutation
from app.graphql.queries import Query
from app.graphql.subscriptions import Subscription
from app.graphql.token_events import TokenEventExecutor
from app.request_log import GRAPHQL_ERRORS, INTERNAL_ERROR
from app.settings import ApiSettings, Settings

log = logging.getLogger("ragchat.graphql")
SUBSCRIPTIONS_NEED_A_WEBSOCKET = "subscriptions are served over a websocket at /graphql (graphql-transport-ws)"


def _request_id(execution_context: ExecutionContext | None) -> str:
    return str(getattr(getattr(execution_context, "context", None), "request_id", "-"))


def is_client_error(error: GraphQLError) -> bool:
    """A mistake of the client's (syntax, validation, a RagchatError), not a bug of ours."""
    return error.original_error is None or isinstance(error.original_error, RagchatError | GraphQLError)


class RagchatSchema(strawberry.Schema):
    """Logs each error once, before it is masked: a client's mistake as one line at info (no
    traceback: it is not ours to debug, and a client could fill the log with them), anything
    else at error with its traceback and the request id the client is shown."""

    def process_errors(self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None) -> None:
        request_id = _request_id(execution_context)
        for error in errors:
            original = error.original_error
            if is_client_error(error):
                operation_log.note(type(original).__name__ if isinstance(original, RagchatError) else GRAPHQL_ERRORS)
                log.info("client error: %s", error.message)  # the request id is on every line (app/logs.py)
            elif original is not None:
                operation_log.note(INTERNAL_ERROR)
                log.error("request %s failed", request_id, exc_info=(type(original), original, original.__traceback__))


class MaskUnexpectedErrors(SchemaExtension):
    """Errors the schema does not describe are bugs: show the client only the request id under
    which they were logged (RagchatSchema.process_errors). GraphQL's own validation errors and our
    RagchatErrors pass unchanged."""

    def on_operation(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        if result is None or not getattr(result, "errors", None):
            return
        if self.execution_context.operation_type is OperationType.SUBSCRIPTION:
            # A stream reports its errors as events; a subscription ending up here came over plain
            # HTTP, where strawberry runs it as a query and fails with a confusing null error.
            result.errors = [GraphQLError(SUBSCRIPTIONS_NEED_A_WEBSOCKET)]
            return
        context = self.execution_context.context
        request_id = getattr(context, "request_id", "-")
        result.errors = [self._mask(error, request_id) for error in result.errors or []]

    def _mask(self, error: GraphQLError, request_id: str) -> GraphQLError:
        original = error.original_error
        if isinstance(original, RagchatError) and not (error.extensions or {}).get("code"):
            # A field without a result union refuses by raising: its error says which kind it is,
            # as union members and the gate's refusals do, so a client need not read the message.
            error.extensions = {**(error.extensions or {}), "code": original.code.value}
            return error
        if is_client_error(error):
            return error
        return GraphQLError(
            f"Unexpected error (request {request_id}); it has been logged.",
            nodes=error.nodes,
            source=error.source,
            positions=error.positions,
            path=error.path,
            extensions={"code": "internal", "requestId": request_id},
        )


# Bounded: distinct documents beyond this just miss the cache (clients send a handful of documents).
DOCUMENT_CACHE_SIZE = 256


def build_schema(api: ApiSettings | None = None) -> strawberry.Schema:
    api = api or Settings().api
    # The limits' rule classes are made once, so every request validates with the same rules and
    # the validation of a document already seen is a cache hit. Validation is pure Python and costly:
    # under load, re-validating each chat subscription took most of the event loop's time.
    rules = [
        *QueryDepthLimiter(max_depth=api.max_query_depth).validation_rules,
        *MaxAliasesLimiter(max_alias_count=api.max_aliases).validation_rules,
    ]
    return RagchatSchema(
        # A streamed token's result without a selection-set execution per event (app/graphql/token_events.py).
        execution_context_class=TokenEventExecutor if api.preresolved_token_events else None,
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        extensions=[
            # Factories: strawberry builds fresh extension instances for each request.
            operation_log.OperationLog,  # first: its timing brackets the others
            lambda: MaxTokensLimiter(max_token_count=api.max_tokens),
            lambda: ParserCache(maxsize=DOCUMENT_CACHE_SIZE),
            lambda: AddValidationRules(rules),
            lambda: ValidationCache(maxsize=DOCUMENT_CACHE_SIZE),
            # After validation (it estimates valid documents only), with each request's variables.
            cost_limiter(api, DEFAULT_PAGE_SIZE),
            # Then, before any resolver: an anonymous caller may only sign in. Everyone else is
            # judged per resource by the services.
            AnonymousGate,
            MaskUnexpectedErrors,
        ],
    )


def export_sdl() -> str:
    return print_schema(build_schema()) + "\n"
