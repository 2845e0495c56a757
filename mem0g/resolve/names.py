"""Cheap, deterministic name rules for entity resolution, applied before any embedding check.

Cosine between two names measures how related they are, not whether they denote one thing:
MiniLM puts "Bob"/"Bob Chen" at 0.58 but "Diego Yilmaz"/"Mateo Yilmaz" and "Sydney"/"Melbourne"
above 0.8. So the decision looks at the *structure* of the two names: a first name, initials,
title + surname or a nickname against a full name, a company without its legal suffix, an
acronym, a comma-qualified place, look-alike spellings.

A *proper name* (a person, pet, place or organisation, or any capitalised name; `is_proper`) is
merged with a differently written name only when structure links the two: embeddings never
merge proper names. Only *descriptive* entities ("vegetarian diet"/"vegetarianism",
"hiking"/"hikes") may merge on cosine alone, at `DEFAULT_THRESHOLD`. See
docs/resolver-calibration.md for how the rules and the threshold were measured.

(Over 500 lines: one rule set, kept together because it is read and calibrated as one: the
normalisation, how two names relate, the merge decision built on both, and the lookup keys
made by the same normalisation. Pure functions: imported by resolve/ and extract/checks.py,
importing nothing of mem0g but the default threshold from config.)
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from difflib import SequenceMatcher
from enum import Enum
from functools import cache, lru_cache
from typing import NamedTuple

import regex  # Unicode word characters (combining marks included), for names' words
from nicknames import NickNamer

from mem0g.config import DEFAULT_THRESHOLD

__all__ = [
    "ALIAS_FLOOR",
    "DEFAULT_THRESHOLD",
    "Candidate",
    "NameRelation",
    "Verdict",
    "canonical_type",
    "derived_alias",
    "is_proper",
    "is_short_form",
    "judge",
    "lookup_keys",
    "name_relation",
    "name_size",
    "nickname_linked",
    "normalize_name",
    "pick_merge_target",
    "should_merge",
    "token_keys",
    "types_compatible",
    "written_apart",
]


ALIAS_FLOOR = 0.3
"""Cosine a structural ALIAS still needs, except between persons or pets. Low, since a first
name sits far from its full name ("Bob"/"Bob Chen" ~0.58) and acronyms lower still, but it
stops acronym collisions such as "PR"/"Puerto Rico" (~0.26). A nickname sits below it
("Rick"/"Richard Johansson" 0.28, "Trish"/"Patricia Castillo" 0.26), and between two persons
the structure rules are strict enough on their own."""

PERSON, ORGANIZATION, LOCATION, PET, ENTITY = "person", "organization", "location", "pet", "entity"
NAMED_KINDS = frozenset({PERSON, ORGANIZATION, LOCATION, PET})
"""Types whose members are always proper names: only structure may merge two of them."""
_GIVEN_NAME_KINDS = frozenset({PERSON, PET})  # "Coco Fontaine": given name + family name


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_TYPE_GROUPS: dict[str, frozenset[str]] = {
    PERSON: _words(
        "person human people individual user speaker friend colleague contact family_member"
        " relative man woman child customer employee character author per"
        # roles and kin an extractor types people by ("singer", "wife")
        " musician singer actor actress athlete doctor nurse teacher student politician writer"
        " poet scientist coworker spouse husband wife son daughter mother father brother"
        " sister parent sibling kid baby neighbor neighbour roommate classmate teammate"
        " patient coach mentor boss"
    ),
    ORGANIZATION: _words(
        "organization organisation company org employer business institution team firm"
        " corporation enterprise startup agency university school nonprofit brand club"
    ),
    LOCATION: _words(
        "location place city country town region address state province village venue area"
        " neighborhood neighbourhood continent county landmark destination loc gpe"
    ),
    PET: _words(
        "pet animal dog cat puppy kitten bird parrot budgie hamster rabbit bunny horse pony"
        " fish goldfish turtle tortoise guinea_pig ferret lizard snake gecko chinchilla"
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

APOSTROPHES = "'’‘`´"
"""What people type for an apostrophe: names drop it ("O’Neil" is "oneil"), and the links and
the conversation's mentions cut a possessive "'s" written with any of them."""
# abbreviation dots, apostrophes, and the invisible characters that join or break nothing a
# reader sees (soft hyphen, zero-width space, word joiner, BOM): "Anna\u00adbelle" is Annabelle
_DROPPED = re.compile(rf"(?<!\d)\.|\.(?!\d)|[{APOSTROPHES}\u00ad\u200b\u2060\ufeff]")
# everything else but a few meaningful symbols; `regex`'s \w holds the combining marks
# (Unicode's word characters), so a vowel sign or virama stays inside its word
_SEPARATORS = regex.compile(r"[^\w&+#@.]|_")


