"""Chat in the API: sessions and messages read and changed, the providers, and a turn's trace."""
