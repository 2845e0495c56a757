"""Scores: token F1 and BLEU-1 (LoCoMo's answer metrics), recall@k, latency percentiles."""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence

from mem0g.stores.lexical_query import stems

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """Lower case, no punctuation, no articles, single spaces (SQuAD-style, as LoCoMo)."""
    text = str(text).lower().replace(",", "")
    text = text.translate(_PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def tokens(text: str) -> list[str]:
    return normalize_answer(text).split()


def token_f1(prediction: str, gold: str) -> float:
    """LoCoMo's token F1: over the normalised words' Porter stems, as its evaluation.py
    (`f1_score`) scores them, so "painted" and "painting" are one word."""
    pred, ref = stems(tokens(prediction)), stems(tokens(gold))
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def locomo_f1(prediction: str, gold: str, category: str) -> float:
    """F1 as LoCoMo's evaluation scores each category: a multi-hop answer (category 1) is a
    list, so each part of the gold answer takes its best F1 over the answer's parts, and the
    parts are averaged (`f1`); an open-domain gold answer (3) counts up to its first ";"."""
    if category == "1":
        parts = [p.strip() for p in prediction.split(",")]
        wanted = [g.strip() for g in gold.split(",")]
        return sum(max(token_f1(p, g) for p in parts) for g in wanted) / len(wanted)
    if category == "3":
        gold = gold.split(";")[0].strip()
    return token_f1(prediction, gold)


def bleu1(prediction: str, gold: str) -> float:
    """Clipped unigram precision times the brevity penalty (one reference)."""
    pred, ref = tokens(prediction), tokens(gold)
    if not pred or not ref:
        return 0.0
    clipped = sum((Counter(pred) & Counter(ref)).values())
    precision = clipped / len(pred)
    penalty = 1.0 if len(pred) > len(ref) else math.exp(1 - len(ref) / len(pred))
    return precision * penalty


def recall_at_k(retrieved: Sequence[Iterable[str]], relevant: Iterable[str], k: int) -> float:
    """Share of the relevant ids found among the top-k retrieved items; each retrieved item
    carries the ids it came from (a turn one dia_id, an observation one or more)."""
    wanted = set(relevant)
    if not wanted:
        return float("nan")
    return len(wanted & _top(retrieved, k)) / len(wanted)


def _top(retrieved: Sequence[Iterable[str]], k: int) -> set[str]:
    """The ids the top-k retrieved items carry."""
    found: set[str] = set()
    for refs in retrieved[:k]:
        found.update(refs)
    return found


def found_at_k(
    retrieved: Sequence[Iterable[str]], relevant: Iterable[str], k: int, *, every: bool
) -> float:
    """LongMemEval's recall_all@k (`every`: 1.0 when every relevant id is among the top-k
    items) and recall_any@k (1.0 when one is); nan when there is none to find."""
    wanted = set(relevant)
    if not wanted:
        return float("nan")
    found = _top(retrieved, k)
    return float(wanted <= found if every else bool(wanted & found))


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default), q in [0, 100]."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def latency(values: Sequence[float]) -> dict[str, float | int]:
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "p50_ms": round(percentile(values, 50), 2),
        "p95_ms": round(percentile(values, 95), 2),
        "mean_ms": round(sum(values) / len(values), 2),
    }


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and population standard deviation (of the judge runs' scores)."""
    if not values:
        return float("nan"), float("nan")
    mean = sum(values) / len(values)
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


def mean(values: Iterable[float]) -> float:
    items = [v for v in values if not math.isnan(v)]
    return sum(items) / len(items) if items else float("nan")
