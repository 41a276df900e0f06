"""A live server over a real migrated database with fake providers, as in tests/graphql/."""

from tests.graphql.conftest import api, fake_container, model  # noqa: F401
