"""Loopback servers speaking vendors' wire protocols, for adapter tests over real HTTP."""
