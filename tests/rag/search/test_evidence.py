"""Document evidence in the hybrid ranking: the page that holds the question's rarer words across its
passages outranks a sibling page whose one passage is nearest to the question but holds only its
commoner words."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from app.container import Container
from app.llm.base import Vectors
from app.rag.index import keyword_index
from app.rag.ingest.pipeline import Ingestor, Source
from app.rag.search import evidence
from app.rag.search.retrieval import RetrievalParams, retrieve
from app.services import projects
from tests.fakes import FakeEmbedder

pytestmark = pytest.mark.postgres

QUESTION = "How often do we rotate the signing keys for staging?"


class MarkedEmbedder(FakeEmbedder):
    """Pinned vectors by a marker the text contains (a chunk's text is the chunker's to choose), so the
    cosines are the ones a small model gives a sibling page: the overview nearest to the question."""

    def __init__(self, marked: dict[str, Sequence[float]]) -> None:
        super().__init__(dimensions=4)
        self.marked = {marker: np.asarray(v, dtype=np.float32) / np.linalg.norm(v) for marker, v in marked.items()}

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = super().embed(texts)
        for i, text in enumerate(texts):
            for marker, vector in self.marked.items():
                if marker in text:
                    out[i] = vector
                    break
        return out


def _project(container: Container) -> tuple[MarkedEmbedder, int]:
    embedder = MarkedEmbedder(
        {
            QUESTION: [1, 0, 0, 0],
            "nightly": [0.8, 0.6, 0, 0],  # the overview's passage: cosine 0.80
            "quarter": [0.6, 0, 0.8, 0],  # the keys page's passages: 0.60 and 0.55
            "vault": [0.55, 0, 0, 0.835],
            "lunch": [0.1, 0.995, 0, 0],  # unrelated pages: 0.10
            "parking": [0.1, 0, 0.995, 0],
        }
    )
    files = {
        "deploy-overview.md": "# Deploys\n\nStaging deploys run nightly, and the signing step runs for staging after the tests pass.\n",
        "signing-keys.md": (
            "# Signing keys\n\n## Rotation\n\nWe rotate them once a quarter, on the first Monday.\n\n"
            "## Where they live\n\nThe signing keys for staging are kept in the vault, never on laptops.\n"
        ),
        "lunch.md": "# Lunch\n\nThe team has lunch together on Fridays.\n",
        "parking.md": "# Parking\n\nVisitors get a parking permit at the front desk.\n",
    }
    pid = projects.get_or_create(container.store, "evidence")[0].id
    small = container.settings.ingest.model_copy(update={"chunk_tokens": 24, "overlap_tokens": 0})
    summary = Ingestor(container.store, embedder, small).ingest(
        pid, [Source.from_bytes(name, text.encode()) for name, text in files.items()]
    )
    assert summary.count("failed") == 0, [f.error for f in summary.files]
    return embedder, pid


def test_the_page_holding_the_rarer_words_outranks_the_nearest_sibling(container: Container) -> None:
    embedder, pid = _project(container)
    params = RetrievalParams(top_k=5, threshold=0.0)
    found = retrieve(container.store, embedder, pid, QUESTION, params).candidates
    keys = [c for c in found if c.document_name == "signing-keys.md"]
    assert len(keys) == 2  # the page's two sections are two passages
    assert found[0].document_name == "signing-keys.md"
    # Without the evidence the overview's passage, nearest by cosine, comes first.
    off = RetrievalParams(top_k=5, threshold=0.0, document_coverage=0.0)
    assert retrieve(container.store, embedder, pid, QUESTION, off).candidates[0].document_name == "deploy-overview.md"


def test_coverage_is_the_documents_share_of_the_idf_weighted_words() -> None:
    terms = keyword_index.tokenizer().question("rotate signing keys")
    weights = dict.fromkeys(terms, 1.0)
    rotate = keyword_index.tokenizer().question("rotate")
    weights.update(dict.fromkeys(rotate, 2.0))  # the rarer word counts double
    chunks = {1: (10, "signing keys"), 2: (10, "we rotate"), 3: (20, "signing keys, signing keys")}
    fused = evidence.with_documents({1: 0.5, 2: 0.4, 3: 0.9, 4: 0.3}, chunks, weights, coverage=0.2)
    # Document 10 holds every word across its two chunks (share 1), document 20 half of the weight.
    assert fused == pytest.approx({1: 0.7, 2: 0.6, 3: 0.9 + 0.2 * 0.5, 4: 0.3})
    assert evidence.with_documents({1: 0.5}, chunks, weights, coverage=0.0) == {1: 0.5}
    assert evidence.with_documents({1: 0.5}, chunks, {}, coverage=0.2) == {1: 0.5}
