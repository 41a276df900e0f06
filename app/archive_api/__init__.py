"""A knowledge base as a file over HTTP: its owners download it (GraphQL's importKnowledgeBase
takes it back, on this server or another)."""
