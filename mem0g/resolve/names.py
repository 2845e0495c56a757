"""Cheap, deterministic name rules for entity resolution, applied before any embedding check.

Embedding similarity alone cannot tell an alias from a near miss (MiniLM puts "Bob"/"Bob Chen" at
0.58 but "Paris"/"Paris, Texas" at 0.84), so the merge decision first looks at the *structure* of
the two names: a first name against a full name, a company without its legal suffix, an acronym,
a comma-qualified place, two look-alike spellings. Only when structure says nothing does the
cosine similarity decide. The constants below were calibrated by scripts/calibrate_resolver.py
(see docs/resolver-calibration.md).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from difflib import SequenceMatcher
from enum import Enum

__all__ = [
    "ALIAS_FLOOR",
    "DEFAULT_THRESHOLD",
    "NameRelation",
    "canonical_type",
    "name_relation",
    "normalize_name",
    "pick_merge_target",
    "should_merge",
    "types_compatible",
]

DEFAULT_THRESHOLD = 0.84
"""Cosine at or above which names whose structure says nothing (UNKNOWN) are merged."""

ALIAS_FLOOR = 0.3
"""Cosine a structural ALIAS still needs. Low, since a first name sits far from its full name
("Bob"/"Bob Chen" ~0.58) and acronyms lower still, but it stops acronym collisions such as
"PR"/"Puerto Rico" (~0.26)."""

PERSON, ORGANIZATION, LOCATION, ENTITY = "person", "organization", "location", "entity"


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_TYPE_GROUPS: dict[str, frozenset[str]] = {
    PERSON: _words(
        "person human people individual user speaker friend colleague contact family_member"
        " relative man woman child customer employee character author per"
    ),
    ORGANIZATION: _words(
        "organization organisation company org employer business institution team firm"
        " corporation enterprise startup agency university school nonprofit brand club"
    ),
    LOCATION: _words(
        "location place city country town region address state province village venue area"
        " neighborhood neighbourhood continent county landmark destination loc gpe"
    ),
    ENTITY: _words("entity thing other unknown generic misc miscellaneous object none null n_a"),
}

# Leading titles mapped to a gender marker ("" when neutral): "Mr. Chen" is not "Mrs. Chen".
_TITLES = {
    "mr": "m", "sir": "m", "lord": "m", "mrs": "f", "ms": "f", "miss": "f", "dame": "f",
    "lady": "f", "mx": "", "dr": "", "doctor": "", "prof": "", "professor": "", "rev": "",
}  # fmt: skip
_CORP_SUFFIXES = _words(
    "inc incorporated ltd limited llc llp gmbh corp corporation co company plc ag sa group"
)
_PLACE_ABBREVIATIONS = {"st": "saint", "mt": "mount", "ft": "fort"}
_PLACE_WORDS = _words("city town village county state province region area metro sar")
_ACRONYM_STOPWORDS = _words("of and & for the de")

_DROPPED = re.compile(r"(?<!\d)\.|\.(?!\d)|['’‘`´]")  # abbreviation dots, apostrophes
_SEPARATORS = re.compile(r"[^\w&+#@.]|_")  # everything else but a few meaningful symbols


class NameRelation(str, Enum):
    """What the structure of two names says about whether they denote the same thing."""

    SAME = "same"  # equal once case, accents, punctuation, titles and legal suffixes are gone
    ALIAS = "alias"  # one is a recognised short form of the other ("Bob" / "Bob Chen", "IBM")
    CONFLICT = "conflict"  # look related but structure says different ("Paris" / "Paris, Texas")
    UNKNOWN = "unknown"  # structure is silent: leave it to embedding similarity


# Latin letters that carry no combining mark to strip, so NFKD cannot fold them.
_UNDECOMPOSABLE = str.maketrans({"ł": "l", "ø": "o", "đ": "d", "ħ": "h", "ı": "i", "æ": "ae",
                                 "œ": "oe", "þ": "th", "ð": "d"})  # fmt: skip


def _fold_accents(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.translate(_UNDECOMPOSABLE))
    return unicodedata.normalize(
        "NFC", "".join(c for c in decomposed if not unicodedata.combining(c))
    )


def normalize_name(name: str) -> str:
    """Lower-case, accent-free, punctuation-free form: equal forms are the same name."""
    text = _fold_accents(unicodedata.normalize("NFKC", name).casefold())
    text = _SEPARATORS.sub(" ", _DROPPED.sub("", text))
    tokens = text.split()
    if len(tokens) > 1 and tokens[0] == "the":
        tokens = tokens[1:]
    return " ".join(tokens)


def _snake(text: str) -> str:
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", text.strip())  # FamilyMember -> Family_Member
    return "_".join(re.sub(r"[^0-9a-z]+", " ", normalize_name(text)).split())


def canonical_type(type_: str | None) -> str:
    """Collapse type synonyms ("company", "employer") to one group so they compare equal."""
    snake = _snake(type_ or "")
    if not snake:
        return ENTITY
    forms = {snake, snake.removesuffix("s"), snake.removesuffix("ies") + "y"}
    for group, words in _TYPE_GROUPS.items():
        if forms & words:
            return group
    return snake


def types_compatible(a: str | None, b: str | None) -> bool:
    """A person is never merged into a company, but an untyped entity may be either."""
    ca, cb = canonical_type(a), canonical_type(b)
    return ca == cb or ENTITY in (ca, cb)


def _key_tokens(normalized: str, kind: str) -> list[str]:
    """Tokens without the parts that never distinguish two things of this kind."""
    tokens = normalized.split()
    if kind in (PERSON, ENTITY):
        while len(tokens) > 1 and tokens[0] in _TITLES:
            tokens = tokens[1:]
    if kind in (ORGANIZATION, ENTITY):
        while len(tokens) > 1 and tokens[-1] in (_CORP_SUFFIXES | {"&", "and"}):
            tokens = tokens[:-1]
    if kind == LOCATION and tokens and tokens[0] in _PLACE_ABBREVIATIONS:
        tokens = [_PLACE_ABBREVIATIONS[tokens[0]], *tokens[1:]]
    return ["and" if t == "&" else t for t in tokens]


def _look_alike(x: str, y: str) -> bool:
    """Different words spelled alike ("Alice"/"Alicia", "Contoso"/"Contora"): a near miss."""
    return x != y and min(len(x), len(y)) >= 3 and SequenceMatcher(None, x, y).ratio() >= 0.7


def _compatible_token(x: str, y: str) -> bool:
    """Equal, or one is the other's initial ("c" / "chen")."""
    return x == y or (len(x) == 1 and y.startswith(x)) or (len(y) == 1 and x.startswith(y))