class NameRelation(str, Enum):
    """What the structure of two names says about whether they denote the same thing."""

    SAME = "same"  # equal once case, accents, punctuation, titles and legal suffixes are gone
    ALIAS = "alias"  # one is a recognised short form of the other ("Bob" / "Bob Chen", "IBM")
    CONFLICT = "conflict"  # look related but structure says different ("Paris" / "Paris, Texas")
    # may be one, may be two, and structure cannot tell: a generational suffix on one side only
    # ("Tom Baker" / "Tom Baker Jr.": father and son, or one man written both ways), or the same
    # words in another order with no comma to say which is the surname ("James Thomas" /
    # "Thomas James"); never merged, recorded as a possible duplicate
    POSSIBLE = "possible"
    UNKNOWN = "unknown"  # structure is silent: leave it to embedding similarity


# Latin letters that carry no combining mark to strip, so NFKD cannot fold them.
_UNDECOMPOSABLE = str.maketrans({"ł": "l", "ø": "o", "đ": "d", "ħ": "h", "ı": "i", "æ": "ae",
                                 "œ": "oe", "þ": "th", "ð": "d"})  # fmt: skip


# the combining marks that are accents on a letter, folded away ("José" is "Jose"): the
# generic diacritic blocks (for Latin, Greek, Cyrillic; extended, supplement, for symbols,
# half marks), and the optional vowel points of Hebrew and Arabic. Every other mark spells
# its word and is kept: Indic, Thai and Tibetan vowel signs, viramas, nuktas, kana voicing
# marks ("कमल" Kamal is not "कोमल" Komal, nor "が" "か").
_ACCENT_BLOCKS = (
    (0x0300, 0x036F), (0x1AB0, 0x1AFF), (0x1DC0, 0x1DFF), (0x20D0, 0x20FF), (0xFE20, 0xFE2F),
    (0x0591, 0x05C7), (0x0610, 0x061A), (0x064B, 0x065F), (0x0670, 0x0670), (0x06D6, 0x06ED),
)  # fmt: skip


def _accent(c: str) -> bool:
    """Whether `c` is a combining mark that only accents its letter (`_ACCENT_BLOCKS`)."""
    code = ord(c)
    return unicodedata.category(c).startswith("M") and any(
        low <= code <= high for low, high in _ACCENT_BLOCKS
    )


def _fold_accents(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.translate(_UNDECOMPOSABLE))
    if decomposed.isascii():
        return decomposed
    return unicodedata.normalize("NFC", "".join(c for c in decomposed if not _accent(c)))


# Letters of one script that look like (casefolded) Latin ones: inside a word of the other
# script they are a typo or a paste ("Аnna" with a Cyrillic А), not another name. Cyrillic
# lower-case forms of capitals that look Latin count too ("В" is "в" once casefolded).
_CYRILLIC_LATIN = dict(zip("авекмнорстухіјѕԁһӏ", "abekmhopctyxijsdhl", strict=True))
_GREEK_LATIN = dict(zip("αβεικνορτυχ", "abeiknoptux", strict=True))
_TO_LATIN = str.maketrans({**_CYRILLIC_LATIN, **_GREEK_LATIN})
_TO_CYRILLIC = str.maketrans({lat: cyr for cyr, lat in _CYRILLIC_LATIN.items() if cyr not in "ԁһӏ"})
_WORD = regex.compile(r"\w+")


