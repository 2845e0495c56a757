"""Calibrate the entity resolver at crowd base rates, on real all-MiniLM-L6-v2 embeddings.

A labelled pair list holds about as many "same" as "different" pairs. A real tenant does not:
among the people one user mentions, pairs of *different* people sharing a first name or a
surname outnumber pairs of one person's two spellings by hundreds to one, and a rule whose
false-merge rate looks harmless on the list merges dozens of people there. So this script
draws every confusable pair of a crowd:

* people: P persons from F first names x S surnames (every full name unique). Positives are
  each person's own variants (nickname full form, initials, name order); negatives are every
  pair of different persons that share a first name or a surname, plus each variant against
  every other person sharing a token. Cities: every pair of distinct city names.
* descriptive entities: hobbies, foods, diets and activities with their morphological variants
  ("hiking"/"hikes"); negatives are all pairs of different concepts.

It reports, for embedding alone at each threshold t and for the pairwise decision
(`names.should_merge`), true and false merges and precision/recall at these base rates, and
sweeps t for descriptive names (the only ones t still decides). A short form ("A. Chen",
"Andy Chen") is a pairwise ALIAS of every person it fits, so for people the script also runs
the resolver's flow (token lookup, then `names.judge` over all the candidates), which is what
decides in `add`. JSON goes to --out.

    .venv/bin/python scripts/calibrate_crowd.py --out bench-results/resolver_crowd.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import random
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from mem0g.config import EmbedderConfig
from mem0g.embed import make_embedder
from mem0g.resolve.names import DEFAULT_THRESHOLD, nickname_linked, should_merge

FIRST = (
    "Robert William Elizabeth Katherine Michael James Alexander Margaret Daniel Christopher "
    "Diego Mateo Anna Maria Sofia Lucas Noah Emma Olivia Liam Aisha Fatima Hiroshi Kenji "
    "Yuki Priya Arjun Chen Wei Ivan Olga Pavel Anton Felix Tomas Grace Samuel Ines Omar Leila "
    "Thomas Jennifer Patricia Andrew Andrea Richard Joseph Susan Nicholas Victoria"
).split()
SURNAMES = (
    "Chen Yilmaz Nguyen Fontaine Okafor Garcia Smith Johnson Kowalczyk Berger Rossi Silva "
    "Novak Kim Patel Singh Haddad Murphy Schmidt Dubois Ivanova Tanaka Sato Moreau Costa "
    "Jensen Larsen Nakamura Hoffmann Kaplan Cohen Ali Khan Lopez Martinez Brown Wilson Taylor "
    "Anderson Thomas Moore Jackson Martin Lee Walker Hall Young King Wright Scott"
).split()
CITIES = (
    "Sydney Melbourne Vienna Venice Austin Houston Boston Baltimore Stockholm Oslo Lisbon "
    "Madrid Barcelona Seville Munich Berlin Hamburg Zurich Geneva Lyon Paris Marseille Rome "
    "Milan Naples Prague Warsaw Krakow Dublin Cork Toronto Vancouver Montreal Seattle Portland "
    "Denver Chicago Detroit Atlanta Miami Tokyo Osaka Kyoto Seoul Busan Mumbai Delhi Bangalore"
).split()
# one concept per line: its spellings as an extractor might give them
DESCRIPTIVE = """hiking|hikes|hike
running|runs|jogging
chess|playing chess
pottery|ceramics
rock climbing|bouldering
swimming|swim
yoga|yoga classes
painting|oil painting
drawing|sketching
cooking|home cooking
baking|bread baking
gardening|garden work
photography|taking photos
knitting|knitting projects
cycling|bike rides|biking
tennis|playing tennis
soccer|football
basketball
baseball
golf
surfing
skiing|ski trips
birdwatching|bird watching
reading|reading books
writing poetry|poetry
playing guitar|guitar
piano|playing piano
singing|choir singing
dancing|salsa dancing
fishing|fly fishing
camping|camping trips
woodworking|carpentry
vegetarian diet|vegetarianism
vegan diet|veganism
gluten-free diet|gluten free diet
keto diet|ketogenic diet
coffee|espresso
tea|green tea
sushi
pizza
dark chocolate|chocolate
peanut allergy|allergy to peanuts
board games|tabletop games
video games|gaming
meditation|mindfulness meditation
volunteering|volunteer work
martial arts|karate
astronomy|stargazing
travel|traveling
podcasts|listening to podcasts""".splitlines()

Encoder = Callable[[Sequence[str]], np.ndarray]


def prf(tp: int, fp: int, fn: int) -> dict[str, float | int]:
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return {"tp": tp, "fp": fp, "fn": fn, "precision": round(precision, 4),
            "recall": round(recall, 4)}  # fmt: skip


def _variants(first: str, last: str, rng: random.Random) -> list[str]:
    """How a reader may meet one person again: a nickname full form, initials, name order."""
    out = [f"{first[0]}. {last}", f"{first} {last[0]}.", f"{last} {first}"]
    from nicknames import NickNamer

    nicks = sorted(
        n
        for n in NickNamer().nicknames_of(first.lower())
        if nickname_linked(n, first.lower()) and n.isalpha()
    )
    if nicks:
        out.append(f"{rng.choice(nicks).title()} {last}")
    return out


def person_pairs(people: int, rng: random.Random) -> tuple[list[tuple], list[tuple]]:
    """(a, b) positives and negatives, each with a type, at the crowd's base rate."""
    names = [(f, s) for f in FIRST for s in SURNAMES]
    rng.shuffle(names)
    chosen = names[:people]
    positives = [(v, f"{f} {s}", "person") for f, s in chosen for v in _variants(f, s, rng)]
    by_token: dict[str, list[tuple[str, str]]] = {}
    for f, s in chosen:
        by_token.setdefault(f, []).append((f, s))
        by_token.setdefault(s, []).append((f, s))
    negatives: set[tuple[str, str, str]] = set()
    for group in by_token.values():
        for (f1, s1), (f2, s2) in itertools.combinations(group, 2):
            negatives.add((f"{f1} {s1}", f"{f2} {s2}", "person"))
    # a variant meets every other person sharing a token with its owner
    for variant, full, _ in positives:
        f, s = full.split(" ", 1)
        for other in {*by_token[f], *by_token[s]}:
            if other != (f, s):
                negatives.add((variant, f"{other[0]} {other[1]}", "person"))
    return positives, sorted(negatives)


