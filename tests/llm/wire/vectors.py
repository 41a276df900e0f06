"""Deterministic stand-in embeddings: the same text always gets the same vector, on any machine."""

from __future__ import annotations

import hashlib

import numpy as np


def fake_vector(text: str, dimensions: int, *, scale: float = 3.0) -> list[float]:
    """A vector seeded by ``text``; deliberately not unit length (``scale``), as some servers send."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    vector = np.random.default_rng(seed).standard_normal(dimensions).astype(np.float32)
    return (scale * vector / np.linalg.norm(vector)).tolist()


def unit(vector: list[float]) -> np.ndarray:
    """``vector`` as the adapters return it: float32, L2-normalised."""
    array = np.asarray(vector, dtype=np.float32)
    return array / np.linalg.norm(array)
