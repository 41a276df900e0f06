"""Schemathesis against the live server: queries and mutations generated from the schema the server
itself serves (introspection), each checked with schemathesis's own checks for GraphQL (no server
error: no error with a path, as a resolver raising gives; a valid request is not refused; no null
in a non-null field; a JSON object back) and like the hand-written hostile cases."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, cast

import graphql
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode

from app.container import Container
from app.settings import Settings
from tests.graphql.client import live_api
from tests.graphql.ops import ADD_DOC, CREATE_PROJECT, CREATE_SESSION
from tests.reliability.helpers import check, fake_container, row_counts
from tests.tally import CASES

EXAMPLES_PER_OPERATION = 15
# A file cannot be written inline in GraphQL: whatever a client puts there (a string, a number)
# must be refused clearly, not reach the resolver as something that is not a file.
schemathesis.graphql.scalar(
    "Upload",
    st.one_of(
        st.text(max_size=20).map(schemathesis.graphql.nodes.String), st.integers().map(schemathesis.graphql.nodes.Int)
    ),
)

# The JSON scalar (a tool's inputSchema, testTool's arguments) takes any JSON value: small objects of
# scalars, and bare scalars, which the resolvers must refuse as the union's ValidationError.
_NODES = schemathesis.graphql.nodes
_LEAF = st.one_of(  # not null: a JSON! argument cannot be null, and a null one is not a valid request
    st.text(max_size=10).map(_NODES.String),
    st.integers(-5, 5).map(_NODES.Int),
    st.booleans().map(_NODES.Boolean),
)
_FIELD = st.tuples(st.from_regex(r"[a-z_]{1,8}", fullmatch=True), _LEAF | st.just(_NODES.Null)).map(
    lambda pair: graphql.ObjectFieldNode(name=graphql.NameNode(value=pair[0]), value=pair[1])
)
schemathesis.graphql.scalar(
    "JSON", st.one_of(st.lists(_FIELD, max_size=3, unique_by=lambda f: f.name.value).map(_NODES.Object), _LEAF)
)


@pytest.fixture(scope="module")
def target(module_migrated_url: str) -> Iterator[tuple[str, Container]]:
    built = Settings(database_url=module_migrated_url)
    container = fake_container(built)
    with live_api(container) as api:
        pid = api.run(CREATE_PROJECT, name="kb")["createProject"]["id"]
        api.run(ADD_DOC, p=pid, name="penguins.md", text="# Penguins\n\nEmperor penguins huddle in the winter.")
        api.run(CREATE_SESSION, p=pid, input={"provider": "fake", "model": "scripted", "threshold": 0.1})
        yield f"{api.base}/graphql", container
    container.close()


def test_every_generated_operation_gets_a_clear_answer(target: tuple[str, Container]) -> None:
    url, container = target
    schema = schemathesis.graphql.from_url(url)
    operations = [cast(Any, result).ok() for result in schema.get_all_operations()]
    assert len(operations) >= 20  # every query and mutation field of the schema

    for operation in operations:
        _cases(operation, container)()


def _cases(operation: Any, container: Container) -> Callable[[], None]:
    """A hypothesis test over one operation's generated cases."""
    kind = operation.label.split(".")[0].lower()

    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    # Valid requests (each must be served: a mistake in a value is the union's ValidationError) and
    # invalid ones (each must be refused by the schema's validation, before anything runs).
    @given(case=operation.as_strategy(GenerationMode.POSITIVE) | operation.as_strategy(GenerationMode.NEGATIVE))
    def run(case: schemathesis.Case) -> None:
        before = row_counts(container.store)
        response = case.call(timeout=30)
        # Every input mistake to a field that returns a result union is that union's ValidationError,
        # so schemathesis's checks see no error where the schema offers a member for it.
        case.validate_response(response)
        check(response, before, row_counts(container.store))  # type: ignore[arg-type]
        mode = case.meta.generation.mode.value if case.meta else "unknown"
        CASES[f"schemathesis: {kind} cases ({mode})"] += 1

    return run
