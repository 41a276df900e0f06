"""ragchat: a GraphQL RAG chat server."""

__version__ = "0.1.0"