def _script(c: str) -> str:
    """ "latin", "cyrillic", "greek" or "" for a letter of another script or no letter."""
    if "a" <= c <= "z":
        return "latin"
    if "\u0400" <= c <= "\u052f":
        return "cyrillic"
    if "\u0370" <= c <= "\u03ff":
        return "greek"
    return ""


def _unmixed(word: regex.Match[str]) -> str:
    """A word mixing Latin with Cyrillic or Greek letters, read in its main script when every
    letter of the other is a look-alike ("аnna" -> "anna", "пoпов" -> "попов")."""
    text = word.group()
    counts = {"latin": 0, "cyrillic": 0, "greek": 0}
    for c in text:
        if script := _script(c):
            counts[script] += 1
    if not counts["latin"] or not (counts["cyrillic"] or counts["greek"]):
        return text
    main = "latin" if counts["latin"] >= counts["cyrillic"] + counts["greek"] else "cyrillic"
    if main == "cyrillic" and counts["greek"]:
        return text
    folded = text.translate(_TO_LATIN if main == "latin" else _TO_CYRILLIC)
    if any(_script(c) not in (main, "") for c in folded):
        return text  # a letter with no twin: a word of two scripts, as written
    return folded


@lru_cache(maxsize=65536)
def normalize_name(name: str) -> str:
    """Lower-case, accent-free, punctuation-free form: equal forms are the same name. Cached:
    resolution normalizes the same stored names once per candidate per add."""
    tokens = normal_words(name).split()
    if len(tokens) > 1 and tokens[0] == "the":
        tokens = tokens[1:]
    return " ".join(tokens)


@lru_cache(maxsize=65536)
def normal_words(text: str) -> str:
    """`normalize_name` but for its leading "the" rule: per character, so the words of a text
    normalised one by one and joined are the joined text normalised (resolve.links)."""
    text = _fold_accents(unicodedata.normalize("NFKC", text).casefold())
    text = " ".join(_SEPARATORS.sub(" ", _DROPPED.sub("", text)).split())
    return text if text.isascii() else _WORD.sub(_unmixed, text)


def _snake(text: str) -> str:
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", text.strip())  # FamilyMember -> Family_Member
    return "_".join(re.sub(r"[^0-9a-z]+", " ", normalize_name(text)).split())


@lru_cache(maxsize=4096)
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
    if kind in (PERSON, PET, ENTITY):
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
        return NameRelation.ALIAS  # "Paris, TX" / "Paris, Texas"
    return NameRelation.CONFLICT


@cache
def _nicknamer() -> NickNamer:
    return NickNamer()


@cache
def _formal(name: str) -> bool:
    """A given name with shorter nicknames of its own ("Andrew": "Andy", "Drew"), so a formal
    name, not a diminutive: two formal names ("Andrea"/"Andrew", "Amelia"/"Emily") are
    different people even where the dataset links them. Two, since a diminutive may have one
    ("Alex": "Al", "Kate": "Kay")."""
    return sum(len(n) < len(name) for n in _nicknamer().nicknames_of(name)) >= 2


@cache
def nickname_linked(x: str, y: str) -> bool:
    """One given name is a known nickname or diminutive of the other ("bob"/"robert",
    "liz"/"elizabeth"), from the curated `nicknames` dataset; lower-case, normalised tokens."""
    if x == y or not x.isalpha() or not y.isalpha():
        return False
    if abs(len(x) - len(y)) < 2 and _look_alike(x, y):
        return False  # "Jon"/"John", "Louis"/"Louise": a near miss, not a nickname
    if _formal(x) and _formal(y):
        return False
    nn = _nicknamer()
    # the nickname side is no formal name: the dataset files "John" under Ivan and Johann,
    # "William" under Wilma, which are other people's names, not their diminutives
    return (y in nn.nicknames_of(x) and not _formal(y)) or (
        x in nn.nicknames_of(y) and not _formal(x)
    )


def _given_variants(token: str) -> set[str]:
    """The given names a token may stand for: itself, its nicknames and what it shortens."""
    nn = _nicknamer()
    related = nn.nicknames_of(token) | nn.canonicals_of(token)
    return {token} | {n for n in related if nickname_linked(token, n) and " " not in n}


