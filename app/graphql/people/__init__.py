"""People in the schema: who signs in, their roles in knowledge bases, their keys."""
