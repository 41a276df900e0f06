"""Context hygiene (issue 15, item 5) through real retrieval on a migrated database: near-duplicates
dropped before the cut to top_k, a per-document cap, adjacent kept chunks merged into one source."""

from __future__ import annotations

from dataclasses import replace

from app.container import Container
from app.rag.ingest.pipeline import Ingestor, Source
from app.rag.search.candidates import CandidateFate
from app.rag.search.retrieval import RetrievalParams, retrieve
from app.rag.search.retrieval_mode import RetrievalMode
from app.services import projects
from app.settings import IngestSettings
from tests.fakes import FakeEmbedder

SMALL = IngestSettings(chunk_tokens=16, overlap_tokens=0, max_chunk_chars=384)
HUDDLE = "Emperor penguins huddle together through the long Antarctic winter to keep warm."
LONG = "\n\n".join(
    [
        "Penguins huddle in winter. The colony moves slowly as one body against the wind.",
        "Penguins huddle to share warmth. Each bird takes a turn at the cold edge of the group.",
        "Penguins huddle for weeks. The males hold the egg on their feet the whole time.",
        "Penguins huddle until spring. Then the females return from the sea with food.",
    ]
)


def _project(container: Container, files: dict[str, str]) -> tuple[int, FakeEmbedder]:
    embedder = FakeEmbedder()
    pid = projects.create(container.store, "kb").id
    Ingestor(container.store, embedder, SMALL).ingest(pid, [Source.from_bytes(n, t.encode()) for n, t in files.items()])
    return pid, embedder


def test_a_near_duplicate_gives_its_place_to_a_different_source(container: Container) -> None:
    files = {"a.md": HUDDLE, "copy.md": HUDDLE.replace("Emperor", "emperor") + " ", "other.md": "Penguins swim."}
    pid, embedder = _project(container, files)
    params = RetrievalParams(top_k=2, threshold=0.0)
    plain = retrieve(container.store, embedder, pid, "penguins huddle winter", params)
    assert sorted(c.document_name for c in plain.kept) == ["a.md", "copy.md"]
    tidy = retrieve(container.store, embedder, pid, "penguins huddle winter", replace(params, dedupe=True))
    fates = {c.document_name: c.fate for c in tidy.candidates}
    assert fates["copy.md"] == CandidateFate.NEAR_DUPLICATE or fates["a.md"] == CandidateFate.NEAR_DUPLICATE
    assert "other.md" in [c.document_name for c in tidy.kept] and len(tidy.kept) == 2


def test_one_document_gives_at_most_per_document_sources(container: Container) -> None:
    pid, embedder = _project(container, {"long.md": LONG, "short.md": "Penguins huddle, briefly."})
    params = RetrievalParams(top_k=4, threshold=0.0, per_document=2)
    found = retrieve(container.store, embedder, pid, "penguins huddle", params)
    kept = [c.document_name for c in found.kept]
    assert kept.count("long.md") == 2 and "short.md" in kept
    assert any(c.fate == CandidateFate.OVER_DOCUMENT_CAP and c.document_name == "long.md" for c in found.candidates)


def test_adjacent_kept_chunks_of_a_document_become_one_source(container: Container) -> None:
    pid, embedder = _project(container, {"long.md": LONG})
    params = RetrievalParams(top_k=4, threshold=0.0)
    plain = retrieve(container.store, embedder, pid, "penguins huddle", params)
    assert len(plain.kept) >= 2
    merged = retrieve(container.store, embedder, pid, "penguins huddle", replace(params, merge_adjacent=True))
    (one,) = merged.kept  # every chunk of the document is kept, and they are all neighbours
    assert all(c.text.strip() in one.text for c in plain.kept)
    assert one.location.char_start == min(c.location.char_start for c in plain.kept)
    assert one.location.char_end == max(c.location.char_end for c in plain.kept)
    assert sum(c.fate == CandidateFate.MERGED for c in merged.candidates) == len(plain.kept) - 1


def test_a_widened_pass_brings_in_the_neighbours_of_its_strongest_hit(container: Container) -> None:
    pid, embedder = _project(container, {"long.md": LONG})
    params = RetrievalParams(top_k=1, threshold=0.0, candidates=1, mode=RetrievalMode.VECTOR)
    alone = retrieve(container.store, embedder, pid, "males hold the egg", params)
    (hit,) = alone.candidates
    wider = retrieve(container.store, embedder, pid, "males hold the egg", replace(params, neighbours=1))
    ordinals = sorted(c.ordinal for c in wider.candidates if c.ordinal is not None)
    assert hit.ordinal is not None and ordinals == [
        o for o in (hit.ordinal - 1, hit.ordinal, hit.ordinal + 1) if 0 <= o < 4
    ]
