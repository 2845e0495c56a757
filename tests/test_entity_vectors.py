"""EntityVectors: the held name vectors behind the Neo4j store's exact resolver candidates
(the store's reads and their races are tested against the server in test_neo4j_store.py)."""

from __future__ import annotations

import numpy as np

from mem0g.stores.neo4j.entity_vectors import EntityVectors, Watermark

E1, E2 = Watermark("epoch-1", 3), Watermark("epoch-2", 1)


def vecs(*rows: list[float]) -> list[list[float]]:
    return [list(r) for r in rows]


def test_load_holds_unit_rows_in_the_given_order() -> None:
    held = EntityVectors(10)
    block = held.load("a", E1, ["x", "y"], vecs([3.0, 4.0], [0.0, 2.0]), dims=2)
    assert block is not None and block.ids == ["x", "y"]
    np.testing.assert_allclose(block.matrix, [[0.6, 0.8], [0.0, 1.0]], rtol=1e-6)
    assert held.mark("a") == E1 and held.rows == 2


def test_extend_adds_new_rows_once_and_moves_the_mark() -> None:
    held = EntityVectors(10)
    held.load("a", E1, ["x"], vecs([1.0, 0.0]), dims=2)
    block = held.extend("a", Watermark("epoch-1", 5), ["x", "z"], vecs([9.0, 9.0], [0.0, 1.0]))
    assert block is not None and block.ids == ["x", "z"]
    np.testing.assert_allclose(block.matrix[0], [1.0, 0.0])  # a held row is never replaced
    assert held.mark("a") == Watermark("epoch-1", 5) and held.rows == 2
    # an older read (another thread's) never moves the mark back
    held.extend("a", Watermark("epoch-1", 4), [], [])
    assert held.mark("a") == Watermark("epoch-1", 5)


def test_extend_refuses_another_epoch_or_an_unheld_tenant() -> None:
    held = EntityVectors(10)
    held.load("a", E1, ["x"], vecs([1.0, 0.0]), dims=2)
    assert held.extend("a", E2, ["gone"], vecs([0.0, 1.0])) is None
    assert held.extend("b", E1, ["y"], vecs([0.0, 1.0])) is None
    assert held.rows == 1


def test_least_recently_used_tenants_go_first_and_too_large_ones_are_not_held() -> None:
    held = EntityVectors(4)
    held.load("a", E1, ["a1", "a2"], vecs([1, 0], [0, 1]), dims=2)
    held.load("b", E1, ["b1"], vecs([1, 1]), dims=2)
    held.extend("a", E1, [], [])  # a is used again: b is now the oldest
    held.load("c", E1, ["c1", "c2"], vecs([1, 0], [0, 1]), dims=2)
    assert (held.mark("a"), held.mark("b"), held.mark("c")) == (E1, None, E1)
    assert held.rows == 4
    assert held.load("d", E1, ["d1"] * 5, vecs(*[[1, 0]] * 5), dims=2) is None
    assert held.mark("d") is None and held.rows == 4
    assert held.extend("c", E1, ["c3", "c4", "c5"], vecs([1, 1], [1, 2], [2, 1])) is None
    assert held.mark("c") is None and held.rows == 2  # grown too large: dropped


def test_a_tenant_without_a_sequence_is_answered_but_not_held() -> None:
    held = EntityVectors(10)
    block = held.load("dumped", None, ["x"], vecs([1.0, 0.0]), dims=2)
    assert block is not None and block.ids == ["x"]
    assert held.mark("dumped") is None and held.rows == 0


def test_forget() -> None:
    held = EntityVectors(10)
    held.load("a", E1, ["x"], vecs([1.0, 0.0]), dims=2)
    held.load("b", E1, ["y"], vecs([1.0, 0.0]), dims=2)
    held.forget("a")
    assert held.mark("a") is None and held.rows == 1
    held.forget()
    assert held.mark("b") is None and held.rows == 0
