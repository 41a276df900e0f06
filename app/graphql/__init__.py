"""The GraphQL API: thin resolvers that turn input into service calls and results into types."""