def _initials_match(short: str, long_tokens: Sequence[str]) -> bool:
    if len(long_tokens) < 2:
        return False
    content = [t for t in long_tokens if t not in _ACRONYM_STOPWORDS]
    return short in ("".join(t[0] for t in long_tokens), "".join(t[0] for t in content))


def _is_acronym(raw_short: str, short: Sequence[str], *long_forms: Sequence[str]) -> bool:
    """An acronym like "IBM" / "International Business Machines"; 2 letters only in capitals."""
    if len(short) != 1 or not short[0].isalpha() or not 2 <= len(short[0]) <= 8:
        return False
    letters = re.sub(r"[^A-Za-z]", "", raw_short)
    if len(short[0]) == 2 and short[0].upper() not in letters:
        return False  # "Al" is a name, "AL" may be an acronym
    return any(_initials_match(short[0], form) for form in long_forms)


def _abbreviates(a: str, b: str) -> bool:
    """A qualifier written short: "TX" / "Texas", "UK" / "United Kingdom"."""
    short, long_ = sorted((a, b), key=len)
    if " " not in short and _initials_match(short, long_.split()):
        return True
    return (
        len(short) <= 3
        and short[:1] == long_[:1]
        and re.search(".*".join(short), long_) is not None
    )


def _qualifier_relation(a: str, b: str) -> NameRelation | None:
    """Comma-qualified places: "Paris, Texas" is not "Paris", nor "Paris, France"."""
    (head_a, _, qual_a), (head_b, _, qual_b) = a.partition(","), b.partition(",")
    if not (qual_a or qual_b) or normalize_name(head_a) != normalize_name(head_b):
        return None
    qa, qb = normalize_name(qual_a), normalize_name(qual_b)
    if qa and qb and (qa == qb or _abbreviates(qa, qb)):
        return NameRelation.UNKNOWN
    return NameRelation.CONFLICT


