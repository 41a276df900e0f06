"""Use cases: what the API and the CLI call. Services hold the business rules; no HTTP, no GraphQL."""
