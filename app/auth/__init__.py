"""Sign-in pages that are HTTP, not GraphQL: single sign-on's redirects to and from the provider."""