def _person_relation(short: list[str], long_: list[str]) -> NameRelation:
    if sorted(short) == sorted(long_):
        return NameRelation.ALIAS  # "Chen Bob" / "Bob Chen": name order differs
    if (
        len(long_) == 1
    ):  # two single names: "Alex" may shorten "Alexander", "Daniel" is no "Daniela"
        short_form = long_[0].startswith(short[0]) and len(long_[0]) - len(short[0]) >= 3
        return NameRelation.UNKNOWN if short_form else NameRelation.CONFLICT
    if len(short) == 1:
        if len(short[0]) > 1 and short[0] in long_:
            return NameRelation.ALIAS  # first name, surname or middle name alone
        return NameRelation.CONFLICT if _look_alike(short[0], long_[0]) else NameRelation.UNKNOWN
    if long_[: len(short)] == short:
        return NameRelation.ALIAS  # "Mary Ann" / "Mary Ann Smith"
    first = _compatible_token(short[0], long_[0])
    last = _compatible_token(short[-1], long_[-1])
    middle_s, middle_l = short[1:-1], long_[1:-1]
    middles = not middle_s or (
        len(middle_s) == len(middle_l) and all(map(_compatible_token, middle_s, middle_l))
    )
    if first and last and middles:
        return NameRelation.ALIAS  # "Bob C." / "Bob Chen", "B. Chen" / "Bob J. Chen"
    if first:
        return NameRelation.CONFLICT  # same first name, different surname
    if last and not _look_alike(short[0], long_[0]):
        return NameRelation.UNKNOWN  # "Bob Chen" / "Robert Chen": maybe a nickname
    return NameRelation.CONFLICT


def _place_relation(short: list[str], long_: list[str]) -> NameRelation:
    if len(long_) == 1:
        return NameRelation.CONFLICT if _look_alike(short[0], long_[0]) else NameRelation.UNKNOWN
    n = len(short)
    if long_[:n] == short:  # "New York City" / "New York", but "Mexico City" is not "Mexico"
        tail_is_generic = set(long_[n:]) <= _PLACE_WORDS
        return NameRelation.ALIAS if n >= 2 and tail_is_generic else NameRelation.CONFLICT
    if long_[-n:] == short or short[0] == long_[0] or short[-1] == long_[-1]:
        return NameRelation.CONFLICT  # "York" / "New York", "North Korea" / "South Korea"
    return NameRelation.UNKNOWN


def _generic_relation(short: list[str], long_: list[str], kind: str) -> NameRelation:
    """Organisations, untyped entities and any other type."""
    truncated = long_[0].startswith(short[0]) or short[0].startswith(long_[0])
    if _look_alike(short[0], long_[0]) and not truncated:
        return NameRelation.CONFLICT  # "Contoso" / "Contora Labs"; "Postgres" is left to cosine
    if len(long_) == 1:
        return NameRelation.UNKNOWN
    if long_[: len(short)] == short:  # "Contoso" / "Contoso Pharmaceuticals", "Bob" / "Bob Chen"
        return NameRelation.ALIAS if kind in (ORGANIZATION, ENTITY) else NameRelation.UNKNOWN
    if len(short) == len(long_):
        pairs = list(zip(short, long_, strict=True))
        if all(_compatible_token(x, y) for x, y in pairs):
            return NameRelation.ALIAS  # initials: "Bob C." / "Bob Chen"
        if all(_compatible_token(x, y) or _look_alike(x, y) for x, y in pairs):
            return NameRelation.CONFLICT  # "Alice Chen" / "Alicia Chen"
    if short[0] == long_[0]:
        return NameRelation.CONFLICT  # siblings: "Acme Robotics" / "Acme Logistics"
    if kind == ENTITY and sorted(short) == sorted(long_):
        return NameRelation.ALIAS
    return NameRelation.UNKNOWN


def _title_gender(normalized: str) -> str:
    first = normalized.split(" ", 1)[0]
    return _TITLES.get(first, "")


