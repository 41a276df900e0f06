"""People in the API: signing in, the first administrator, invitations, members of a knowledge base and API keys."""
