"""A live server over a real migrated database with fake providers, as in tests/graphql/; and the
operation names admitted as metric labels forgotten before each test, since the tests run before it
in the same process (under xdist, a worker runs many files) may have reached the cap."""

from collections.abc import Iterator

import pytest

from app.ops import metrics
from tests.graphql.conftest import api, fake_container, model  # noqa: F401


@pytest.fixture(autouse=True)
def fresh_operation_labels() -> Iterator[None]:
    metrics._operations.clear()
    yield