# Words that open a surname of several words ("van der Berg", "de la Cruz", "bin Salman"):
# such a name's tail from one of them on is the surname alone, as one word is elsewhere.
_SURNAME_PARTICLES = _words(
    "van von vom zu de der den des del della degli di da das dos do du la le ter ten bin ibn"
)


def _person_relation(short: list[str], long_: list[str]) -> NameRelation:
    """Persons and pets. Two names are one only when structure links them; a shared surname
    alone never does ("Diego Yilmaz" / "Mateo Yilmaz" are two people, whatever their cosine)."""
    if sorted(short) == sorted(long_):  # "Chen Bob" / "Bob Chen": which is the surname?
        return NameRelation.POSSIBLE  # ("Chen, Bob" says: it is read as "Bob Chen" first)
    if len(long_) == 1:  # two single names: "Bob" / "Robert", but "Daniel" is no "Daniela"
        return NameRelation.ALIAS if nickname_linked(short[0], long_[0]) else NameRelation.CONFLICT
    if len(short) == 1:
        if len(short[0]) > 1 and short[0] in long_:
            return NameRelation.ALIAS  # first name, surname or middle name alone
        if nickname_linked(short[0], long_[0]):
            return NameRelation.ALIAS  # "Bob" / "Robert Chen"
        return NameRelation.CONFLICT
    if long_[: len(short)] == short:
        return NameRelation.ALIAS  # "Mary Ann" / "Mary Ann Smith"
    if short[0] in _SURNAME_PARTICLES and long_[-len(short) :] == short:
        return NameRelation.ALIAS  # the surname alone: "van der Berg" / "Jan van der Berg"
    first = _compatible_token(short[0], long_[0]) or nickname_linked(short[0], long_[0])
    last = _compatible_token(short[-1], long_[-1])
    middle_s, middle_l = short[1:-1], long_[1:-1]
    middles = not middle_s or (
        len(middle_s) == len(middle_l) and all(map(_compatible_token, middle_s, middle_l))
    )
    if first and last and middles:
        return NameRelation.ALIAS  # "Bob C." / "Bob Chen", "B. Chen", "Bob Chen" / "Robert Chen"
    return NameRelation.CONFLICT  # another given name, another surname


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
        return NameRelation.POSSIBLE  # "Chen Bob" / "Bob Chen", as between persons
    return NameRelation.UNKNOWN


# A trailing generational suffix: "Tom Baker Jr." is Tom Baker's son, not Tom Baker.
_GENERATIONS = {
    "jr": "jr", "junior": "jr", "sr": "sr", "senior": "sr", "ii": "ii", "2nd": "ii",
    "iii": "iii", "3rd": "iii", "iv": "iv", "4th": "iv",
}  # fmt: skip


def _generation(tokens: list[str]) -> tuple[list[str], str]:
    """The name without its generational suffix, and the suffix ("" when none)."""
    if len(tokens) > 1 and tokens[-1] in _GENERATIONS:
        return tokens[:-1], _GENERATIONS[tokens[-1]]
    return tokens, ""


def written_in(key: str, text: str) -> bool:
    """Whether the normalised name `key` is written in the normalised, space-padded `text` as
    a whole name: "tom baker" is not written in "tom baker jr" (that names his son)."""
    needle = f" {key} "
    start = text.find(needle)
    while start != -1:
        if text[start + len(needle) :].split(" ", 1)[0] not in _GENERATIONS:
            return True
        start = text.find(needle, start + 1)
    return False


def _title_gender(normalized: str) -> str:
    first = normalized.split(" ", 1)[0]
    return _TITLES.get(first, "")


def _uninverted(name: str) -> str:
    """ "Yilmaz, Diego" as "Diego Yilmaz": a person's one comma puts the surname first (but
    "Tom Baker, Jr." is only a suffix after it)."""
    before, comma, after = name.partition(",")
    if not comma or "," in after or not after.strip() or not before.strip():
        return name
    if any(t in _GENERATIONS for t in normalize_name(after).split()):
        return name
    return f"{after.strip()} {before.strip()}"


