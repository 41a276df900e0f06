"""Vector helpers shared by the embedders."""

from __future__ import annotations

import numpy as np

from app.llm.base import Vectors


def normalise(vectors: Vectors) -> Vectors:
    """Rows scaled to unit L2 norm, as float32; an all-zero row stays zero instead of becoming NaN."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.clip(norms, 1e-12, None)).astype(np.float32)
