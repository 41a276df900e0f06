"""Anonymous callers (the server has people; the request names none) may only sign in.

One check for the whole schema, before any resolver runs: an operation that selects a root field
other than those of the sign-in surface is refused with ForbiddenError ("sign in first"), so a new
field is closed to anonymous callers unless it is added here on purpose. What signed-in callers may
do is decided by the services (app/services/people/access.py).
"""

from __future__ import annotations

from collections.abc import Iterator

from graphql import FieldNode, OperationDefinitionNode
from strawberry.extensions import SchemaExtension

from app.services.people.access import Caller, require_signed_in

# Root fields an anonymous caller may select: what the sign-in page needs.
ANONYMOUS_FIELDS = frozenset(
    {"serverAccess", "signIn", "setUpFirstAdministrator", "acceptInvitation", "__typename", "__schema", "__type"}
)


def root_fields(operation: OperationDefinitionNode) -> list[str] | None:
    """The operation's root field names; None when it selects through fragments (then it is refused)."""
    names = []
    for selection in operation.selection_set.selections:
        if not isinstance(selection, FieldNode):
            return None
        names.append(selection.name.value)
    return names


class SignedInOnly(SchemaExtension):
    def on_execute(self) -> Iterator[None]:
        context = self.execution_context.context
        caller = getattr(context, "caller", None)
        if not isinstance(caller, Caller) or not caller.signed_in:
            document = self.execution_context.graphql_document
            name = self.execution_context.operation_name
            operations = [
                d
                for d in (document.definitions if document is not None else ())
                if isinstance(d, OperationDefinitionNode) and (name is None or (d.name and d.name.value == name))
            ]
            fields = root_fields(operations[0]) if len(operations) == 1 else None
            if fields is None or not set(fields) <= ANONYMOUS_FIELDS:
                require_signed_in(Caller.anonymous())
        yield
