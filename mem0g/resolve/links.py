"""Fact <-> entity links: which entities of its tenant a fact names, by the name matching
search uses to link a query (`name_ngrams`: a word n-gram of the text equals one of the
entity's normalised name/alias keys). No LLM. Links are a function of the texts and the keys,
so every write keeps them true in the same transaction (`plan_links` fills a plan's part):

* a fact the plan creates or re-words gets every entity it names, stored or new in the plan;
* an entity the plan creates, or a key it gains (alias, rename), links the tenant's earlier
  facts that name that key: at most `EARLIER_LIMIT` of them per add (the best BM25 matches of
  the key's words, verified by the n-gram rule), so one add's cost stays bounded;
* a deleted fact's links go with it (the stores), a merge moves `other`'s links onto `keep`
  and a split recomputes the links of `keep`'s facts between the two (`split_links`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

import regex

from mem0g.resolve.names import APOSTROPHES as _APOSTROPHES
from mem0g.resolve.names import normal_words
from mem0g.stores.base import GraphStore
from mem0g.stores.lexical_query import terms
from mem0g.types import Entity, Fact, FactLink, WritePlan

EARLIER_LIMIT = 1000  # earlier facts one add may link to the names it introduces
_LOOKUP_CHUNK = 5000  # n-grams per entity lookup

_STOP = frozenset(
    """a an and are as at be by did do does for from had has have he her him his how i in is it
    its me my of on or our she so that the their them they this to was we were what when where
    which who whom whose why will with you your before after now still ever""".split()
)
# `regex`'s \w: a word keeps its combining marks (Devanagari vowel signs), as names.py does;
# every apostrophe the names' normalisation drops stays inside its word ("O’Neil" is "oneil")
_TOKEN = regex.compile(rf"[\w{_APOSTROPHES}&.-]+")
_POSSESSIVE = re.compile(rf"[{_APOSTROPHES}]s$", re.IGNORECASE)  # "Caroline's" names Caroline


def name_ngrams(text: str, max_n: int = 4) -> list[str]:
    """Normalised word n-grams of a text that could be entity names (no pure stopwords),
    longest first. A possessive "'s" is not part of the name it follows. Each word is
    normalised once and an n-gram's key joined from them (the same as normalising the joined
    words: the normalisation works per character, then drops a leading "the"), since a long
    message has hundreds of n-grams."""
    return list(dict.fromkeys(key for key, _, _ in name_spans(text, max_n)))


def name_spans(text: str, max_n: int = 4) -> list[tuple[str, int, int]]:
    """`name_ngrams` with where each stands: (key, first word, end word), longest first."""
    tokens = [
        _POSSESSIVE.sub("", t.strip(".-")).strip(f".-{_APOSTROPHES}") for t in _TOKEN.findall(text)
    ]
    tokens = [t for t in tokens if t]
    normal = [normal_words(t) for t in tokens]
    stop = [t.casefold() in _STOP for t in tokens]
    spans: list[tuple[str, int, int]] = []
    for n in range(min(max_n, len(tokens)), 0, -1):
        for start in range(len(tokens) - n + 1):
            if all(stop[start : start + n]):
                continue
            words = " ".join(w for w in normal[start : start + n] if w).split()
            if len(words) > 1 and words[0] == "the":
                words = words[1:]
            if key := " ".join(words):
                spans.append((key, start, start + n))
    return spans


def _owners(entities: Iterable[tuple[str, Sequence[str]]]) -> dict[str, set[str]]:
    """key -> ids of the entities having it, from (entity id, keys) pairs."""
    owners: dict[str, set[str]] = {}
    for entity_id, keys in entities:
        for key in keys:
            owners.setdefault(key, set()).add(entity_id)
    return owners


def named(text: str, owners: Mapping[str, set[str]]) -> set[str]:
    """Ids of the entities (by `owners`: key -> ids) the text names."""
    found: set[str] = set()
    for gram in name_ngrams(text):
        found |= owners.get(gram, set())
    return found


def named_in_full(text: str, owners: Mapping[str, set[str]], max_n: int = 4) -> set[str]:
    """`named` as a reader links a query: a name inside a longer one the text names is no
    name of its own ("tom baker" inside "Tom Baker Jr.", an alias "smith" inside "Jane
    Smith"); the longest names first, each word range inside a named one skipped."""
    found: set[str] = set()
    taken: list[tuple[int, int]] = []
    for key, start, end in name_spans(text, max_n):
        ids = owners.get(key)
        if not ids or any(s <= start and end <= e for s, e in taken):
            continue
        found |= ids
        taken.append((start, end))
    return found


def plan_links(
    store: GraphStore, plan: WritePlan, limit: int = EARLIER_LIMIT, *, stored: bool = True
) -> WritePlan:
    """Fill `plan.fact_links` (reads only: entities by key, earlier facts by BM25).
    `stored=False`: the store holds nothing of the plan's tenant (an import of a tenant it
    lacks), so the links are among the plan's own records and nothing is read."""
    tenant = plan.tenant
    texts: dict[str, str | None] = {f.id: f.text for f in plan.new_facts}
    for change in plan.fact_changes:
        texts[change.fact_id] = change.text
    live = {i: t for i, t in texts.items() if t is not None}
    grams = sorted({g for t in live.values() for g in name_ngrams(t)})
    found = [  # in chunks: an import's plan may hold a whole tenant's facts
        e
        for start in range(0, len(grams) if stored else 0, _LOOKUP_CHUNK)
        for e in store.find_entities(tenant, grams[start : start + _LOOKUP_CHUNK], exact=True)
    ]
    owners = _owners((e.id, e.keys) for e in found if e.tenant == tenant)
    added = _owners(
        [(e.id, e.keys) for e in plan.new_entities]
        + [(a.entity_id, a.keys) for a in plan.alias_updates]
    )
    for key, ids in added.items():
        owners.setdefault(key, set()).update(ids)
    links = {(fact_id, e) for fact_id, text in live.items() for e in named(text, owners)}
    new_keys = {k: ids for k, ids in added.items() if not k.startswith("token:")}
    if new_keys and stored:
        for fact in _earlier(store, plan, new_keys, limit, set(texts)):
            links |= {(fact.id, e) for e in named(fact.text, new_keys)}
    plan.fact_links = [FactLink(fact_id=f, entity_id=e) for f, e in sorted(links)]
    return plan


def _earlier(
    store: GraphStore, plan: WritePlan, keys: Mapping[str, set[str]], limit: int, skip: set[str]
) -> list[Fact]:
    """The tenant's stored facts that may name one of `keys` (not those the plan rewrites)."""
    tenant = plan.tenant
    words = sorted({t for key in keys for t in terms(key)})
    if not words:
        return []
    if store.capabilities.lexical:
        found = [f for f, _ in store.lexical_facts(tenant, words, limit, exact=True)]
    else:
        found = store.facts(tenant)[-limit:]
    return [f for f in found if f.tenant == tenant and f.id not in skip]


def split_links(texts: Mapping[str, str], keep: Entity, other: Entity) -> list[tuple[str, str]]:
    """After a split: which of these facts (id -> text; those linked to `keep`) name `keep`
    and which name `other`, by their keys as the split leaves them."""
    owners = _owners([(keep.id, keep.keys), (other.id, other.keys)])
    return sorted((fact_id, e) for fact_id, text in texts.items() for e in named(text, owners))


def all_links(facts: Iterable[Fact], entities: Iterable[Entity]) -> list[tuple[str, str]]:
    """(fact id, entity id) of every fact naming an entity of its own exact tenant: the links
    recomputed from scratch (a store written before links existed)."""
    owners: dict[str, dict[str, set[str]]] = {}
    for entity in entities:
        for key in entity.keys:
            owners.setdefault(entity.tenant.key, {}).setdefault(key, set()).add(entity.id)
    return sorted((f.id, e) for f in facts for e in named(f.text, owners.get(f.tenant.key, {})))
