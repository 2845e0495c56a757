"""Benchmark files, read and checked before any work: LoCoMo and LongMemEval, both turned
into one shape (units = tenants, each with sessions of turns and its questions).

The user supplies the files (LoCoMo's `data/locomo10.json`, LongMemEval's
`longmemeval_s_cleaned.json`); nothing here ships or copies them.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from itertools import pairwise
from pathlib import Path
from typing import Any

UTC = timezone.utc

# The official LoCoMo category numbers. Some published tables swap 1, 3 and 4: the report
# states this mapping next to every per-category figure.
LOCOMO_CATEGORIES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
LONGMEMEVAL_TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "temporal-reasoning",
    "knowledge-update",
)
NOT_MENTIONED = "Not mentioned in the conversation"


class EvalInputError(ValueError):
    """Bad input (file, option, unreachable endpoint): reported before any work starts."""


@dataclass(slots=True)  # no __dict__ each: longmemeval_m holds millions
class Turn:
    ref: str  # LoCoMo dia_id ("D1:3"); LongMemEval "<session id>:<turn index>"
    speaker: str
    role: str  # "user" | "assistant"
    text: str
    session: str
    has_answer: bool = False


@dataclass
class Session:
    id: str
    time: datetime
    turns: list[Turn]


@dataclass
class Observation:
    """LoCoMo's per-session observation facts, each tied to the dia_ids it came from."""

    session: str
    speaker: str
    text: str
    refs: list[str]


@dataclass
class Question:
    id: str
    unit: str
    text: str
    answer: str | None
    category: str  # LoCoMo: "1".."5"; LongMemEval: the question type
    evidence: list[str] = field(default_factory=list)  # LoCoMo dia_ids
    answer_sessions: list[str] = field(default_factory=list)  # LongMemEval
    date: datetime | None = None
    adversarial_answer: str | None = None
    abstention: bool = False


@dataclass
class Unit:
    """One tenant: a LoCoMo conversation, or one LongMemEval question's haystack."""

    id: str
    sessions: list[Session]
    questions: list[Question]
    observations: list[Observation] = field(default_factory=list)
    speakers: tuple[str, str] = ("user", "assistant")

    @property
    def turns(self) -> list[Turn]:
        return [t for s in self.sessions for t in s.turns]


@dataclass
class Dataset:
    benchmark: str  # "locomo" | "longmemeval"
    path: Path
    sha256: str
    units: list[Unit]
    notes: list[str] = field(default_factory=list)  # what was read other than as written

    @property
    def questions(self) -> list[Question]:
        return [q for u in self.units for q in u.questions]


def _fail(path: Path, where: str, message: str) -> EvalInputError:
    return EvalInputError(f"{path}: {where}: {message}" if where else f"{path}: {message}")