def name_relation(a: str, b: str, type_: str | None = None) -> NameRelation:
    """Structure-only verdict on two raw names of one type; symmetric, no embeddings."""
    kind = canonical_type(type_)
    if kind in _GIVEN_NAME_KINDS:
        a, b = _uninverted(a), _uninverted(b)
    na, nb = normalize_name(a), normalize_name(b)
    if not na or not nb:
        return NameRelation.UNKNOWN
    if na == nb or na.replace(" ", "") == nb.replace(" ", ""):
        return NameRelation.SAME
    ta, tb = _key_tokens(na, kind), _key_tokens(nb, kind)
    if kind in (PERSON, ENTITY) and {_title_gender(na), _title_gender(nb)} == {"m", "f"}:
        return NameRelation.CONFLICT  # "Mr. Chen" / "Mrs. Chen"
    if kind in (PERSON, ENTITY):
        (ta, ga), (tb, gb) = _generation(ta), _generation(tb)
        if ga and gb and ga != gb:
            return NameRelation.CONFLICT  # "Tom Baker Jr." / "Tom Baker Sr.", "Tom Jr." / "Tom Sr."
        if ga != gb:
            rest = name_relation(" ".join(ta), " ".join(tb), type_)
            lacking = ta if gb else tb  # the name without the suffix
            one_word = rest is NameRelation.SAME and len(lacking) == 1  # "Tom" / "Tom Jr."
            if (rest is NameRelation.ALIAS or one_word) and _abbreviated(lacking):
                return NameRelation.ALIAS  # "Tom" or "R. Baker" may be the son: the context says
            if rest in (NameRelation.SAME, NameRelation.ALIAS, NameRelation.POSSIBLE):
                return NameRelation.POSSIBLE  # "Tom Baker" / "Tom Baker Jr." or "Tom Jr."
            return NameRelation.CONFLICT
    if ta == tb or "".join(ta) == "".join(tb):
        return NameRelation.SAME
    if kind in (LOCATION, ENTITY) and (qualified := _qualifier_relation(a, b)) is not None:
        return qualified
    if _is_acronym(a, ta, tb, nb.split()) or _is_acronym(b, tb, ta, na.split()):
        return NameRelation.ALIAS
    short, long_ = sorted((ta, tb), key=len)
    if len(short) == len(long_):
        short, long_ = sorted((ta, tb))  # a fixed order keeps every rule symmetric
    if kind in _GIVEN_NAME_KINDS:
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
    "Anna Kowalczyk" in). But a person's alias that is a short form of the node's own name
    ("Pat Kim" stored on Patrick Kim) proves no more than the name does: equal to it, the
    relation stays that ALIAS, so "Pat Kim" after "Patricia Kim" is left to the conversation."""
    names = (cand_name, *cand_aliases)
    relations = [name_relation(new_name, n, kind) for n in names]
    if relations[0] is NameRelation.SAME:
        return NameRelation.SAME
    if NameRelation.SAME not in relations and kind in (PERSON, ENTITY):
        gender = _title_gender(normalize_name(new_name))
        if gender and any({gender, _title_gender(normalize_name(n))} == {"m", "f"} for n in names):
            return NameRelation.CONFLICT  # "Mrs. Smith" / John Smith, also called "Mr. Smith"
    if NameRelation.SAME in relations:
        if kind in _GIVEN_NAME_KINDS and relations[0] is NameRelation.ALIAS:
            return NameRelation.ALIAS
        return NameRelation.SAME
    if relations[0] is NameRelation.UNKNOWN and NameRelation.ALIAS in relations[1:]:
        return NameRelation.ALIAS
    return relations[0]


_LETTERS = re.compile(r"[^\W\d_]+")


def is_proper(name: str, type_: str | None) -> bool:
    """A proper name denotes one particular thing, so only structure may merge it.

    Persons, pets, places and organisations always are. For any other type the extractor's own
    capitalisation decides: an inner capital ("iPhone", "NYC") or a capitalised word after the
    first ("Lake Tahoe", "World Cup") marks a name; for an untyped entity a capitalised first
    word does too ("Paris"). A typed, lower-case or sentence-case name ("hiking", "Vegetarian
    diet" as a diet) is descriptive. In doubt it is proper: a missed merge leaves a duplicate,
    a false one corrupts two things."""
    kind = canonical_type(type_)
    if kind in NAMED_KINDS:
        return True
    words = _LETTERS.findall(name)
    if any(any(c.isupper() for c in w[1:]) for w in words):
        return True
    if kind == ENTITY and words and words[0][0].isupper():
        return True
    return any(w[0].isupper() for w in words[1:])


def _untyped_description(name: str, type_: str | None) -> bool:
    """An untyped name written in lower case ("bill", "apple"): a description (`is_proper`).
    A caseless script ("王伟") says nothing either way."""
    return (
        canonical_type(type_) == ENTITY
        and any(c.islower() for c in name)
        and not is_proper(name, type_)
    )


def _fits(name: str, type_: str | None, cand_name: str, cand_type: str | None) -> bool:
    """`types_compatible`, and no untyped description against a person, pet, place or
    organisation, which are always proper names: "bill" is not Bill, "apple" not Apple."""
    if not types_compatible(type_, cand_type):
        return False
    return not (
        (_untyped_description(name, type_) and canonical_type(cand_type) in NAMED_KINDS)
        or (_untyped_description(cand_name, cand_type) and canonical_type(type_) in NAMED_KINDS)
    )


def _decide(
    relation: NameRelation, similarity: float, threshold: float, proper: bool, kind: str = ENTITY
) -> bool:
    if relation is NameRelation.SAME:
        return True
    if relation is NameRelation.ALIAS:
        return kind in _GIVEN_NAME_KINDS or similarity >= ALIAS_FLOOR
    if relation in (NameRelation.CONFLICT, NameRelation.POSSIBLE) or proper:
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
    if not _fits(new_name, new_type, cand_name, cand_type):
        return False
    kind = _shared_kind(new_type, cand_type)
    relation = _candidate_relation(new_name, cand_name, cand_aliases, kind)
    proper = is_proper(new_name, new_type) or is_proper(cand_name, cand_type)
    return _decide(relation, similarity, threshold, proper, kind)


class Candidate(NamedTuple):
    """A stored (or same-add) entity the new name might be."""

    id: str
    name: str
    type: str | None
    aliases: Sequence[str]
    similarity: float  # cosine of the two name embeddings


class Verdict(NamedTuple):
    """What the rules say about one new name: merge into `target`, or new (`target` None);
    `ambiguous` lists the nodes it could equally be (then `target` is None); `kin`, with a
    new node, the nodes it may still be (record them as its possible duplicates)."""

    target: str | None
    ambiguous: tuple[str, ...] = ()
    reason: str = ""
    kin: tuple[str, ...] = ()


def _distinct(a: Candidate, b: Candidate, kind: str) -> bool:
    """Two stored nodes whose names say they are different things."""
    relation = _candidate_relation(a.name, b.name, b.aliases, kind)
    return relation in (NameRelation.CONFLICT, NameRelation.UNKNOWN, NameRelation.POSSIBLE)


def name_size(name: str, type_: str | None) -> int:
    """Words that identify ("Dr. Zhang" has one: the title says nothing about who)."""
    kind = canonical_type(type_)
    return len(_key_tokens(normalize_name(name), kind))


def derived_alias(alias: str, name: str, type_: str | None) -> bool:
    """A person's (or pet's) alias that is a short form of their name by structure ("Pat Kim"
    of "Patrick Kim"): it could as well be another's, so it proves no more than the name."""
    kind = canonical_type(type_)
    return kind in _GIVEN_NAME_KINDS and name_relation(alias, name, kind) is NameRelation.ALIAS


