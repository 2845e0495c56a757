"""Sanity rules for what the extractor returns: obviously broken extractions never reach the
graph (a weak model must leave a sparse graph, not a wrong one).

Pure functions, no LLM, no store. Rejected:

1. an entity whose name is a placeholder or pronoun ("I", "me", "user", "my_name", "speaker",
   "unknown", "<name>", "user_2", ...), or a lower-case possessive slot such as "my_address"
   or "your job" (a title-cased "My Chemical Romance" passes), unless it is the name of a
   speaker of the messages (someone may really be called "User"); every triple using such a
   name goes with it;
2. a relation whose name is made only of pronouns, articles, conjunctions, filler or
   placeholder words ("i", "it", "the", "and", "none", "relation", "user", ...);
3. a self-named relation: the relation's name is the name of one of its own endpoints
   (`john -john-> alice`), or the first name of a person endpoint (`John Smith -john-> ...`).

4. a name that normalises to nothing (only punctuation, symbols or blanks), entity or
   triple end;
5. a triple naming an entity call 1 did not return: an end matches an extracted entity by
   its exact or normalised name (and then takes that entity's spelling), else the triple is
   rejected, so no untyped node appears behind the extractor's back.

Each rejection is reported in `AddResult.rejected` (what, and which rule).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

from mem0g.resolve.names import normalize_name
from mem0g.types import Rejection, snake_case

PRONOUNS = frozenset(
    "i me my mine myself you your yours yourself yourselves we us our ours ourselves he him "
    "his himself she her hers herself they them their theirs themselves it its itself one "
    "someone somebody anyone anybody everyone everybody".split()
)
PLACEHOLDERS = frozenset(
    "user the_user users assistant the_assistant speaker the_speaker person the_person name "
    "my_name your_name user_name username speaker_name person_name unknown none null nil "
    "n_a na entity something thing x y z".split()
)
_NUMBERED = re.compile(r"^(user|speaker|person|assistant|entity|name)_?\d+$")
_POSSESSIVE = re.compile(r"^(my|your|his|her|their|our)[_ ]\S")
FILLER_WORDS = frozenset(
    "the a an and or but if then so this that these those there here as relation "
    "relationship related relates none null unknown na n_a x".split()
)

RULE_ENTITY = "placeholder entity name"
RULE_RELATION = "pronoun or stopword relation name"
RULE_SELF = "self-named relation"
RULE_EMPTY = "name normalises to nothing"
RULE_UNKNOWN = "entity not returned by the extractor"
RULE_ONE_ENTITY = "both ends resolved to one entity"


_BRACKETS = re.compile(r"[<>\[\]{}\"'`]")


def _key(name: str) -> str:
    """A name as a relation name would be stored (snake_case): rule 3's comparison."""
    return snake_case(_BRACKETS.sub(" ", name))


def _word_key(name: str) -> str:
    """A name's words in any script, casefolded and joined by "_" ("My Name" -> "my_name",
    "<name>" -> "name", "北京" -> "北京"): rule 1's comparison. It casefolds ("Straße" ->
    "strasse"), where `_key` only lower-cases, as relation names are stored."""
    name = unicodedata.normalize("NFKC", name)  # full-width "ｕｓｅｒ" is "user"
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", _BRACKETS.sub(" ", name).strip())
    return re.sub(r"[\W_]+", "_", spaced.casefold()).strip("_")


def is_placeholder(name: str, speakers: Iterable[str] = ()) -> bool:
    """A name that stands for nobody in particular (rule 1); speakers' names never are."""
    if name.strip().casefold() in {s.strip().casefold() for s in speakers if s}:
        return False
    key = _word_key(name)
    if not key or key in PRONOUNS or key in PLACEHOLDERS or _NUMBERED.match(key):
        return True
    raw = name.strip()
    return bool(_POSSESSIVE.match(raw)) and ("_" in raw or raw == raw.lower())


def is_filler_relation(relation: str) -> bool:
    """Rule 2: a relation name with no content word."""
    words = snake_case(relation).split("_")
    return all(w in PRONOUNS or w in FILLER_WORDS or w in PLACEHOLDERS or not w for w in words)


def is_self_named(relation: str, source: str, destination: str, types: dict[str, str]) -> bool:
    """Rule 3: the relation is named after one of its own ends."""
    rel = snake_case(relation)
    for end in (source, destination):
        key = _key(end)
        if rel and rel == key:  # (a name of only symbols has no key at all)
            return True
        words = key.split("_")
        if len(words) > 1 and types.get(end, "") == "person" and rel == words[0]:
            return True
    return False


def screen_entities(
    types: dict[str, str], speakers: Sequence[str]
) -> tuple[dict[str, str], list[Rejection]]:
    """Call 1's answer without placeholder names (rule 1)."""
    kept: dict[str, str] = {}
    rejected: list[Rejection] = []
    for name, type_ in types.items():
        if not normalize_name(name):
            rejected.append(Rejection(kind="entity", text=name, rule=RULE_EMPTY))
        elif is_placeholder(name, speakers):
            rejected.append(Rejection(kind="entity", text=name, rule=RULE_ENTITY))
        else:
            kept[name] = type_
    return kept, rejected


def screen_triples(
    triples: Sequence[Any], speakers: Sequence[str], types: dict[str, str] | None = None
) -> tuple[list[Any], list[Rejection]]:
    """Call 2's triples (anything with source, relation, destination) without the broken
    ones (rules 1-3), in order."""
    types = types or {}
    kept: list[Any] = []
    rejected: list[Rejection] = []
    for t in triples:
        text = f"{t.source} -{t.relation}-> {t.destination}"
        if not (normalize_name(t.source) and normalize_name(t.destination)):
            rule = RULE_EMPTY
        elif is_placeholder(t.source, speakers) or is_placeholder(t.destination, speakers):
            rule = RULE_ENTITY
        elif is_filler_relation(t.relation):
            rule = RULE_RELATION
        elif is_self_named(t.relation, t.source, t.destination, types):
            rule = RULE_SELF
        else:
            kept.append(t)
            continue
        rejected.append(Rejection(kind="relation", text=text, rule=rule))
    return kept, rejected


def known_endpoints(
    triples: Sequence[Any], types: dict[str, str]
) -> tuple[list[Any], list[Rejection]]:
    """Rule 5: triples whose both ends are entities of call 1 (`types`: the kept names),
    their ends spelt and typed as call 1 gave them; the others rejected."""
    by_form = {normalize_name(name): name for name in reversed(list(types))}
    kept: list[Any] = []
    rejected: list[Rejection] = []
    for t in triples:
        ends = [
            end if end in types else by_form.get(normalize_name(end))
            for end in (t.source, t.destination)
        ]
        source, destination = ends
        if source is None or destination is None:
            text = f"{t.source} -{t.relation}-> {t.destination}"
            rejected.append(Rejection(kind="relation", text=text, rule=RULE_UNKNOWN))
            continue
        if source == destination:
            continue  # a self-loop once spelt alike (dropped like any self-loop)
        kept.append(
            t.model_copy(
                update={
                    "source": source,
                    "source_type": types[source],
                    "destination": destination,
                    "destination_type": types[destination],
                }
            )
        )
    return kept, rejected
