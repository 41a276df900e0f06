"""The schema object, with its protective extensions and error masking."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import strawberry
from graphql import GraphQLError
from strawberry.extensions import MaxAliasesLimiter, MaxTokensLimiter, QueryDepthLimiter, SchemaExtension
from strawberry.printer import print_schema

from app.errors import RagchatError
from app.graphql.mutations import Mutation
from app.graphql.queries import Query
from app.graphql.subscriptions import Subscription
from app.settings import ApiSettings, Settings

log = logging.getLogger("ragchat.graphql")


class MaskUnexpectedErrors(SchemaExtension):
    """Errors the schema does not describe are bugs: log them with the request id and show the
    client only that id. GraphQL's own validation errors and our RagchatErrors pass unchanged."""

    def on_operation(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        if result is None or not getattr(result, "errors", None):
            return
        context = self.execution_context.context
        request_id = getattr(context, "request_id", "-")
        result.errors = [self._mask(error, request_id) for error in result.errors or []]

    def _mask(self, error: GraphQLError, request_id: str) -> GraphQLError:
        original = error.original_error
        if original is None or isinstance(original, RagchatError | GraphQLError):
            return error
        log.error("request %s failed", request_id, exc_info=(type(original), original, original.__traceback__))
        return GraphQLError(
            f"Unexpected error (request {request_id}); it has been logged.",
            nodes=error.nodes,
            source=error.source,
            positions=error.positions,
            path=error.path,
            extensions={"code": "internal", "requestId": request_id},
        )


def build_schema(api: ApiSettings | None = None) -> strawberry.Schema:
    api = api or Settings().api
    return strawberry.Schema(
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        extensions=[
            # Factories: strawberry builds fresh extension instances for each request.
            lambda: QueryDepthLimiter(max_depth=api.max_query_depth),
            lambda: MaxAliasesLimiter(max_alias_count=api.max_aliases),
            lambda: MaxTokensLimiter(max_token_count=api.max_tokens),
            MaskUnexpectedErrors,
        ],
    )


def export_sdl() -> str:
    return print_schema(build_schema()) + "\n"
