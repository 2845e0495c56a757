"""Lexical (BM25) queries for the stores' own full-text engines, built from user text safely.

Both engines tokenise stored text the same way: runs of letters, lower-cased (Lucene's `simple`
analyzer on Neo4j; FTS5's `unicode61` tokenizer with digits as separators and diacritics kept
on SQLite). Digits are not terms: Lucene's `simple` analyzer drops them, and dates in a query
are handled by the time window (`retrieve.timewin`), not by matching "2023" as a word. Query
text goes through the same rule in Python first, so what reaches an engine is a list of
letter-only terms, each quoted and escaped for that engine's query syntax: no operator,
wildcard, field name or parenthesis a user types can reach the parser (tests feed it hostile
queries). English function words are dropped from queries only (they match everything).

Neo4j's full-text indexes rank over every tenant, so each indexed row also carries its scope
terms (`scope_terms`, the `lex_scope` property) and a Lucene query requires the scope's terms
with a zero boost (`lucene_scoped`): Lucene then returns only the scope's rows, scored as
before. A scope term is a digest of one id, spelled in 16 consonants (no s, no y, no vowel):
letters only, so both analyzers keep it whole, and the Porter stemmer of the `english`
analyzer leaves it as it is (its rules need a vowel or a final s). No id text reaches Lucene.
"""

from __future__ import annotations

import hashlib
import re
import threading
from functools import cache

import Stemmer  # PyStemmer: the Snowball project's C stemmers

from mem0g.types import Tenant