def is_short_form(name: str, type_: str | None) -> bool:
    """`_is_short_form` for a raw type: a name that says someone without saying who."""
    return _is_short_form(name, canonical_type(type_))


def written_apart(a: str, b: str, type_: str | None) -> bool:
    """Two persons' (or pets') names of one message that name two beings: both written out
    in full (no short form: one word, initials, a title and a surname), with given names that
    do not even begin alike ("John Smith and his son Ian Smith", "Emily and Emma Smith", which
    the nicknames list links). A clipped given name keeps its onset and is the usual way to
    name one person twice ("Patrick Kim ... Pat Kim"); a short form beside a full name too
    ("Robert Chen ... Bob")."""
    kind = canonical_type(type_)
    if kind not in _GIVEN_NAME_KINDS or _is_short_form(a, kind) or _is_short_form(b, kind):
        return False
    x = _generation(_key_tokens(normalize_name(a), kind))[0]
    y = _generation(_key_tokens(normalize_name(b), kind))[0]
    if not x or not y or x[0] == y[0]:
        return False
    n = min(3, len(x[0]), len(y[0]))
    return x[0][:n] != y[0][:n]


def _is_short_form(name: str, kind: str) -> bool:
    """A single given name or surname (after titles; "van der Berg" too), or initials for the
    given names ("R. Horvat", "J. R. R. Tolkien", "Bob C."): it names someone without saying
    who. Equal to a node's name or alias it is still no proof: "R. Horvat" stored on Richard
    Horvat may be Rebecca Horvat next time."""
    if kind not in _GIVEN_NAME_KINDS:
        return False
    tokens = _generation(_key_tokens(normalize_name(name), kind))[0]
    return _abbreviated(tokens) or tokens[0] in _SURNAME_PARTICLES  # or "van der Berg"


