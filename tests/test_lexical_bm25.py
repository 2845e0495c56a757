"""The embedded store's BM25 from counts its own writes keep (stores/embedded/bm25.py): the
scores are FTS5 bm25()'s on random stores, after inserts, updates, renames and deletes; the
counts are what a rebuild from FTS5's own index gives, follow a rolled-back plan (unchanged),
an older store and renumbered rowids; a word FTS5 splits in two ranks by bm25() itself; and
an ordinary search never evaluates bm25(), whose store-wide counts walk every tenant's rows."""

from __future__ import annotations

import json
import random
import sqlite3
from typing import Any

import pytest
from builders import DIMS, T0, entity, episode, fact, relation

from mem0g.stores import EmbeddedGraphStore, StoreError
from mem0g.stores.embedded import bm25, lexical
from mem0g.types import AliasUpdate, FactChange, Tenant, WritePlan

WORDS = (
    "lake hill locker code research researching researched paint painting paints support "
    "group camping mountain sunset alpha beta café zürich"
).split()
TABLES = ("facts", "relations", "entities")
USERS = [Tenant(user_id=f"u{i}") for i in range(6)] + [Tenant(user_id="u1", run_id="r2")]


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 9)))


def _fill(store: EmbeddedGraphStore, rng: random.Random, tenant: Tenant, facts: int) -> None:
    ents = [entity(tenant, f"{rng.choice(WORDS)} {rng.choice(WORDS)} x{c}",
                   aliases=[f"{rng.choice(WORDS)} y{c}"]) for c in "abc"]  # fmt: skip
    rels = [relation(tenant, ents[0], rng.choice(["lives_in", "paints_hill", "code_of"]), e)
            for e in ents[1:]]  # fmt: skip
    notes = [fact(tenant, _text(rng), created_at=T0, updated_at=T0) for _ in range(facts)]
    store.apply(WritePlan(tenant=tenant, episode=episode(tenant), new_entities=ents,
                          new_relations=rels, new_facts=notes))  # fmt: skip


def _random_store(store: EmbeddedGraphStore, seed: int) -> None:
    """Tenants of random texts, then updates, deletes, a rename and a tenant deleted."""
    rng = random.Random(seed)
    for tenant in USERS:
        _fill(store, rng, tenant, rng.randint(1, 12))
    for tenant in USERS[:4]:
        facts = [f for f in store.facts(tenant) if f.tenant == tenant]
        changes = [FactChange(fact_id=f.id, text=_text(rng)) for f in facts[:2]]
        changes += [FactChange(fact_id=f.id, text=None) for f in facts[2:4]]
        store.apply(WritePlan(tenant=tenant, fact_changes=changes))
    alice, lake = entity(USERS[0], "Alice"), entity(USERS[0], "Lake")
    swims = relation(USERS[0], alice, "swims_in", lake)
    store.apply(WritePlan(tenant=USERS[0], new_entities=[alice, lake], new_relations=[swims]))
    rename = AliasUpdate(entity_id=alice.id, aliases=["Hill Hill"], keys=["hill hill"],
                         name="Alice Lake Hill")  # fmt: skip
    store.apply(WritePlan(tenant=USERS[0], alias_updates=[rename]))  # entity and edge texts
    store.delete_tenant(USERS[5])


def _reference(store: EmbeddedGraphStore, table: str, keys: list[str], words: list[str]) -> Any:
    """FTS5's own bm25() ranking of the same match (the read before the counts)."""
    expression = lexical.match_expression(keys, words)
    if expression is None:  # no key (a deleted tenant) or no word: nothing matches
        return []
    rows = store._connection().execute(
        lexical._SEARCH[table], (expression, json.dumps(keys), 10_000, 0)
    )
    return [(r[0], float(r[1])) for r in rows]


