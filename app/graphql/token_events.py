"""A streamed token's result, built without executing its selection set.

graphql-core executes a subscription's whole selection set once per event: it collects the fields
(fragments, aliases, ``@skip``/``@include``), resolves the union's type, and completes each field.
A ``ChatToken`` is most of a stream's events, and its result depends on nothing but the event: the
document and variables are fixed for the subscription, so the fields a token gets are too. This
executor works them out once per subscription, at its first token, and then fills in each token's
two values. The result is the same dict, key for key and in the same order, as execution builds.

Anything it does not know how to answer exactly runs the normal execution: other event types, a
field other than ``__typename``, ``messageId`` and ``text``, ``@defer``, resolver middleware (a
schema extension with a ``resolve`` hook), an abort signal, a value a scalar would refuse.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from graphql import ExecutionResult, GraphQLNonNull, GraphQLObjectType, get_nullable_type
from graphql.execution.collect_fields import collect_fields
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from app.graphql.subscriptions import ChatToken

TYPE_NAME = "ChatToken"
# Each field a token can be asked for: how its value is read from the event.
READERS: dict[str, Callable[[ChatToken], object]] = {
    "__typename": lambda _token: TYPE_NAME,
    "messageId": lambda token: token.message_id,
    "text": lambda token: token.text,
}


@dataclass(frozen=True)
class TokenShape:
    """What the subscription asks of a token: the root field's response key, and each subfield's
    response key with how its value is read and serialised (in the order execution would give)."""

    root_key: str
    fields: tuple[tuple[str, Callable[[ChatToken], object], Callable[[Any], Any]], ...]

    def result(self, token: ChatToken) -> dict[str, Any] | None:
        data = {}
        for key, read, serialize in self.fields:
            value = read(token)
            if value is None:  # a null in a non-null field is an error: execution words it
                return None
            data[key] = serialize(value)
        return {self.root_key: data}


@dataclass(frozen=True)
class Built:
    """An event's result, ready: what graphql-core asks of a per-event executor is this one call."""

    result: ExecutionResult

    def execute_operation(self, serially: bool | None = None) -> ExecutionResult:
        return self.result


class TokenEventExecutor(StrawberryGraphQLCoreExecutionContext):
    """Strawberry's executor, with each ``ChatToken`` event's result built from a shape worked
    out once per subscription (module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Empty until the first token; then its shape, or None (the normal path).
        self.token_shape: list[TokenShape | None] = []

    def build_per_event_executor(self, payload: Any) -> Any:
        # graphql-core copies this executor for each event and runs the copy's execute_operation;
        # a token needs neither: its result is ready before the copy would be made.
        if type(payload) is ChatToken:
            if not self.token_shape:
                self.token_shape.append(self._shape())
            shape = self.token_shape[0]
            data = shape.result(payload) if shape is not None else None
            if data is not None:
                return Built(ExecutionResult(data, None))
        return super().build_per_event_executor(payload)

    def _shape(self) -> TokenShape | None:
        if self.abort_signal is not None or self.hooks is not None:
            return None
        if self.middleware_manager is not None and self.middleware_manager.middlewares:
            return None
        root_type = self.schema.subscription_type
        token_type = self.schema.get_type(TYPE_NAME)
        if root_type is None or not isinstance(token_type, GraphQLObjectType):
            return None
        try:
            root = collect_fields(
                self.schema, self.fragments, self.variable_values, root_type, self.operation, self.hide_suggestions
            )
        except RecursionError:
            return None
        if root.new_defer_usages or len(root.grouped_field_set) != 1:
            return None
        ((root_key, details),) = root.grouped_field_set.items()
        field = root_type.fields.get(details[0].node.name.value)
        if field is None or not _returns(field.type, token_type):
            return None
        sub = self.collect_subfields(token_type, details)
        if sub.new_defer_usages:
            return None
        fields = []
        for key, sub_details in sub.grouped_field_set.items():
            name = sub_details[0].node.name.value
            read = READERS.get(name)
            definition = token_type.fields.get(name)
            if read is None or (definition is None and name != "__typename"):
                return None
            leaf = get_nullable_type(definition.type) if definition is not None else None
            if definition is not None and not isinstance(definition.type, GraphQLNonNull):
                return None
            fields.append((key, read, getattr(leaf, "serialize", str)))
        return TokenShape(root_key, tuple(fields))


def _returns(field_type: Any, token_type: GraphQLObjectType) -> bool:
    """Whether a field of this type may return a ChatToken: the type itself, or a union with it."""
    named = get_nullable_type(field_type)
    return named is token_type or token_type in getattr(named, "types", ())
