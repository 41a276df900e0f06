"""Answering from what search kept: the token budget, extractive answers, citations and the guard
every answer passes before it is kept."""