def parse_locomo_time(text: str) -> datetime:
    """LoCoMo session times look like "1:56 pm on 8 May, 2023"."""
    cleaned = " ".join(str(text).replace(",", ", ").split()).replace(" ,", ",")
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%H:%M on %d %B, %Y"):
        try:
            return datetime.strptime(cleaned, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValueError(f'not a LoCoMo date like "1:56 pm on 8 May, 2023": {text!r}')


def parse_longmemeval_time(text: str) -> datetime:
    """LongMemEval dates look like "2023/05/20 (Sat) 02:21"."""
    cleaned = " ".join(str(text).split())
    for fmt in ("%Y/%m/%d (%a) %H:%M", "%Y/%m/%d %H:%M", "%Y/%m/%d"):
        try:
            return datetime.strptime(cleaned, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValueError(f'not a LongMemEval date like "2023/05/20 (Sat) 02:21": {text!r}')


_CHUNK = 1 << 24  # 16 MiB of the file read at a time
_SPACE = " \t\n\r"


class _Items:
    """The elements of the JSON array a file holds, parsed one at a time (by `json`'s own
    decoder, so a string reads exactly as `json.loads` reads it, lone surrogates included):
    longmemeval_m_cleaned.json is 2.7 GB, and parsing it whole held the file's bytes and
    every parsed session at once, about four times the file (docs/benchmarks.md). `digest`
    is the file's sha256, once every element is read. Raises EvalInputError for a file that
    is not JSON; `first` is the first element (None for a file that holds no array or an
    empty one), for telling which benchmark's file it is."""

    def __init__(self, path: Path) -> None:
        if not path.is_file():
            raise EvalInputError(f"{path}: no such file")
        self.path = path
        self._file = path.open("rb")
        self._hash = hashlib.sha256()
        self._text = codecs.getincrementaldecoder("utf-8-sig")("surrogatepass")
        self._decoder = json.JSONDecoder()
        self._buf, self._pos, self._eof = "", 0, False
        self.first: Any = None
        self._pending: list[Any] = []
        if self._next_char() == "[":
            self._pos += 1
            if self._next_char() == "]":
                self._pos += 1
            else:
                self.first = self._element()
                self._pending.append(self.first)

    def close(self) -> None:
        self._file.close()

    def _more(self) -> bool:
        if self._eof:
            return False
        try:
            chunk = self._file.read(_CHUNK)
            self._hash.update(chunk)
            self._eof = not chunk
            text = self._text.decode(chunk, final=self._eof)
        except (OSError, UnicodeDecodeError) as err:
            raise EvalInputError(f"{self.path}: not a JSON file ({err})") from None
        self._buf = self._buf[self._pos :] + text
        self._pos = 0
        return True

    def _next_char(self) -> str:
        """The next character that is not white space ("" at the end), not consumed."""
        while True:
            while self._pos < len(self._buf) and self._buf[self._pos] in _SPACE:
                self._pos += 1
            if self._pos < len(self._buf):
                return self._buf[self._pos]
            if not self._more():
                return ""

    def _bad(self, what: str) -> EvalInputError:
        return EvalInputError(f"{self.path}: not a JSON file ({what})")

    def _element(self) -> Any:
        self._next_char()
        while True:
            try:
                value, end = self._decoder.raw_decode(self._buf, self._pos)
            except json.JSONDecodeError as err:
                if self._more():  # cut by the end of what is read so far: read on
                    continue
                raise self._bad(str(err)) from None
            if end == len(self._buf) and self._more():  # a number may go on
                continue
            self._pos = end
            return value

    def __iter__(self) -> Iterator[Any]:
        try:
            if self._pending:
                yield self._pending.pop()
                while True:
                    c = self._next_char()
                    if c == "]":
                        self._pos += 1
                        break
                    if c != ",":
                        raise self._bad(f"expected ',' or ']' at {c!r}" if c else "cut short")
                    self._pos += 1
                    yield self._element()
            if self._next_char():
                raise self._bad("extra data after the array")
            while self._more():
                pass
        finally:
            self.close()

    @property
    def digest(self) -> str:
        return self._hash.hexdigest()


def detect(data: Any) -> str | None:
    """ "locomo", "longmemeval", or None when the file is neither."""
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        return None
    first = data[0]
    if "conversation" in first and "qa" in first:
        return "locomo"
    if "question_id" in first and "haystack_sessions" in first:
        return "longmemeval"
    return None


def _wrong_format(path: Path, data: Any, expected: str) -> EvalInputError:
    found = detect(data)
    hint = {
        "locomo": "it is a LoCoMo file: run `mem0g eval locomo`",
        "longmemeval": "it is a LongMemEval file: run `mem0g eval longmemeval`",
    }.get(found or "", "")
    shapes = {
        "locomo": "a JSON list of samples with `sample_id`, `conversation` and `qa` "
        "(LoCoMo's data/locomo10.json)",
        "longmemeval": "a JSON list of questions with `question_id`, `question_type`, "
        "`haystack_sessions` (LongMemEval's longmemeval_s_cleaned.json)",
    }
    return EvalInputError(
        f"{path}: not a {expected} file: expected {shapes[expected]}"
        + (f"; {hint}" if hint else "")
    )


_SURROGATE = re.compile("[\ud800-\udfff]")


def _unicode(text: str, mended: list[int]) -> str:
    """`text` with each lone surrogate (JSON's "\\ud83d" of a cut emoji, which no store or
    model takes: the turn's add failed, and every resume with it) as U+FFFD; counted."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        mended[0] += 1
        return _SURROGATE.sub("\ufffd", text)


def _surrogate_notes(mended: list[int], questions: list[int]) -> list[str]:
    what = ((mended[0], "turns"), (questions[0], "questions (text or answer)"))
    return [f"{n} {label} held a lone surrogate (not valid Unicode), read as U+FFFD"
            for n, label in what if n]  # fmt: skip


def _question_texts(
    question: Any, answers: tuple[Any, ...], mended: list[int]
) -> tuple[str, list[str | None]]:
    """A question's text and answers as `_unicode` reads a turn (its search, answer prompt
    and judge prompt take no lone surrogate either); the question counted once."""
    seen = [0]
    text = _unicode(str(question), seen)
    out = [None if a is None else _unicode(str(a), seen) for a in answers]
    mended[0] += bool(seen[0])
    return text, out


def _image_note(turn: dict[str, Any]) -> str:
    caption = turn.get("blip_caption")
    return f" [shares a photo: {caption}]" if isinstance(caption, str) and caption.strip() else ""


# LoCoMo's turn ids: D<session>:<turn>. The released file also writes "D:11:26" and "D30:05".
_DIA_ID = re.compile(r"D:?(\d+):(\d+)")
_REF_SEPARATORS = re.compile(r"[;,\s]+")


def dia_id(text: str) -> str | None:
    """A dia_id in its one spelling ("D30:05" -> "D30:5"), None for text that is none."""
    m = _DIA_ID.fullmatch(text.strip())
    return None if m is None else f"D{int(m[1])}:{int(m[2])}"


@dataclass
class _RefLog:
    """What `_refs` mended or dropped in one file, reported with the run (not silently lost)."""

    mended: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    dangling: list[str] = field(default_factory=list)

    def notes(self) -> list[str]:
        out = []
        if self.mended:
            out.append(f"{len(self.mended)} dia_id lists or spellings read as LoCoMo's "
                       f"D<session>:<turn>: {', '.join(map(repr, self.mended[:5]))}")  # fmt: skip
        if self.dropped:
            dropped = ", ".join(map(repr, self.dropped[:5]))
            out.append(f"{len(self.dropped)} tokens in evidence or observation refs are no "
                       f"dia_id and were left out: {dropped}")  # fmt: skip
        if self.dangling:
            out.append(f"{len(self.dangling)} evidence dia_ids name no turn of their "
                       "conversation (kept: no system can retrieve them): "
                       f"{', '.join(self.dangling[:5])}")  # fmt: skip
        return out


def _refs(value: Any, log: _RefLog | None = None) -> list[str]:
    """dia_ids as the dataset writes them: a string or a list of strings, several to a string
    separated by ";", "," or spaces ("D8:6; D9:17", "D9:1 D4:4 D4:6"), each in one spelling;
    a token that is no dia_id ("D") is left out and logged."""
    items = value if isinstance(value, list) else [value]
    refs: list[str] = []
    for item in items:
        if not isinstance(item, str):
            continue
        tokens = [t for t in _REF_SEPARATORS.split(item) if t]
        mended = len(tokens) > len([p for p in re.split(r"[;,]", item) if p.strip()])
        for token in tokens:
            ref = dia_id(token)
            if ref is None:
                if log is not None:
                    log.dropped.append(token)
                continue
            mended = mended or ref != token
            refs.append(ref)
        if mended and log is not None:
            log.mended.append(item.strip())
    return refs


def _records(
    path: Path, benchmark: str, label: str, required: tuple[str, ...]
) -> tuple[_Items, Iterator[tuple[str, dict[str, Any]]]]:
    """The file's records, read one at a time, each a JSON object with the required keys and
    a unique id (the first key); the `_Items`' digest is the file's sha256 once they are
    all read."""
    items = _Items(path)
    first = None if items.first is None else [items.first]
    if detect(first) != benchmark:
        items.close()
        raise _wrong_format(path, first, benchmark)

    def checked() -> Iterator[tuple[str, dict[str, Any]]]:
        seen: set[str] = set()
        for i, item in enumerate(items):
            where = f"{label} #{i}"
            if not isinstance(item, dict):
                raise _fail(path, where, "not a JSON object")
            for key in required:
                if key not in item:
                    raise _fail(path, where, f"missing `{key}`")
            uid = str(item[required[0]])
            if uid in seen:
                raise _fail(path, where, f"duplicate {required[0]} {uid!r}")
            seen.add(uid)
            yield uid, item

    return items, checked()


def load_locomo(path: Path | str) -> Dataset:
    path = Path(path)
    source, records = _records(path, "locomo", "sample", ("sample_id", "conversation", "qa"))
    units: list[Unit] = []
    log = _RefLog()
    mended, asked = [0], [0]
    for uid, sample in records:
        conv = sample["conversation"]
        if not isinstance(conv, dict) or "speaker_a" not in conv or "speaker_b" not in conv:
            raise _fail(path, f"{uid}: conversation", "needs `speaker_a` and `speaker_b`")
        a, b = str(conv["speaker_a"]), str(conv["speaker_b"])
        numbers = sorted(
            int(k.split("_")[1])
            for k in conv
            if k.startswith("session_") and k.split("_")[1].isdigit() and k.count("_") == 1
        )
        if not numbers:
            raise _fail(path, f"{uid}: conversation", "has no `session_N` lists")
        sessions = []
        for n in numbers:
            turns_in = conv[f"session_{n}"]
            stamp = conv.get(f"session_{n}_date_time")
            if not isinstance(turns_in, list):
                raise _fail(path, f"{uid}: session_{n}", "not a list of turns")
            if stamp is None:
                raise _fail(path, f"{uid}: session_{n}", "no `session_{n}_date_time`")
            try:
                when = parse_locomo_time(stamp)
            except ValueError as err:
                raise _fail(path, f"{uid}: session_{n}_date_time", str(err)) from None
            turns = []
            for j, t in enumerate(turns_in):
                if not (isinstance(t, dict) and {"speaker", "dia_id", "text"} <= set(t)):
                    raise _fail(
                        path, f"{uid}: session_{n} turn #{j}", "needs speaker, dia_id, text"
                    )
                text = _unicode((str(t["text"]) + _image_note(t)).strip(), mended)
                if not text:
                    continue
                speaker = str(t["speaker"])
                role = "assistant" if speaker == b and speaker != a else "user"
                ref = dia_id(str(t["dia_id"])) or str(t["dia_id"])
                turns.append(Turn(ref, speaker, role, text, f"session_{n}"))
            sessions.append(Session(f"session_{n}", when, turns))
        observations = []
        for key, per_speaker in (sample.get("observation") or {}).items():
            session = key.removesuffix("_observation")
            if not isinstance(per_speaker, dict):
                continue
            for speaker, items in per_speaker.items():
                for item in items or []:
                    if isinstance(item, list) and len(item) >= 2 and str(item[0]).strip():
                        observations.append(
                            Observation(
                                session, str(speaker), str(item[0]).strip(), _refs(item[1], log)
                            )
                        )
        questions = []
        for j, qa in enumerate(sample["qa"]):
            qwhere = f"{uid}: qa #{j}"
            if not isinstance(qa, dict) or "question" not in qa or "category" not in qa:
                raise _fail(path, qwhere, "needs `question` and `category`")
            try:
                category = int(qa["category"])
            except (TypeError, ValueError):
                category = 0
            if category not in LOCOMO_CATEGORIES:
                raise _fail(path, qwhere, f"unknown category {qa['category']!r} (1-5)")
            if category != 5 and qa.get("answer") is None:
                raise _fail(path, qwhere, "no `answer`")
            text, (answer, adversarial) = _question_texts(
                qa["question"], (qa.get("answer"), qa.get("adversarial_answer") or None), asked
            )
            questions.append(
                Question(
                    id=f"{uid}:q{j}",
                    unit=uid,
                    text=text,
                    answer=answer,
                    category=str(category),
                    evidence=_refs(qa.get("evidence") or [], log),
                    adversarial_answer=adversarial,
                )
            )
        turn_ids = {t.ref for s in sessions for t in s.turns}
        log.dangling += [
            f"{ref} ({q.id})" for q in questions for ref in q.evidence if ref not in turn_ids
        ]
        units.append(Unit(uid, sessions, questions, observations, (a, b)))
    notes = log.notes() + _surrogate_notes(mended, asked)
    return Dataset("locomo", path, source.digest, units, notes)


def load_longmemeval(path: Path | str) -> Dataset:
    path = Path(path)
    need = ("question_id", "question_type", "question", "answer", "haystack_sessions")
    source, records = _records(path, "longmemeval", "question", need)
    units: list[Unit] = []
    unsorted, repeated = [], 0
    mended, asked = [0], [0]
    for qid, item in records:
        qtype = str(item["question_type"])
        if qtype not in LONGMEMEVAL_TYPES:
            raise _fail(path, qid, f"unknown question_type {qtype!r}")
        haystack = item["haystack_sessions"]
        ids = item.get("haystack_session_ids") or [f"s{n}" for n in range(len(haystack))]
        dates = item.get("haystack_dates") or []
        if not isinstance(haystack, list) or len(ids) != len(haystack):
            raise _fail(path, qid, "haystack_sessions and haystack_session_ids differ in length")
        if len(dates) != len(haystack):
            raise _fail(path, qid, "haystack_dates must give one date per session")
        sessions = []
        for n, (sid, stamp, turns_in) in enumerate(zip(ids, dates, haystack, strict=True)):
            try:
                when = parse_longmemeval_time(stamp)
            except ValueError as err:
                raise _fail(path, f"{qid}: haystack_dates[{n}]", str(err)) from None
            if not isinstance(turns_in, list):
                raise _fail(path, f"{qid}: haystack_sessions[{n}]", "not a list of turns")
            turns = []
            for j, t in enumerate(turns_in):
                if not (isinstance(t, dict) and "role" in t and "content" in t):
                    raise _fail(path, f"{qid}: session {sid} turn #{j}", "needs role and content")
                text = _unicode(str(t["content"]).strip(), mended)
                if not text:
                    continue
                role = "assistant" if t["role"] == "assistant" else "user"
                turns.append(
                    Turn(f"{sid}:{j}", role, role, text, str(sid), bool(t.get("has_answer")))
                )
            sessions.append(Session(str(sid), when, turns))
        # the oracle file lists a haystack's sessions in no order: they are added by date
        # (a stable sort: sessions of one date keep the file's order)
        if any(b.time < a.time for a, b in pairwise(sessions)):
            unsorted.append(qid)
            sessions.sort(key=lambda s: s.time)
        # longmemeval_s_cleaned repeats a filler session (same id, other date) in some
        # haystacks: both are kept, each with its own date
        repeated += len(sessions) - len({s.id for s in sessions})
        qdate = item.get("question_date")
        try:
            question_date = parse_longmemeval_time(qdate) if qdate else None
        except ValueError as err:
            raise _fail(path, f"{qid}: question_date", str(err)) from None
        text, (answer,) = _question_texts(item["question"], (item["answer"],), asked)
        question = Question(
            id=qid,
            unit=qid,
            text=text,
            answer=answer,
            category=qtype,
            answer_sessions=[str(s) for s in item.get("answer_session_ids") or []],
            date=question_date,
            abstention=qid.endswith("_abs"),
        )
        units.append(Unit(qid, sessions, [question]))
    notes = []
    if unsorted:
        notes.append(f"{len(unsorted)} haystacks list their sessions out of date order (as "
                     f"LongMemEval's oracle file does); they are added in date order: "
                     f"{', '.join(unsorted[:5])}")  # fmt: skip
    if repeated:
        notes.append(f"{repeated} sessions repeat an earlier session id of their haystack "
                     "(kept, each added with its own date)")  # fmt: skip
    return Dataset(
        "longmemeval", path, source.digest, units, notes + _surrogate_notes(mended, asked)
    )


def load(benchmark: str, path: Path | str) -> Dataset:
    if benchmark == "locomo":
        return load_locomo(path)
    if benchmark == "longmemeval":
        return load_longmemeval(path)
    raise EvalInputError(f"unknown benchmark {benchmark!r}")


def parse_categories(benchmark: str, values: Sequence[str] | None) -> list[str] | None:
    """`--categories`: LoCoMo numbers or names (1 or multi-hop), LongMemEval question types."""
    if not values:
        return None
    chosen: list[str] = []
    for raw in values:
        for value in (v.strip() for v in str(raw).split(",")):
            if not value:
                continue
            if benchmark == "locomo":
                names = {name: str(n) for n, name in LOCOMO_CATEGORIES.items()}
                if value in names:
                    value = names[value]
                if value not in {str(n) for n in LOCOMO_CATEGORIES}:
                    known = ", ".join(f"{n} ({name})" for n, name in LOCOMO_CATEGORIES.items())
                    raise EvalInputError(f"unknown LoCoMo category {value!r}; known: {known}")
            elif value not in LONGMEMEVAL_TYPES:
                known = ", ".join(LONGMEMEVAL_TYPES)
                raise EvalInputError(f"unknown LongMemEval question type {value!r}; known: {known}")
            if value not in chosen:
                chosen.append(value)
    return chosen or None


def category_name(benchmark: str, category: str) -> str:
    if benchmark == "locomo":
        return f"{category} {LOCOMO_CATEGORIES.get(int(category), '?')}"
    return category


def select(
    dataset: Dataset,
    *,
    categories: list[str] | None = None,
    limit_conversations: int | None = None,
    limit_questions: int | None = None,
    limit_sessions: int | None = None,
    limit_turns: int | None = None,
) -> list[Unit]:
    """The units and questions a run covers. LoCoMo: `limit_questions` per conversation;
    LongMemEval (one question per unit): in total."""
    units = dataset.units[:limit_conversations] if limit_conversations else list(dataset.units)
    chosen: list[Unit] = []
    total = 0
    for unit in units:
        qs = [q for q in unit.questions if categories is None or q.category in categories]
        if limit_questions:
            if dataset.benchmark == "locomo":
                qs = qs[:limit_questions]
            else:
                qs = qs[: max(0, limit_questions - total)]
        total += len(qs)
        if not qs and dataset.benchmark == "longmemeval":
            continue
        sessions = unit.sessions[:limit_sessions] if limit_sessions else unit.sessions
        if limit_turns:
            sessions = [Session(s.id, s.time, s.turns[:limit_turns]) for s in sessions]
        kept = {s.id for s in sessions}
        observations = [o for o in unit.observations if o.session in kept]
        chosen.append(Unit(unit.id, sessions, qs, observations, unit.speakers))
    return chosen