def person_flow(
    people: int, rng: random.Random, encode: Encoder, threshold: float
) -> dict[str, object]:
    """The resolver's own flow, one query at a time, against a tenant holding `people`
    persons: candidates from the token lookup (`lookup_keys` against each stored name's
    `token_keys`, nickname variants included, as the stores index them), then `judge`.

    Gold, from the generator: a variant denotes its owner when no other stored person fits
    it as a reader would read it (same surname and the initial, or a nickname, of their first
    name; same first name and the surname's initial); otherwise the right answer is "no
    merge" (the conversation has to say who). A new person's full name must never merge."""
    from nicknames import NickNamer

    from mem0g.resolve.names import Candidate, judge, lookup_keys, token_keys

    nn = NickNamer()
    names = [(f, s) for f in FIRST for s in SURNAMES]
    rng.shuffle(names)
    stored, unseen = names[:people], names[people : people + people // 3]
    full = [f"{f} {s}" for f, s in stored]
    vectors = dict(zip(full, encode(full), strict=True))
    index: dict[str, list[int]] = {}
    for i, name in enumerate(full):
        for key in token_keys(name, "person"):
            index.setdefault(key, []).append(i)

    def fits(kind: str, f: str, s: str, other: tuple[str, str]) -> bool:
        of, os_ = other
        if kind == "initial_first":
            return os_ == s and of[0] == f[0]
        if kind == "initial_last":
            return of == f and os_[0] == s[0]
        if kind == "nickname":
            nick = nicknames_used[(f, s)]
            return os_ == s and nickname_linked(nick, of.lower())
        return (of, os_) == (f, s)

    nicknames_used: dict[tuple[str, str], str] = {}
    queries: list[tuple[str, str, int | None]] = []  # (text, kind, expected stored index)
    for i, (f, s) in enumerate(stored):
        forms = {"initial_first": f"{f[0]}. {s}", "initial_last": f"{f} {s[0]}.",
                 "order": f"{s} {f}"}  # fmt: skip
        nicks = sorted(
            n for n in nn.nicknames_of(f.lower()) if n.isalpha() and nickname_linked(n, f.lower())
        )
        if nicks:
            nicknames_used[(f, s)] = rng.choice(nicks)
            forms["nickname"] = f"{nicknames_used[(f, s)].title()} {s}"
        for kind, text in forms.items():
            rivals = [j for j, other in enumerate(stored) if j != i and fits(kind, f, s, other)]
            queries.append((text, kind, None if rivals else i))
    queries += [(f"{f} {s}", "new_person", None) for f, s in unseen]
    qvectors = dict(
        zip([q for q, _, _ in queries], encode([q for q, _, _ in queries]), strict=True)
    )
    counts: dict[str, dict[str, int]] = {}
    for text, kind, expected in queries:
        found = {j for key in lookup_keys(text, "person") for j in index.get(key, [])}
        cands = [
            Candidate(
                str(j), full[j], "person", [], float(np.dot(qvectors[text], vectors[full[j]]))
            )
            for j in sorted(found)
        ]
        verdict = judge(text, "person", cands, threshold)
        got = int(verdict.target) if verdict.target is not None else None
        c = counts.setdefault(kind, {"tp": 0, "fp": 0, "fn": 0, "refused_right": 0, "n": 0})
        c["n"] += 1
        if got is not None and got == expected:
            c["tp"] += 1
        elif got is not None:
            c["fp"] += 1  # merged into the wrong person (or a new person into someone)
        elif expected is not None:
            c["fn"] += 1
        else:
            c["refused_right"] += 1
    total = {
        k: sum(c[k] for c in counts.values()) for k in ("tp", "fp", "fn", "refused_right", "n")
    }
    return {
        "by_kind": counts,
        "total": {**total, **prf(total["tp"], total["fp"], total["fn"])},
    }


def descriptive_pairs() -> tuple[list[tuple], list[tuple]]:
    concepts = [line.split("|") for line in DESCRIPTIVE]
    positives = [(a, b, "hobby") for forms in concepts for a, b in itertools.combinations(forms, 2)]
    negatives = [
        (a, b, "hobby") for c1, c2 in itertools.combinations(concepts, 2) for a in c1 for b in c2
    ]
    return positives, negatives


def city_pairs() -> list[tuple]:
    return [(a, b, "city") for a, b in itertools.combinations(CITIES, 2)]


def cosines(encode: Encoder, pairs: Sequence[tuple]) -> np.ndarray:
    texts = sorted({t for a, b, _ in pairs for t in (a, b)})
    vectors = dict(zip(texts, encode(texts), strict=True))
    return np.array([float(np.dot(vectors[a], vectors[b])) for a, b, _ in pairs])


def judge(
    pos: Sequence[tuple],
    neg: Sequence[tuple],
    sp: np.ndarray,
    sn: np.ndarray,
    t: float,
    proper: bool = False,
) -> dict[str, dict]:
    """Counts for embedding alone and the pairwise rule at `t`; for proper names the rule
    does not depend on t (it never merges them on cosine), so it is counted once."""

    def count(pairs: Iterable[tuple], sims: np.ndarray, rule: str) -> int:
        if rule == "embedding":
            return int((sims >= t).sum())
        return sum(
            should_merge(a, ty, b, ty, float(s), t)
            for (a, b, ty), s in zip(pairs, sims, strict=True)
        )

    out = {}
    for rule in ("embedding", "resolver"):
        key = (rule, id(pos), id(neg), t if rule == "embedding" or not proper else None)
        if key not in _memo:
            _memo[key] = (count(pos, sp, rule), count(neg, sn, rule))
        tp, fp = _memo[key]
        out[rule] = prf(tp, fp, len(pos) - tp)
    return out


_memo: dict[tuple, tuple[int, int]] = {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--people", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path("bench-results/resolver_crowd.json"))
    args = parser.parse_args()
    rng = random.Random(args.seed)
    started = time.perf_counter()
    load = os.getloadavg()
    embedder = make_embedder(EmbedderConfig())
    encode: Encoder = embedder.embed

    ppos, pneg = person_pairs(args.people, rng)
    dpos, dneg = descriptive_pairs()
    cneg = city_pairs()
    sims = {
        "people": (cosines(encode, ppos), cosines(encode, pneg)),
        "descriptive": (cosines(encode, dpos), cosines(encode, dneg)),
        "cities": (np.array([]), cosines(encode, cneg)),
    }
    sets = {"people": (ppos, pneg), "descriptive": (dpos, dneg), "cities": ([], cneg)}
    thresholds = [round(0.70 + 0.02 * i, 2) for i in range(14)]
    results: dict[str, object] = {
        "people": args.people,
        "pairs": {k: {"positives": len(p), "negatives": len(n)} for k, (p, n) in sets.items()},
        "cosine_ranges": {
            k: {
                "positives": [round(float(p.min()), 3), round(float(p.max()), 3)] if len(p) else [],
                "negatives_p99": round(float(np.percentile(n, 99)), 3),
                "negatives_max": round(float(n.max()), 3),
            }
            for k, (p, n) in sims.items()
        },
        "sweep": {},
    }
    print(f"pairs: {json.dumps(results['pairs'])}")
    print(f"{'set':12} {'t':>5} | {'embedding P':>11} {'R':>6} {'FP':>6} | {'resolver P':>10} "
          f"{'R':>6} {'FP':>5}")  # fmt: skip
    for name, (pos, neg) in sets.items():
        sp, sn = sims[name]
        rows = []
        for t in thresholds:
            row = judge(pos, neg, sp, sn, t, proper=name != "descriptive")
            rows.append({"t": t, **row})
            e, r = row["embedding"], row["resolver"]
            print(f"{name:12} {t:5.2f} | {e['precision']:11.4f} {e['recall']:6.3f} {e['fp']:6d} | "
                  f"{r['precision']:10.4f} {r['recall']:6.3f} {r['fp']:5d}")  # fmt: skip
        results["sweep"][name] = rows  # type: ignore[index]
    flow = person_flow(args.people, random.Random(args.seed), encode, DEFAULT_THRESHOLD)
    results["people_flow"] = flow
    print("people, the resolver's flow (token lookup + judge), by query kind:")
    for kind, c in flow["by_kind"].items():  # type: ignore[union-attr]
        print(f"  {kind:14} n={c['n']:5d} merged right {c['tp']:5d}  wrong {c['fp']:3d}  "
              f"missed {c['fn']:4d}  rightly kept apart {c['refused_right']:5d}")  # fmt: skip
    print(f"  total: {json.dumps(flow['total'])}")
    results["default_threshold"] = DEFAULT_THRESHOLD
    results["at_default"] = {
        name: judge(pos, neg, *sims[name], DEFAULT_THRESHOLD, proper=name != "descriptive")
        for name, (pos, neg) in sets.items()
    }
    results["machine"] = {"platform": platform.platform(), "load_before": load,
                          "load_after": os.getloadavg(), "cpus": os.cpu_count()}  # fmt: skip
    results["seconds"] = round(time.perf_counter() - started, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"at t={DEFAULT_THRESHOLD}: {json.dumps(results['at_default'])}")
    print(f"wrote {args.out} in {results['seconds']} s")


if __name__ == "__main__":
    main()
