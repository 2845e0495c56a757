"""The dense fact ranking's hubness correction (`FusionConfig.hub_penalty`).

Why: in a sentence-embedding space some texts are near everything. In a memory they are a
person's general statements ("Melanie values family moments", "Melanie has a husband and kids
who keep her motivated"): they sit near the centroid of that person's facts, come back in the
dense top ten of most questions about that person, and push out the specific facts a question
asks for ("What activities does Melanie partake in?" -> swimming, pottery, camping). Hubness
reduction (as CSLS does for word translation) scores a candidate by its cosine with the query
less its closeness to the crowd; here the crowd is the scope's centroid, the mean of its facts'
unit vectors, which the stores keep from their writes (`GraphStore.fact_vector_sum`), so a
search reads one vector, not the scope. Only the candidates the store's dense read returned
are re-scored and re-ordered: the correction changes the order within the top k, not which
facts are read.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mem0g.stores.vectors import centre_cosines, hub_centre, hub_rescored


def corrected(
    ranking: Sequence[tuple[str, float]],
    vectors: Sequence[np.ndarray | None],
    total: np.ndarray | None,
    penalty: float,
) -> list[tuple[str, float]]:
    """`ranking` (id, cosine) best first, re-scored as cosine - `penalty` x cos(fact, centroid)
    and re-sorted (equal scores keep their order). `vectors`: each candidate's embedding, in
    the ranking's order (None: left as it is); `total`: the scope's sum of unit fact vectors.
    A search of the current facts asks the store to do this (`similar_facts(hub=...)`), so
    the candidates' vectors never leave it; this is for rankings made here (`as_of`)."""
    centre = hub_centre(total) if penalty > 0 and ranking else None
    if centre is None:
        return list(ranking)
    return hub_rescored(ranking, centre_cosines(vectors, centre), penalty)