def _abbreviated(tokens: Sequence[str]) -> bool:
    """One word, or initials for the given names ("r horvat", "bob c")."""
    if len(tokens) == 1:
        return True
    return all(len(t) == 1 for t in tokens[:-1]) or (len(tokens) == 2 and len(tokens[1]) == 1)


def judge(
    new_name: str,
    new_type: str | None,
    candidates: Sequence[Candidate],
    threshold: float,
    mentioned: Sequence[set[str]] = (),
) -> Verdict:
    """The node to merge into, or a new node, or "ambiguous between these".

    `mentioned` are sets of candidate ids whose full names the conversation names, nearest
    first (this add's messages and entities, then the recent messages): "Diego" with ten
    Diegos stored is the one the conversation just named; a reader would say so too. Without
    that, "Anna" with both "Anna Berger" and "Anna Kowalczyk" stored is ambiguous: a kept
    duplicate is cheaper to fix than a merged pair of people."""
    scored: list[tuple[NameRelation, Candidate, str]] = []
    possible: list[Candidate] = []
    proper_new = is_proper(new_name, new_type)
    for cand in candidates:
        if _fits(new_name, new_type, cand.name, cand.type):
            kind = _shared_kind(new_type, cand.type)
            relation = _candidate_relation(new_name, cand.name, cand.aliases, kind)
            proper = proper_new or is_proper(cand.name, cand.type)
            if _decide(relation, cand.similarity, threshold, proper, kind):
                scored.append((relation, cand, kind))
            elif relation is NameRelation.POSSIBLE:
                possible.append(cand)
    if not scored:
        return _kin(new_name, possible)
    kind = _shared_kind(new_type, scored[0][1].type)
    if not _is_short_form(new_name, kind):
        same = [c for r, c, _ in scored if r is NameRelation.SAME]
        if same:
            return Verdict(max(same, key=lambda c: c.similarity).id, reason="same name")
    pool = [c for r, c, _ in scored if r is not NameRelation.UNKNOWN]
    if not pool:  # descriptive names only: the most similar one that passed
        best = max((c for _, c, _ in scored), key=lambda c: c.similarity)
        return Verdict(best.id, reason="similar description")
    relation_of = {c.id: r for r, c, _ in scored}
    groups: list[list[Candidate]] = []  # nodes that may be one another stay in one group
    words = set(normalize_name(new_name).split())

    def rank(c: Candidate) -> tuple[bool, bool, float]:
        """Best first: a node of exactly this name, then one whose names hold the words
        as written (not through a nickname), then the most similar."""
        written = {w for n in (c.name, *c.aliases) for w in normalize_name(n).split()}
        return (relation_of[c.id] is not NameRelation.SAME, not words <= written, -c.similarity)

    for cand in sorted(pool, key=rank):
        for group in groups:
            if not any(_distinct(cand, other, kind) for other in group):
                group.append(cand)
                break
        else:
            groups.append([cand])
    if len(groups) == 1:
        target = groups[0][0]
        if not _is_short_form(new_name, kind) and _is_short_form(target.name, kind):
            # "Sam Lee" meets a node called just "Sam": if other Sams are stored, that
            # node may be any of them, so it is no evidence for this one
            rivals = [
                c
                for c in candidates
                if c.id != target.id
                and _fits(new_name, new_type, c.name, c.type)
                and name_relation(target.name, c.name, kind) is NameRelation.ALIAS
                and not any(c.id == p.id for p in pool)
            ]
            if rivals:
                return Verdict(None, reason="its short form is ambiguous")
        return Verdict(target.id, reason="short form")
    for ids in mentioned:
        named = [g for g in groups if any(c.id in ids for c in g)]
        if len(named) == 1:
            pick = next(c for c in named[0] if c.id in ids)
            return Verdict(pick.id, reason="named in the conversation")
        if named:
            break  # several of them named as near as each other: still ambiguous
    return Verdict(None, tuple(c.id for g in groups for c in g), f"could be any of {len(groups)}")


