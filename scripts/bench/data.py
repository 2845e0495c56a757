"""The synthetic world: vocabulary, the graph of people/companies/cities/hobbies/universities
of N distinct edges, and the natural queries asked of it (deterministic from a seed)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from mem0g.types import triple_text as make_triple_text

TARGET_USER = "bench-user"


UTC = timezone.utc


BASE_TIME = datetime(2015, 1, 1, tzinfo=UTC)


CITIES = """Amsterdam Athens Atlanta Auckland Austin Bangalore Bangkok Barcelona Beijing Berlin
Bogota Boston Brisbane Brussels Budapest Buenos_Aires Cairo Calgary Cape_Town Chicago Copenhagen
Dallas Delhi Denver Dubai Dublin Edinburgh Frankfurt Geneva Glasgow Hamburg Helsinki Hong_Kong
Houston Istanbul Jakarta Johannesburg Kyiv Kyoto Lagos Lima Lisbon London Los_Angeles Lyon
Madrid Manchester Manila Marseille Melbourne Mexico_City Miami Milan Montreal Moscow Mumbai
Munich Nairobi Naples New_York Osaka Oslo Ottawa Paris Perth Philadelphia Phoenix Porto Prague
Reykjavik Riga Rome Rotterdam San_Diego San_Francisco Santiago Sao_Paulo Seattle Seoul Seville
Shanghai Singapore Stockholm Sydney Taipei Tallinn Tel_Aviv Tokyo Toronto Turin Vancouver Venice
Vienna Vilnius Warsaw Washington Wellington Zagreb Zurich""".split()


CITIES = [c.replace("_", " ") for c in CITIES]


HOBBIES = """rock climbing|chess|salsa dancing|sourdough baking|birdwatching|trail running|
photography|woodworking|pottery|scuba diving|gardening|knitting|board games|cycling|surfing|
yoga|painting|playing guitar|playing piano|skiing|snowboarding|sailing|fishing|hiking|
kayaking|tennis|badminton|volleyball|basketball|football|cricket|baseball|golf|bouldering|
calligraphy|origami|astronomy|beekeeping|home brewing|cooking Thai food|wine tasting|
stand-up comedy|writing poetry|reading sci-fi|podcasting|video games|crossword puzzles|
marathon running|swimming|fencing|archery|karate|judo|boxing|ice skating|skateboarding|
coin collecting|stamp collecting|model trains|3D printing""".replace("\n", "").split("|")


UNIVERSITIES = [f"University of {c}" for c in CITIES[::3]] + [
    "MIT",
    "Stanford University",
    "ETH Zurich",
    "Imperial College London",
    "Sorbonne University",
    "Tsinghua University",
    "Harvard University",
    "Caltech",
    "Oxford University",
    "TU Delft",
]


COMPANY_HEADS = """Northwind Acme Globex Initech Umbrella Stark Wayne Tyrell Cyberdyne Soylent
Hooli Vandelay Wonka Oscorp Aperture Black_Mesa Blue_Sun Gringotts Monarch Pied_Piper Massive
Dynamic Sterling Nakatomi Virtucon Weyland Zorg Bluth Dunder Kramerica Prestige Vehement
Gekko Duff Oceanic Ajax Primatech Rekall Omni Tessier Ashpool Sirius Ingen Abstergo Lacuna
Polaris Helix Quantum Cobalt Saffron Juniper Meridian Harbor""".split()


COMPANY_HEADS = [c.replace("_", " ") for c in COMPANY_HEADS]


COMPANY_TAILS = """Labs|Analytics|Robotics|Foods|Logistics|Health|Energy|Capital|Studios|Systems|
Motors|Pharma|Insurance|Media|Software|Bank|Airlines|Textiles|Games|Biotech|Consulting|
Security|Telecom|Retail|Ventures""".replace("\n", "").split("|")


FIRST_NAMES = """Maria James Aisha Wei Lucas Sofia Omar Elena Hiroshi Grace Mateo Priya Noah Fatima
Liam Chloe Arjun Ines Kwame Yuki Daniel Amara Felix Leila Sven Nadia Tomas Mei Samuel Zara Ivan
Rosa Kenji Olivia Rafael Hana David Nora Emeka Clara Pavel Lina Diego Ava Malik Ingrid Jonas
Sara""".split()


SURNAMES = """Jensen Okafor Tanaka Moreau Rossi Novak Silva Kowalski Haddad Larsen Nguyen Schmidt
Petrov Costa Fischer Mensah Ito Dubois Romero Berg Kim Horvat Oliveira Weber Ali Lindqvist Park
Varga Santos Keller Chen Nowak Garcia Bauer Sato Lambert Ferreira Hansen Ortiz Wagner Mbeki Yilmaz
Kaur Fernandez Richter Andersen Moretti Suzuki Castillo Vogel Abara Nilsen Reyes Kraus Hoffman
Dimitrov Laurent Ramos Engel Lopez Fontaine Bianchi Gallo""".split()


def person_name(i: int) -> str:
    """The i-th distinct, realistic person name: "Maria Jensen", then with a middle initial
    ("Maria K. Jensen"), then double-barrelled. Why not "Person_12": the extractor's sanity
    rules reject numbered placeholders (extract/checks.py), so an add about such a person
    would write no edge, and the add benchmark would time a graph path that writes nothing."""
    first, rest = FIRST_NAMES[i % len(FIRST_NAMES)], i // len(FIRST_NAMES)
    last, rest = SURNAMES[rest % len(SURNAMES)], rest // len(SURNAMES)
    initial, rest = rest % 26, rest // 26
    middle = "" if initial == 0 and rest == 0 else f" {chr(ord('A') + initial)}."
    if rest:
        last = f"{last}-{SURNAMES[(rest - 1) % len(SURNAMES)]}"
        if rest > len(SURNAMES):
            last = f"{last} {rest // len(SURNAMES) + 1}"  # past 2 million: still distinct
    return f"{first}{middle} {last}"


PERSON_SLOTS = [
    ("lives_in", "city"),
    ("works_at", "company"),
    ("enjoys", "hobby"),
    ("friend_of", "person"),
    ("studied_at", "university"),
    ("enjoys", "hobby"),
    ("born_in", "city"),
    ("manages", "person"),
    ("married_to", "person"),
    ("enjoys", "hobby"),
]


ENTITY_TYPES = {
    "person": "person",
    "company": "organization",
    "city": "city",
    "hobby": "activity",
    "university": "organization",
}


@dataclass
class SyntheticGraph:
    """Names, types and triples of one tenant; embedding-free so it is cheap to build."""

    people: list[str]
    companies: list[str]
    cities: list[str]
    hobbies: list[str]
    universities: list[str]
    entity_types: dict[str, str] = field(default_factory=dict)  # name -> type
    triples: list[tuple[str, str, str]] = field(default_factory=list)
    valid_from: list[datetime] = field(default_factory=list)

    def text(self, i: int) -> str:
        return make_triple_text(*self.triples[i])


def company_names(count: int) -> list[str]:
    """Realistic-looking distinct company names ("Northwind Robotics", then "... 2")."""
    names: list[str] = []
    round_ = 1
    while len(names) < count:
        for tail in COMPANY_TAILS:
            for head in COMPANY_HEADS:
                suffix = "" if round_ == 1 else f" {round_}"
                names.append(f"{head} {tail}{suffix}")
                if len(names) == count:
                    return names
        round_ += 1
    return names


def build_graph(edges: int, seed: int, person_prefix: str | None = None) -> SyntheticGraph:
    """Exactly `edges` distinct triples: companies located in cities, then people's facts.
    People are named by `person_name`, or "<person_prefix>_<i>" (other tenants' worlds).

    People get their slots round-robin, so each has ~5 edges; hubs (cities, hobbies) grow with
    N like real ones do, which is what makes entity expansion cost something."""
    rng = random.Random(seed)
    n_people = max(10, edges // 5)
    graph = SyntheticGraph(
        people=[
            person_name(i) if person_prefix is None else f"{person_prefix}_{i}"
            for i in range(n_people)
        ],
        companies=company_names(max(10, edges // 40)),
        cities=list(CITIES),
        hobbies=list(HOBBIES),
        universities=list(UNIVERSITIES),
    )
    pools = {
        "person": graph.people,
        "company": graph.companies,
        "city": graph.cities,
        "hobby": graph.hobbies,
        "university": graph.universities,
    }
    seen: set[tuple[str, str, str]] = set()

    def add(src: str, src_kind: str, rel: str, dst: str, dst_kind: str) -> None:
        key = (src, rel, dst)
        if src == dst or key in seen or len(graph.triples) >= edges:
            return
        seen.add(key)
        graph.entity_types.setdefault(src, ENTITY_TYPES[src_kind])
        graph.entity_types.setdefault(dst, ENTITY_TYPES[dst_kind])
        graph.triples.append(key)
        graph.valid_from.append(BASE_TIME + timedelta(days=rng.randrange(3650)))

    for company in graph.companies[: edges // 10]:
        add(company, "company", "located_in", rng.choice(graph.cities), "city")
    slot = 0
    while len(graph.triples) < edges:
        rel, kind = PERSON_SLOTS[slot % len(PERSON_SLOTS)]
        for person in graph.people:
            if len(graph.triples) >= edges:
                break
            add(person, "person", rel, rng.choice(pools[kind]), kind)
        slot += 1
    return graph


GENERIC_QUERIES = """who changed jobs|who moved to a new city|which people enjoy outdoor sports|
who works in software|who studied abroad|which companies are in Europe|who likes music|
who is married|who manages a team|which friends live in the same city|who enjoys water sports|
who works at a bank|who was born in Asia|people who like board games and puzzles|
who works in healthcare|which startups do people work at|who does martial arts|
who enjoys cooking|who lives near the sea|who studied engineering|who likes winter sports|
who works in the energy sector|which companies make games|who plays an instrument|
who enjoys art and crafts|who lives in North America|who lives in South America|
who works for an airline|who collects things|who likes running|who works in media|
which people have pets|who studied at a famous university|who works in biotech|
who has friends at work|who likes reading|who enjoys team sports|who lives in Australia|
who works in logistics|who is into fitness""".replace("\n", "").split("|")


GENERIC_TAILS = ["?", " recently?", " these days?", " now?", " at the moment?", " lately?"]


def make_queries(graph: SyntheticGraph, count: int, rng: random.Random) -> list[str]:
    """`count` distinct queries, ~75% naming graph entities, ~25% generic."""
    people, companies = graph.people, graph.companies
    person_t = [
        "who works with {p}?",
        "where does {p} live?",
        "what does {p} do for fun?",
        "who are {p}'s friends?",
        "where did {p} study?",
        "where does {p} work?",
        "what do we know about {p}?",
        "is {p} still working at {c}?",
        "does {p} enjoy {h}?",
        "when did {p} move to {city}?",
        "who manages {p}?",
        "is {p} married?",
        "where was {p} born?",
        "who is {p} friends with in {city}?",
    ]
    other_t = [
        "who works at {c}?",
        "where is {c} based?",
        "which people at {c} live in {city}?",
        "who lives in {city}?",
        "which companies are located in {city}?",
        "who likes {h}?",
        "people in {city} who enjoy {h}",
        "who studied at {u}?",
        "who was born in {city}?",
    ]
    generic = [g + tail for g in GENERIC_QUERIES for tail in GENERIC_TAILS]
    rng.shuffle(generic)
    out: dict[str, None] = {}
    attempts = 0
    while len(out) < count and attempts < count * 50:
        attempts += 1
        roll = rng.random()
        if roll < 0.25 and generic:
            out[generic.pop()] = None
            continue
        template = rng.choice(person_t if roll < 0.6 else other_t)
        text = template.format(
            p=rng.choice(people),
            c=rng.choice(companies),
            city=rng.choice(graph.cities),
            h=rng.choice(graph.hobbies),
            u=rng.choice(graph.universities),
        )
        out[text] = None
    if len(out) < count:
        raise RuntimeError(f"could only make {len(out)} distinct queries")
    return list(out)


def warm_queries(graph: SyntheticGraph, count: int, timed: Sequence[str], seed: int) -> list[str]:
    """`count` queries for warming the server, none of them a timed query's text."""
    if count <= 0:
        return []
    taken = set(timed)
    pool = make_queries(graph, count + len(taken), random.Random(seed))
    fresh = [q for q in pool if q not in taken]
    return (fresh * (count // max(len(fresh), 1) + 1))[:count]


# Facts of a user (scripts/bench_fact_scope.py; bench_search.py --facts): one place in 10, one
# person in 66, so a question naming both matches about a tenth of them by its words.
ACTIVITIES = ["went hiking", "painted a sunset", "baked bread", "ran a 10k race", "went camping",
              "read a novel", "played the violin", "visited a museum", "went swimming",
              "took a pottery class", "planted tomatoes", "watched a concert", "went fishing",
              "built a bookshelf"]  # fmt: skip
PEOPLE = [f"Person{i}" for i in range(60)] + ["Anna", "Ben", "Chloe", "Dmitri", "Emeka", "Fatima"]
PLACES = ["the park", "Lisbon", "the lake", "grandma's house", "Berlin", "the mountains",
          "the beach", "downtown", "Kyoto", "the library"]  # fmt: skip
MONTHS = ["January", "March", "May", "July", "September", "November"]


def sentence(rng: random.Random) -> str:
    """A dated first-person fact (`add(infer=False)`): the fact-scope worlds' sentences."""
    return (f"User {rng.choice(ACTIVITIES)} with {rng.choice(PEOPLE)} at {rng.choice(PLACES)} "
            f"in {rng.choice(MONTHS)} {rng.randint(2015, 2024)} and loved it.")  # fmt: skip


def question(rng: random.Random) -> str:
    """A question of the kind those facts answer."""
    if rng.random() < 0.5:
        return f"What did I do with {rng.choice(PEOPLE)} at {rng.choice(PLACES)}?"
    return f"When did I last {rng.choice(ACTIVITIES).split(' ', 1)[1]}?"
