"""Anonymous callers (the server has people; the request names none) may only sign in.

One check for the whole schema, before any resolver runs: an operation whose root fields are not
all of the sign-in surface is refused, so a field added later is closed to anonymous callers unless
it is added here on purpose. What everyone else may do is decided per resource by the services
(app/services/people/access.py), inside their transactions.

Checked on the operation's root fields (fragments at the root expanded), so nested fields are only
ever reached through an allowed root.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    OperationDefinitionNode,
)
from graphql.language import DocumentNode, SelectionSetNode
from strawberry.extensions import SchemaExtension

from app.errors import ErrorCode
from app.services.people.access import Caller, CallerKind

INTROSPECTION = frozenset({"__typename", "__schema", "__type"})
# Root fields an anonymous caller may select: what the sign-in page and an invited person need.
# `me` answers null and signOut does nothing for them, so a browser whose session ended asks both
# without an error.
ANONYMOUS_FIELDS = (
    frozenset({"serverAccess", "me", "signIn", "signOut", "setUpFirstAdministrator", "acceptInvitation"})
    | INTROSPECTION
)
SIGN_IN_FIRST = "sign in first: this server has people, and this operation needs one"


def root_fields(document: DocumentNode, operation_name: str | None) -> set[str]:
    """The names of the root fields the operation selects."""
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    chosen = [o for o in operations if operation_name is None or (o.name and o.name.value == operation_name)]
    fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
    names: set[str] = set()

    def walk(selections: SelectionSetNode, seen: frozenset[str]) -> None:
        for node in selections.selections:
            if isinstance(node, FieldNode):
                names.add(node.name.value)
            elif isinstance(node, InlineFragmentNode):
                walk(node.selection_set, seen)
            elif isinstance(node, FragmentSpreadNode) and node.name.value not in seen:
                fragment = fragments.get(node.name.value)
                if fragment is not None:
                    walk(fragment.selection_set, seen | {node.name.value})

    for operation in chosen[:1]:
        walk(operation.selection_set, frozenset())
    return names


class AnonymousGate(SchemaExtension):
    """Refuses an anonymous caller's operation unless its root fields are all ANONYMOUS_FIELDS.
    After validation: an invalid document keeps its errors."""

    def on_validate(self) -> Iterator[None]:
        context = self.execution_context
        caller = getattr(context.context, "caller", None)
        if (
            context.pre_execution_errors == []
            and context.graphql_document is not None
            and isinstance(caller, Caller)
            and caller.kind == CallerKind.ANONYMOUS
        ):
            refused = sorted(root_fields(context.graphql_document, context.operation_name) - ANONYMOUS_FIELDS)
            if refused:
                response = getattr(context.context, "response", None)
                if response is not None:
                    # Over HTTP, a 401 as before people existed: a client (the web app's key
                    # dialog, its sign-in page) knows to offer credentials.
                    response.status_code = 401
                    response.headers["WWW-Authenticate"] = "Bearer"
                context.pre_execution_errors = [
                    GraphQLError(
                        f"{SIGN_IN_FIRST} ({', '.join(refused)})", extensions={"code": ErrorCode.FORBIDDEN.value}
                    )
                ]
        yield