def _kin(new_name: str, possible: Sequence[Candidate]) -> Verdict:
    """A name nothing merges with is a new node. Stored nodes whose names may or may not be
    it (POSSIBLE: "Tom Baker" / "Tom Baker Jr.", "James Thomas" / "Thomas James") are its
    `kin`: two people as likely as one, so it is never merged on structure (nor held back
    from the rest of its add, which must see it), and each pair is recorded as a possible
    duplicate for a person (`mem0g entities`) to settle."""
    if not possible:
        return Verdict(None)
    names = (new_name, *(c.name for c in possible))
    suffixed = any(_generation(normalize_name(n).split())[1] for n in names)
    reason = ("differs only by a generational suffix (Jr., Sr., III)" if suffixed
              else "has the same names in another order")  # fmt: skip
    return Verdict(None, reason=reason, kin=tuple(c.id for c in possible))


def pick_merge_target(
    new_name: str,
    new_type: str | None,
    candidates: Sequence[Candidate],
    threshold: float,
) -> str | None:
    """The node id to merge into, or None (new node), when the conversation says nothing."""
    return judge(new_name, new_type, candidates, threshold).target


TOKEN_KEY = "token:"
"""Prefix of an entity's blocking keys. A normalised name never holds a colon, so a token key
never equals a name key: stores index both as opaque `Entity.keys`."""
_TOKEN_KINDS = frozenset({PERSON, PET, ORGANIZATION, ENTITY})


def _name_tokens(name: str, type_: str | None) -> list[str]:
    kind = canonical_type(type_)
    if kind not in _TOKEN_KINDS or not is_proper(name, type_):
        return []
    tokens = _key_tokens(normalize_name(name), kind)
    return [t for t in tokens if len(t) > 1 and t not in _ACRONYM_STOPWORDS]


def token_keys(name: str, type_: str | None) -> list[str]:
    """Blocking keys stored on an entity: one per word of a proper name ("token:diego",
    "token:yilmaz"), so a short form finds every node it could be, not just the top-k by
    cosine (with thirty Diegos stored the ten nearest miss most of them)."""
    return [TOKEN_KEY + t for t in dict.fromkeys(_name_tokens(name, type_))]


def lookup_keys(name: str, type_: str | None) -> list[str]:
    """The blocking keys to look up for a new name: its words and, for persons and pets,
    every given name a word may stand for ("bob" also finds the Roberts)."""
    tokens = _name_tokens(name, type_)
    if canonical_type(type_) in (*_GIVEN_NAME_KINDS, ENTITY):
        tokens = [v for t in tokens for v in sorted(_given_variants(t))]
    return [TOKEN_KEY + t for t in dict.fromkeys(tokens)]