def _assert_same(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> None:
    assert [i for i, _ in got] == [i for i, _ in want]
    for (_, x), (_, y) in zip(got, want, strict=True):
        assert x == pytest.approx(y, rel=1e-12, abs=1e-300)


def _counts(conn: sqlite3.Connection) -> dict[str, list[Any]]:
    out = {"totals": conn.execute("SELECT * FROM bm25_totals ORDER BY fts").fetchall()}
    for table in TABLES:
        for part in ("df", "tf", "len"):
            name = f"{table}_bm25_{part}"
            out[name] = conn.execute(f"SELECT * FROM {name} ORDER BY 1, 2").fetchall()
    return {k: [tuple(r) for r in v] for k, v in out.items()}


@pytest.mark.parametrize("seed", [1, 2])
def test_counted_scores_are_fts5_bm25s(embedded_store: EmbeddedGraphStore, seed: int) -> None:
    store = embedded_store
    _random_store(store, seed)
    crowd = Tenant(user_id="crowd")  # one user over more keys than a MATCH names
    for run in range(lexical.MAX_SCOPE_TOKENS + 2):
        scoped = Tenant(user_id="crowd", run_id=f"r{run}")
        store.apply(WritePlan(tenant=scoped, episode=episode(scoped),
                              new_facts=[fact(scoped, f"lake hill {WORDS[run % 9]}")]))  # fmt: skip
    rng = random.Random(seed)
    queries = [["lake"], ["research", "researching"], ["lake", "lake"], ["nowhere", "hill"],
               ["zürich", "café", "code"], WORDS[:12]]  # fmt: skip
    queries += [rng.sample(WORDS, rng.randint(1, 5)) for _ in range(8)]
    scopes = [*USERS, Tenant(user_id="u1"), crowd]
    compared = 0
    for scope in scopes:
        keys = store._scope_keys(scope)
        for words in queries:
            for table in TABLES:
                want = _reference(store, table, keys, words)
                got = lexical.search(store._connection(), table, keys, words, 10_000)
                _assert_same(got, want)
                compared += len(want)
                # a page of k reads the same order
                _assert_same(lexical.search(store._connection(), table, keys, words, 3),
                             want[:3])  # fmt: skip
    assert compared > 500  # the comparison covered real rankings


def test_counts_are_a_rebuild_of_fts5s_index_and_follow_rollbacks(
    embedded_store: EmbeddedGraphStore,
) -> None:
    store = embedded_store
    _random_store(store, 3)
    conn = store._connection()
    kept = _counts(conn)
    assert kept["totals"] and all(kept.values())
    with store._transaction():
        for table in TABLES:
            assert bm25.in_step(conn, table)
            bm25.rebuild(conn, table)
    assert _counts(conn) == kept  # the triggers' counts are FTS5's own
    bad = WritePlan(
        tenant=USERS[0],
        new_facts=[fact(USERS[0], "lake lake lake puppy", created_at=T0, updated_at=T0)],
        fact_changes=[FactChange(fact_id="no-such-fact", text="x")],
    )
    with pytest.raises(StoreError):
        store.apply(bad)
    assert _counts(conn) == kept  # a plan that fails leaves the counts as they were


def test_a_search_never_runs_bm25_and_a_split_word_falls_back_to_it(
    embedded_store: EmbeddedGraphStore,
) -> None:
    store = embedded_store
    _random_store(store, 4)
    odd = "co-op"  # a caller's own word that FTS5 reads as a phrase of two terms
    store.apply(WritePlan(tenant=USERS[0], new_facts=[fact(USERS[0], f"the {odd} lake")]))
    conn = store._connection()
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        hits = store.lexical_facts(USERS[0], ["lake", "hill"], 5)
        assert hits and not any("rank" in s or "bm25(" in s for s in statements), statements
        statements.clear()
        split = store.lexical_facts(USERS[0], [odd], 5)
        assert any("rank MATCH" in s for s in statements)  # FTS5's bm25() ranked this one
    finally:
        conn.set_trace_callback(None)
    assert [f.text for f, _ in split] == [f"the {odd} lake"]
    keys = store._scope_keys(USERS[0])
    _assert_same(lexical.search(conn, "facts", keys, [odd, "lake"], 50),
                 _reference(store, "facts", keys, [odd, "lake"]))  # fmt: skip


def test_an_older_store_gets_its_counts_and_keeps_its_scores(tmp_path: Any) -> None:
    path = tmp_path / "store"
    with EmbeddedGraphStore(path, dims=DIMS) as store:
        _random_store(store, 5)
        before = {t: store.lexical_facts(t, ["lake", "hill", "paint"], 20) for t in USERS}
    conn = sqlite3.connect(path / "graph.db")  # back to the v7 layout: no counts
    for table, (fts, expr) in lexical._SOURCES.items():
        for suffix in ("ai", "ad", "au"):
            conn.execute(f"DROP TRIGGER {fts}_{suffix}")
        for part in ("df", "tf", "len", "tokc", "tok"):
            conn.execute(f"DROP TABLE {table}_bm25_{part}")
        conn.execute(
            f"""CREATE TRIGGER {fts}_ai AFTER INSERT ON {table} BEGIN
                INSERT INTO {fts} (rowid, text, scope, id, tenant_key) VALUES (new.rowid,
                {expr.format(row="new")}, {lexical._scope_sql("new")}, new.id, new.tenant_key);
                END"""
        )
    conn.execute("DROP TABLE bm25_totals")
    conn.commit()
    conn.close()
    with EmbeddedGraphStore(path) as store:
        for tenant in USERS:
            after = store.lexical_facts(tenant, ["lake", "hill", "paint"], 20)
            _assert_same([(f.id, s) for f, s in after], [(f.id, s) for f, s in before[tenant]])
        conn = store._connection()
        assert all(bm25.in_step(conn, t) for t in TABLES)
        kept = _counts(conn)
        extra = fact(USERS[1], "lake view", created_at=T0, updated_at=T0)  # new triggers count
        store.apply(WritePlan(tenant=USERS[1], new_facts=[extra]))
        counted = _counts(conn)
        assert counted != kept and all(bm25.in_step(conn, t) for t in TABLES)
        with store._transaction():
            bm25.rebuild(conn, "facts")
        assert _counts(conn) == counted


def _first_counting(table: str, row: str, text: str, scope: str) -> str:
    """The count statements of the first counting triggers (two reads of the helper's
    vocab, the scope tokenized; an insert then an update per term): the same counts."""
    rid, vocab, tf = f"{row}.rowid", f"{table}_bm25_tokc", f"{table}_bm25_tf"
    return f"""
        INSERT INTO {table}_bm25_tok (rowid, text, scope) VALUES ({rid}, {text}, {scope});
        INSERT INTO {tf} (rid, term, tf) SELECT {rid}, term, cnt FROM {vocab} WHERE col = 'text';
        INSERT INTO {table}_bm25_len (rid, n) VALUES ({rid},
            coalesce((SELECT sum(tf) FROM {tf} WHERE rid = {rid}), 0)
            + coalesce((SELECT sum(cnt) FROM {vocab} WHERE col = 'scope'), 0));
        INSERT INTO {table}_bm25_df (term, df) SELECT term, 0 FROM {tf} t
            WHERE t.rid = {rid} AND NOT EXISTS (SELECT 1 FROM {table}_bm25_df d
                                                WHERE d.term = t.term);
        UPDATE {table}_bm25_df SET df = df + 1
            WHERE term IN (SELECT term FROM {tf} WHERE rid = {rid});
        UPDATE bm25_totals SET n_rows = n_rows + 1,
            n_tokens = n_tokens + (SELECT n FROM {table}_bm25_len WHERE rid = {rid})
            WHERE fts = '{table}_fts';
        INSERT INTO {table}_bm25_tok ({table}_bm25_tok) VALUES ('delete-all');"""


def test_a_store_with_the_first_counting_triggers_gets_todays(tmp_path: Any) -> None:
    """Today's triggers keep the counts the first ones kept, with one read of the helper's
    vocab instead of two; a store made with the first ones gets today's when opened, and the
    counts it holds stay right."""
    path = tmp_path / "store"
    with EmbeddedGraphStore(path, dims=DIMS) as store:
        conn = store._connection()
        for table, (fts, expr) in lexical._SOURCES.items():  # (opening would replace them)
            new, scope = expr.format(row="new"), lexical._scope_sql("new")
            conn.execute(f"DROP TRIGGER {fts}_ai")
            conn.execute(f"DROP TRIGGER {fts}_au")
            conn.execute(
                f"""CREATE TRIGGER {fts}_ai AFTER INSERT ON {table} BEGIN
                    INSERT INTO {fts} (rowid, text, scope, id, tenant_key) VALUES (new.rowid,
                    {new}, {scope}, new.id, new.tenant_key);
                    {_first_counting(table, "new", new, scope)} END"""
            )
            conn.execute(
                f"""CREATE TRIGGER {fts}_au AFTER UPDATE OF {lexical._WATCHED[table]}
                    ON {table} BEGIN UPDATE {fts} SET text = {new} WHERE rowid = old.rowid;
                    {bm25.count_out(table, "old")}
                    {_first_counting(table, "new", new, scope)} END"""
            )
        assert not any(bm25.TRIGGER_MARK in sql for sql in _insert_triggers(conn))
        _random_store(store, 7)  # counted by the first triggers
        first = _counts(conn)
    with EmbeddedGraphStore(path) as store:
        conn = store._connection()
        triggers = _insert_triggers(conn)
        assert len(triggers) == 3 and all(bm25.TRIGGER_MARK in sql for sql in triggers)
        assert _counts(conn) == first and all(bm25.in_step(conn, t) for t in TABLES)
        _random_store(store, 8)  # today's triggers, over the first ones' counts
        counted = _counts(conn)
        with store._transaction():
            for table in TABLES:
                bm25.rebuild(conn, table)
        assert _counts(conn) == counted  # FTS5's own index agrees
        for scope in USERS[:4]:
            keys = store._scope_keys(scope)
            _assert_same(lexical.search(conn, "facts", keys, ["lake", "code"], 50),
                         _reference(store, "facts", keys, ["lake", "code"]))  # fmt: skip


def _insert_triggers(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE '%_ai'")
    return [sql for (sql,) in rows]


def test_renumbered_rowids_get_their_counts_again(tmp_path: Any) -> None:
    path = tmp_path / "store"
    with EmbeddedGraphStore(path, dims=DIMS) as store:
        _random_store(store, 6)
    conn = sqlite3.connect(path / "graph.db")
    conn.execute("UPDATE facts_fts SET rowid = rowid + 1000")  # as VACUUM may
    conn.commit()
    conn.close()
    with EmbeddedGraphStore(path) as store:
        conn = store._connection()
        assert bm25.in_step(conn, "facts")
        for scope in USERS[:3]:
            keys = store._scope_keys(scope)
            _assert_same(lexical.search(conn, "facts", keys, ["lake", "code"], 50),
                         _reference(store, "facts", keys, ["lake", "code"]))  # fmt: skip


def test_table_names_outside_the_pattern_never_reach_sql() -> None:
    from mem0g.stores.embedded import bm25

    for bad in ("facts; DROP TABLE facts", "Facts", "x y", "", "f" * 60, "t'--"):
        with pytest.raises(ValueError, match="not an FTS table name"):
            bm25.scored(bad, 1)
        with pytest.raises(ValueError, match="not an FTS table name"):
            bm25.schema(bad, "porter unicode61")


def test_the_scoring_read_finds_each_rows_id_text_and_tenant_in_the_content_table(
    embedded_store: EmbeddedGraphStore,
) -> None:
    """`bm25.scored` and `lexical.common_words` read a match's id, text and tenant key from
    FTS5's content table by rowid (`bm25.CONTENT`), not through the FTS5 cursor: the two
    must agree on every row of every table, after updates, deletes and a rename."""
    store = embedded_store
    _random_store(store, 3)
    conn = store._connection()
    c = bm25.CONTENT
    for table in TABLES:
        fts = f"{table}_fts"
        through_fts = conn.execute(
            f"SELECT rowid, text, id, tenant_key FROM {fts} ORDER BY rowid"
        ).fetchall()
        direct = conn.execute(
            f"SELECT id, {c['text']}, {c['id']}, {c['tenant_key']} FROM {fts}_content ORDER BY id"
        ).fetchall()
        assert len(through_fts) > 5
        assert [tuple(r) for r in direct] == [tuple(r) for r in through_fts]


RARE, COMMON = ["otter", "kayak", "violin", "quince"], ["lake", "hill", "paint", "group"]


def _skewed(store: EmbeddedGraphStore, rng: random.Random, tenant: Tenant, n: int) -> None:
    """Facts where a few words are in most rows and others in few, texts repeated (ties)."""
    texts = []
    for _ in range(n):
        words = [w for w in COMMON if rng.random() < 0.6]
        words += [w for w in RARE if rng.random() < 0.08]
        texts.append(" ".join(words + [rng.choice(WORDS)] * rng.randint(1, 3)))
    texts += texts[: n // 10]  # the same text twice: equal scores, ordered by text then id
    store.apply(WritePlan(tenant=tenant, episode=episode(tenant),
                          new_facts=[fact(tenant, t) for t in texts]))  # fmt: skip


def test_the_rarer_words_first_give_the_same_top_k(
    embedded_store: EmbeddedGraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`_bounded` (MaxScore) returns exactly the full read's top k, ties and scores included,
    and does answer from the rarer words' rows when the other words' bounds allow it."""
    store, rng = embedded_store, random.Random(11)
    _skewed(store, rng, USERS[0], 400)
    _skewed(store, rng, USERS[1], 60)
    answered = []
    bounded = lexical._bounded
    monkeypatch.setattr(
        lexical, "_bounded", lambda *a: answered.append(bounded(*a)) or answered[-1]
    )
    conn, compared = store._connection(), 0
    for scope in (USERS[0], USERS[1], Tenant(user_id="u1")):
        keys = store._scope_keys(scope)
        for _ in range(40):
            words = rng.sample(RARE, rng.randint(1, 2)) + rng.sample(COMMON, rng.randint(0, 3))
            rng.shuffle(words)
            want = lexical.search(conn, "facts", keys, words, 10_000, bounded=False)
            _assert_same(want, _reference(store, "facts", keys, words))
            for k in (1, 5, 20):
                _assert_same(lexical.search(conn, "facts", keys, words, k), want[:k])
                compared += 1
    shortcuts = [a for a in answered if a is not None]
    assert compared == 360 and len(shortcuts) > 40, (len(shortcuts), len(answered))


def test_common_words_from_the_kept_counts_equal_counting_the_scope(
    embedded_store: EmbeddedGraphStore, tmp_path: Any
) -> None:
    """The df bounds settle a word as counting the scope's rows would; a store of one tenant
    is settled without any count read."""
    store, rng = embedded_store, random.Random(5)
    _skewed(store, rng, USERS[0], 200)
    _skewed(store, rng, USERS[1], 30)
    store.apply(WritePlan(tenant=USERS[2], new_facts=[fact(USERS[2], "co-op lake lake")]))
    conn = store._connection()
    words = [*RARE, *COMMON, "nowhere", "co-op", *WORDS[:6]]
    decided = 0
    for scope in (USERS[0], USERS[1], USERS[2], Tenant(user_id="u1")):
        keys = store._scope_keys(scope)
        (rows,) = conn.execute(lexical._SCOPE_ROWS["facts"], (json.dumps(keys),)).fetchone()
        for share in (0.1, 0.5, 0.9):
            counted = [w for w in words if lexical.match_expression(keys, [w]) and
                       lexical.scope_count(conn, "facts", lexical.match_expression(keys, [w]) or "",
                                           json.dumps(keys), rows, share)]  # fmt: skip
            assert lexical.common_words(conn, "facts", keys, words, share) == counted
            assert store.common_fact_words(scope, words, share) == counted
            bounds = bm25.scope_bounds(conn, "facts", lexical._TOKENIZE["facts"], words, rows)
            decided += sum(lo > rows * share or hi <= rows * share for lo, hi in bounds.values())
    assert decided > 40  # many words were settled by the counts alone (63 of 216 here)
    alone = EmbeddedGraphStore(tmp_path / "alone", dims=DIMS)
    _skewed(alone, rng, USERS[0], 100)
    statements: list[str] = []
    alone._connection().set_trace_callback(statements.append)
    common = alone.common_fact_words(USERS[0], [*RARE, *COMMON], 0.5)
    alone._connection().set_trace_callback(None)
    assert set(common) <= set(COMMON) and common
    assert not any("LIMIT" in s and "MATCH" in s for s in statements), statements
    alone.close()
