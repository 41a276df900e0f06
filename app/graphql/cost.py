"""What an operation may cost, estimated before it runs: the objects its response can hold.

Depth and alias limits leave the product of page sizes free: 30 aliases of a knowledge base's
documents, each with its chunks, is shallow and small as text yet returned 300,000 chunks. So each
operation is estimated first, with its variables, and refused above ``RAGCHAT_API__MAX_QUERY_NODES``:

- every object (a value of an object, interface or union type) counts 1, times the number of times
  its parent can occur; scalars are free;
- a connection's ``edges`` hold its page: ``first`` or ``last`` (at most the page-size cap it will be
  held to), or the default page size when neither is given;
- a connection under a list (a document's chunks within a page of documents) is held to the smaller
  nested cap, and so is its estimate (:func:`page_cap`);
- every other list counts ``UNPAGED_LIST`` items; such lists are bounded by settings (citations by
  top_k, tool calls by max_calls) or small by nature;
- fragments are expanded where they are spread, every alias is counted, and a selection on a union
  or interface costs its most expensive member (one of them is returned).

A GraphQL error naming the limit and the estimate refuses the operation before any resolver runs,
over HTTP and the websocket alike (strawberry validates both the same way).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLList,
    GraphQLNamedType,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    VariableNode,
    get_named_type,
    is_abstract_type,
    is_composite_type,
)
from graphql.language import DocumentNode
from strawberry.extensions import SchemaExtension

from app.settings import ApiSettings

# What a list without pagination is estimated to hold.
UNPAGED_LIST = 10
# Pagination arguments: a field that takes them is a connection.
PAGE_ARGUMENTS = ("first", "last")
EDGES = "edges"  # the list of a connection that holds its page


@dataclass(frozen=True)
class PageSizes:
    """The page sizes a connection resolver holds clients to (app/graphql/connections.py)."""

    default: int  # with neither first nor last
    cap: int  # RAGCHAT_API__MAX_PAGE_SIZE
    nested_cap: int  # RAGCHAT_API__MAX_NESTED_PAGE_SIZE: a connection under a list

    @classmethod
    def of(cls, api: ApiSettings, default: int) -> PageSizes:
        return cls(default=default, cap=api.max_page_size, nested_cap=min(api.max_nested_page_size, api.max_page_size))

    def held_to(self, nested: bool) -> int:
        return self.nested_cap if nested else self.cap


def page_cap(path_keys: list[str | int], sizes: PageSizes) -> int:
    """The largest page a connection at ``path_keys`` (its response path) may return: under a list
    (an index in its path) the nested cap, else the cap."""
    return sizes.held_to(any(isinstance(key, int) for key in path_keys))


class _Estimate:
    def __init__(
        self, schema: GraphQLSchema, document: DocumentNode, variables: Mapping[str, Any], sizes: PageSizes
    ) -> None:
        self.schema = schema
        self.sizes = sizes
        self.variables = dict(variables)
        self.fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}

    def operation(self, operation: OperationDefinitionNode) -> int:
        for definition in operation.variable_definitions or ():
            name = definition.variable.name.value
            if name not in self.variables and isinstance(definition.default_value, IntValueNode):
                self.variables[name] = int(definition.default_value.value)
        root = self.schema.get_root_type(operation.operation)
        return self.selections(operation.selection_set, root, page=None, nested=False) if root else 0

    def selections(
        self, selection_set: SelectionSetNode, parent: GraphQLNamedType, *, page: int | None, nested: bool
    ) -> int:
        """The objects below one occurrence of ``parent``: the costliest of its possible types."""
        members: Sequence[GraphQLObjectType] = (
            self.schema.get_possible_types(parent)
            if is_abstract_type(parent)
            else [parent]
            if isinstance(parent, GraphQLObjectType)
            else []
        )
        return max((self._on_type(selection_set, member, page=page, nested=nested) for member in members), default=0)

    def _on_type(
        self, selection_set: SelectionSetNode, kind: GraphQLObjectType, *, page: int | None, nested: bool
    ) -> int:
        total = 0
        for field in self._fields(selection_set, kind, set()):
            definition = kind.fields.get(field.name.value)
            if definition is None or field.selection_set is None:
                continue  # __typename, a scalar, or a field validation refused
            named = get_named_type(definition.type)
            if not is_composite_type(named):
                continue
            is_list = isinstance(_nullable(definition.type), GraphQLList)
            count = (page if page is not None and field.name.value == EDGES else UNPAGED_LIST) if is_list else 1
            inner_page = self._page(field, nested) if any(a in definition.args for a in PAGE_ARGUMENTS) else None
            below = self.selections(field.selection_set, named, page=inner_page, nested=nested or is_list)
            total += count * (1 + below)
        return total

    def _fields(self, selection_set: SelectionSetNode, kind: GraphQLObjectType, seen: set[str]) -> Iterator[FieldNode]:
        """The fields selected on ``kind``: fragments that apply to it expanded, every alias kept."""
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode):
                yield selection
            elif isinstance(selection, InlineFragmentNode):
                if self._applies(selection.type_condition.name.value if selection.type_condition else None, kind):
                    yield from self._fields(selection.selection_set, kind, seen)
            elif isinstance(selection, FragmentSpreadNode):
                fragment = self.fragments.get(selection.name.value)
                if (
                    fragment is not None
                    and fragment.name.value not in seen
                    and self._applies(fragment.type_condition.name.value, kind)
                ):
                    yield from self._fields(fragment.selection_set, kind, seen | {fragment.name.value})

    def _applies(self, condition: str | None, kind: GraphQLObjectType) -> bool:
        if condition is None or condition == kind.name:
            return True
        named = self.schema.get_type(condition)
        return named is not None and is_abstract_type(named) and self.schema.is_sub_type(named, kind)

    def _page(self, field: FieldNode, nested: bool) -> int:
        """The page a connection field returns: first or last, held to its cap; else the default."""
        cap = self.sizes.held_to(nested)
        for argument in field.arguments or ():
            if argument.name.value not in PAGE_ARGUMENTS:
                continue
            value: object = argument.value.value if isinstance(argument.value, IntValueNode) else None
            if isinstance(argument.value, VariableNode):
                value = self.variables.get(argument.value.name.value)
            if value is None:
                continue
            try:
                size = int(value)  # type: ignore[call-overload]
            except (TypeError, ValueError):
                return cap  # refused when it runs; counted as the most it could be
            return max(0, min(size, cap))
        return min(self.sizes.default, cap)


def _nullable(kind: Any) -> Any:
    return kind.of_type if isinstance(kind, GraphQLNonNull) else kind


def estimate(
    schema: GraphQLSchema,
    document: DocumentNode,
    operation_name: str | None,
    variables: Mapping[str, Any] | None,
    sizes: PageSizes,
) -> int:
    """The objects the operation ``operation_name`` of ``document`` (the only one, when None) may
    return with ``variables``; 0 when there is no such operation (execution says so)."""
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    if operation_name is not None:
        operations = [o for o in operations if o.name is not None and o.name.value == operation_name]
    if len(operations) != 1:
        return 0
    return _Estimate(schema, document, variables or {}, sizes).operation(operations[0])


def too_costly(limit: int, found: int) -> GraphQLError:
    return GraphQLError(
        f"this operation may return about {found:,} objects, above the limit of {limit:,} "
        "(RAGCHAT_API__MAX_QUERY_NODES): ask for smaller pages (first/last), fewer aliases or less nesting",
        extensions={"code": "query_too_costly", "limit": limit, "estimate": found},
    )


def cost_limiter(api: ApiSettings, default_page: int) -> type[SchemaExtension]:
    """The extension refusing operations estimated above ``api.max_query_nodes``. It must come after
    validation has run (strawberry's ValidationCache, which validates in on_validate): an invalid
    document keeps its validation errors, and only a valid one is estimated."""

    class QueryCostLimiter(SchemaExtension):
        def on_validate(self) -> Iterator[None]:
            context = self.execution_context
            if context.pre_execution_errors == [] and context.graphql_document is not None:
                sizes = PageSizes.of(api, default_page)
                found = estimate(
                    context.schema._schema, context.graphql_document, context.operation_name, context.variables, sizes
                )
                if found > api.max_query_nodes:
                    context.pre_execution_errors = [too_costly(api.max_query_nodes, found)]
            yield

    return QueryCostLimiter