# letters only: [^\W\d_] is \w without digits and underscore (Unicode-aware)
_TERM = re.compile(r"[^\W\d_]+", re.UNICODE)
# Lucene's classic query parser: these characters are syntax (`&&`, `||` via & and |)
_LUCENE_SPECIAL = re.compile(r'([+\-!(){}\[\]^"~*?:\\/&|])')
MAX_TERMS = 32  # a pasted page becomes a bounded query

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own s same she should so some such t than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom whose why will with would you your yours yourself
    yourselves ever still also d ll m re ve""".split()
)


def terms(text: str) -> list[str]:
    """The letter-run terms of a stored text, lower-cased, as both engines index them."""
    return [t.lower() if t.isascii() else _fold(t) for t in _TERM.findall(text)]


WORDS_FIELD = "lex_text"  # Neo4j: a fact's text as its letter-run terms (`indexed_words`)


def indexed_words(text: str) -> str:
    """A fact's text as Neo4j's fact index reads it: its letter-run terms, space-separated.
    Why: that index stems (the `english` analyzer, as FTS5's `porter` on the embedded store),
    but its tokenizer keeps "covid19", "don't", "node.js", "foo_bar" and words with combining
    marks whole, which the letter-run query terms never match; indexing these words instead
    of the text splits them as FTS5 and the queries do."""
    return " ".join(terms(text))


def _fold(word: str) -> str:
    """`word` lower-cased one letter at a time, as the engines fold (Lucene's LowerCaseFilter
    and FTS5's unicode61 map each code point alone). Not `str.lower()`: it is contextual
    ("ΟΔΟΣ" ends in "ς", which Lucene keeps apart from the "σ" it indexes) and may lengthen a
    letter ("İ" becomes "i" and a combining dot, which both tokenizers split off, so the word
    stored was never found). A letter whose lowercase is not one letter is kept: the engines
    lower-case a query's text themselves (Lucene makes "İ" "i", FTS5 keeps it)."""
    return "".join(low if len(low := c.lower()) == 1 else c for c in word)


@cache
def _porter() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("porter")


def stems(words: list[str]) -> list[str]:
    """Porter stems, as FTS5's `porter` tokenizer and Lucene's `english` analyzer index fact
    texts (for BM25 computed in Python: the old texts an `as_of` search ranks)."""
    return list(_porter().stemWords(words))


def query_terms(query: str) -> list[str]:
    """Distinct terms of a query without function words, in order, then the past forms of
    its irregular verbs (`verb_forms`); at most MAX_TERMS."""
    out: list[str] = []
    for term in terms(query):
        if term not in STOPWORDS and term not in out:
            out.append(term)
    out = out[:MAX_TERMS]
    for term in list(out):
        out.extend(f for f in verb_forms(term) if f not in out)
    return out[:MAX_TERMS]


_LEMMINFLECT = threading.Lock()
# modal verbs have no tenses to join, and "may" is a month
_MODALS = frozenset("can could may might must shall should will would ought".split())


@cache
def _function_stems() -> frozenset[str]:
    """The engines' stems of the function words: a form that stems to one ("ate" -> "at")
    would match what the query's own function words may not."""
    return frozenset(stems(sorted(STOPWORDS)))


@cache
def verb_forms(word: str) -> tuple[str, ...]:
    """The past forms of an English verb that its Porter stem does not reach: "find" ->
    "found", "go" -> "went", "gone", "buy" -> "bought". Why: a question asks in the base form
    ("what did she find?") and the fact tells in the past ("she found"): stemming joins
    "visit" and "visited", never an irregular past. From lemminflect's dictionary (no
    guessing for unknown words); only for a word that is its verb's most likely lemma ("born"
    brings no "bear", "saw" no "sawn"); no form whose stem is a function word's ("eat" does
    not bring "ate", which Porter stems to "at")."""
    from lemminflect import getAllInflections, getAllLemmas

    with _LEMMINFLECT:  # its dictionaries load on first use, into singletons
        lemmas = getAllLemmas(word, upos="VERB").get("VERB", ())  # the dictionary's; no OOV
        if not lemmas or lemmas[0] != word or word in _MODALS:
            return ()  # a base form only: "born" is no question's "bear"
        inflections = getAllInflections(word, upos="VERB")
    forms = [f for tag in ("VBD", "VBN") for f in inflections.get(tag, ())]
    seen = set(stems([word]))
    out: list[str] = []
    for form in forms:
        form = form.lower()
        if not _TERM.fullmatch(form) or form in STOPWORDS:
            continue
        stem = stems([form])[0]
        if stem not in seen and stem not in _function_stems():  # "ate" stems to "at"
            seen.add(stem)
            out.append(form)
    return tuple(out)


def fts5_query(words: list[str]) -> str | None:
    """An FTS5 MATCH expression: the terms OR'ed, each a quoted string (a `"` inside is
    doubled; letter-only terms never hold one, but a caller's own list might). None: no term,
    nothing can match (FTS5 rejects an empty expression)."""
    if not words:
        return None
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def lucene_escape(text: str) -> str:
    """Backslash-escape every character of Lucene's classic query syntax."""
    return _LUCENE_SPECIAL.sub(r"\\\1", text)


def lucene_query(words: list[str]) -> str | None:
    """A Lucene query string: the terms OR'ed, each escaped and quoted (so AND/OR/NOT typed
    by a user are words, not operators). None when there is no term."""
    if not words:
        return None
    return " OR ".join('"' + lucene_escape(w) + '"' for w in words)


SCOPE_FIELD = "lex_scope"  # the property holding a row's scope terms (Neo4j)
_SCOPE_LETTERS = "bcdfghjklmnpqrtv"  # 16 consonants: one per half byte
_SCOPE_KINDS = {"user_id": "zqw", "agent_id": "zqx", "run_id": "zqz", "tenant": "zqk"}


def _scope_term(kind: str, value: str) -> str:
    """The term of one id: 128 bits of SHA-256 over (kind, id), two consonants a byte."""
    raw = f"{kind}\x00{value}".encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(raw).digest()[:16]
    return _SCOPE_KINDS[kind] + "".join(
        _SCOPE_LETTERS[b >> 4] + _SCOPE_LETTERS[b & 15] for b in digest
    )


def _required_terms(scope: Tenant, exact: bool) -> list[str]:
    if exact:
        return [_scope_term("tenant", scope.key)]
    return [
        _scope_term(kind, value)
        for kind, value in (
            ("user_id", scope.user_id), ("agent_id", scope.agent_id), ("run_id", scope.run_id)
        )
        if value is not None
    ]  # fmt: skip


def scope_terms(tenant: Tenant) -> str:
    """A stored row's scope terms: one per id it has, and one for its exact tenant."""
    return " ".join(_required_terms(tenant, False) + _required_terms(tenant, True))


def lucene_scoped(words: list[str], scope: Tenant, exact: bool = False) -> str | None:
    """`lucene_query(words)` required, and the scope's terms required at boost 0: a hit must
    be in the scope (the filter's ids, or with `exact` its exact tenant), and its score is
    the words' alone. None when there is no term."""
    query = lucene_query(words)
    if query is None:
        return None
    required = _required_terms(scope, exact)
    clauses = " ".join(f'+{SCOPE_FIELD}:"{lucene_escape(t)}"^0' for t in required)
    return f"+({query}) {clauses}"
