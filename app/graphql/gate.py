"""Which operations a caller may start, decided before any resolver runs.

People sign in, manage their keys and (administrators) the team through the people surface
(app/graphql/people/), whose services decide with app/services/people/access.py. The rest of the
API — knowledge bases, documents, search, chats, tools, jobs — does not yet ask that service per
resource, so it is open only to callers with every right: the server itself (a server key, or an
open server with no people and no keys) and administrators (signed in, or by a key that is neither
read-only nor limited to some knowledge bases). Everyone else gets the people surface alone:
anonymous callers are told to sign in, members that their role is not enough yet. Refusing is the
safe side of the line: a member given everything would read every private chat.

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
SIGN_IN_FIRST = "sign in first: this server has people, and this operation needs one"
NOT_YET = (
    "knowledge bases, documents, search, chats and tools are open to administrators only for now: "
    "roles per knowledge base are recorded but not yet enforced per resource, so a member or a "
    "limited key is refused rather than given everything"
)


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


def access_gate(open_fields: frozenset[str]) -> type[SchemaExtension]:
    """The extension refusing an operation whose root fields are not all ``open_fields`` (the people
    surface) for a caller without full rights. After validation: an invalid document keeps its errors."""
    allowed = open_fields | INTROSPECTION

    class AccessGate(SchemaExtension):
        def on_validate(self) -> Iterator[None]:
            context = self.execution_context
            caller = getattr(context.context, "caller", None)
            if (
                context.pre_execution_errors == []
                and context.graphql_document is not None
                and isinstance(caller, Caller)
                and not caller.full_rights
            ):
                refused = sorted(root_fields(context.graphql_document, context.operation_name) - allowed)
                if refused:
                    anonymous = caller.kind == CallerKind.ANONYMOUS
                    message = SIGN_IN_FIRST if anonymous else NOT_YET
                    response = getattr(context.context, "response", None)
                    if anonymous and response is not None:
                        # Over HTTP, a 401 as before people existed: a client (the web app's key
                        # dialog) knows to offer credentials.
                        response.status_code = 401
                        response.headers["WWW-Authenticate"] = "Bearer"
                    context.pre_execution_errors = [
                        GraphQLError(
                            f"{message} ({', '.join(refused)})", extensions={"code": ErrorCode.FORBIDDEN.value}
                        )
                    ]
            yield

    return AccessGate