def name_relation(a: str, b: str, type_: str | None = None) -> NameRelation:
    """Structure-only verdict on two raw names of one type; symmetric, no embeddings."""
    kind = canonical_type(type_)
    na, nb = normalize_name(a), normalize_name(b)
    if not na or not nb:
        return NameRelation.UNKNOWN
    if na == nb or na.replace(" ", "") == nb.replace(" ", ""):
        return NameRelation.SAME
    ta, tb = _key_tokens(na, kind), _key_tokens(nb, kind)
    if kind in (PERSON, ENTITY) and {_title_gender(na), _title_gender(nb)} == {"m", "f"}:
        return NameRelation.CONFLICT  # "Mr. Chen" / "Mrs. Chen"
    if ta == tb or "".join(ta) == "".join(tb):
        return NameRelation.SAME
    if kind in (LOCATION, ENTITY) and (qualified := _qualifier_relation(a, b)) is not None:
        return qualified
    if _is_acronym(a, ta, tb, nb.split()) or _is_acronym(b, tb, ta, na.split()):
        return NameRelation.ALIAS
    short, long_ = sorted((ta, tb), key=len)
    if len(short) == len(long_):
        short, long_ = sorted((ta, tb))  # a fixed order keeps every rule symmetric
    if kind == PERSON:
        return _person_relation(short, long_)
    if kind == LOCATION:
        return _place_relation(short, long_)
    return _generic_relation(short, long_, kind)


def _shared_kind(a: str | None, b: str | None) -> str:
    """The more specific of two compatible types: a person's rules apply to person vs entity."""
    ca = canonical_type(a)
    return canonical_type(b) if ca == ENTITY else ca


def _candidate_relation(
    new_name: str, cand_name: str, cand_aliases: Sequence[str], kind: str
) -> NameRelation:
    """Relation to a node: SAME via any alias wins; otherwise the node's own name decides, and
    an alias can only turn UNKNOWN into ALIAS ("Anna" stored on "Anna Berger" must not let
    "Anna Kowalczyk" in)."""
    relations = [name_relation(new_name, n, kind) for n in (cand_name, *cand_aliases)]
    if NameRelation.SAME in relations:
        return NameRelation.SAME
    if relations[0] is NameRelation.UNKNOWN and NameRelation.ALIAS in relations[1:]:
        return NameRelation.ALIAS
    return relations[0]


def _decide(relation: NameRelation, similarity: float, threshold: float) -> bool:
    if relation is NameRelation.SAME:
        return True
    if relation is NameRelation.ALIAS:
        return similarity >= ALIAS_FLOOR
    if relation is NameRelation.CONFLICT:
        return False
    return similarity >= threshold


def should_merge(
    new_name: str,
    new_type: str | None,
    cand_name: str,
    cand_type: str | None,
    similarity: float,
    threshold: float,
    cand_aliases: Sequence[str] = (),
) -> bool:
    """The whole merge decision for one (new entity, candidate node) pair."""
    if not types_compatible(new_type, cand_type):
        return False
    kind = _shared_kind(new_type, cand_type)
    relation = _candidate_relation(new_name, cand_name, cand_aliases, kind)
    return _decide(relation, similarity, threshold)


Candidate = tuple[str, str, str | None, Sequence[str], float]
"""(candidate_id, name, type, aliases, similarity)"""


def _distinct(a: Candidate, b: Candidate, kind: str) -> bool:
    """Two stored nodes whose names say they are different things."""
    relation = _candidate_relation(a[1], b[1], b[3], kind)
    return relation in (NameRelation.CONFLICT, NameRelation.UNKNOWN)


def pick_merge_target(
    new_name: str,
    new_type: str | None,
    candidates: Sequence[Candidate],
    threshold: float,
) -> str | None:
    """The node id to merge into, or None. "Anna" with both "Anna Berger" and "Anna Kowalczyk"
    stored is ambiguous: returning None keeps a duplicate, guessing would corrupt a person."""
    scored: list[tuple[NameRelation, Candidate, str]] = []
    for cand in candidates:
        _, name, cand_type, aliases, _ = cand
        if types_compatible(new_type, cand_type):
            kind = _shared_kind(new_type, cand_type)
            scored.append((_candidate_relation(new_name, name, aliases, kind), cand, kind))

    def best(relation: NameRelation) -> list[Candidate]:
        picked = [c for r, c, _ in scored if r is relation and _decide(r, c[4], threshold)]
        return sorted(picked, key=lambda c: -c[4])

    if same := best(NameRelation.SAME):
        return same[0][0]
    aliases = [(c, kind) for r, c, kind in scored if r is NameRelation.ALIAS]
    for i, (first, kind) in enumerate(aliases):
        if any(_distinct(first, other, kind) for other, _ in aliases[i + 1 :]):
            return None  # the new name could be either of two different nodes
    for relation in (NameRelation.ALIAS, NameRelation.UNKNOWN):
        if passing := best(relation):
            return passing[0][0]
    return None
