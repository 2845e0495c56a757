"""Full mode: each question answered from `Memory.context` by the answer model and graded by
the judge (LoCoMo's and LongMemEval's prompts and labels), every call through the cache."""

from __future__ import annotations

import hashlib
import json
import re
import time
from string import Template
from typing import TYPE_CHECKING, Any

from mem0g.eval.data import NOT_MENTIONED, Question
from mem0g.eval.llm import ChatLLM
from mem0g.eval.metrics import bleu1, locomo_f1, normalize_answer
from mem0g.resources import read_text

if TYPE_CHECKING:
    from mem0g.eval.runner import EvalOptions


class FullMode:
    """`Harness`'s per-question work in full mode."""

    o: EvalOptions
    answer_llm: ChatLLM | None
    judge_llm: ChatLLM | None

    def _answer(self, memory: Any, tenant: str, q: Question) -> dict[str, Any]:
        assert self.answer_llm is not None and self.judge_llm is not None
        started = time.perf_counter()
        context = memory.context(
            q.text, user_id=tenant, limit=self.o.context_limit, max_tokens=self.o.context_tokens
        )
        # the conversation's own id, not the run's tenant id: the same prompt in every run,
        # so a shared cache answers it
        context = context.replace(tenant, q.unit)
        search_ms = (time.perf_counter() - started) * 1000
        row: dict[str, Any] = {
            "question": q.text,
            "gold": q.answer,
            "search_ms": round(search_ms, 2),
            "context_tokens": (len(context) + 3) // 4,
        }
        if self.o.benchmark == "locomo" and q.category == "5":
            options = [NOT_MENTIONED, q.adversarial_answer or "(no answer given)"]
            if _coin(q.id):
                options.reverse()
            text = _render(
                "eval_answer_adversarial",
                context=context,
                question=q.text,
                option_a=options[0],
                option_b=options[1],
            )
            answer = self.answer_llm.complete("", text)
            chose_nm = _chose_not_mentioned(answer["text"], options)
            row.update(answer=answer["text"], adversarial=float(chose_nm), llm=[_use(answer)])
        else:
            date_line = f"(asked on {q.date:%d %B %Y})\n" if q.date else ""
            text = _render(
                "eval_answer", context=context, question=q.text, question_date_line=date_line
            )
            answer = self.answer_llm.complete("", text)
            verdicts, uses = [], [_use(answer)]
            for run in range(self.o.judge_runs):
                verdict = self._judge(q, answer["text"], run)
                verdicts.append(verdict["correct"])
                uses.append(_use(verdict))
            row.update(answer=answer["text"], judge=verdicts, llm=uses)
            if self.o.benchmark == "locomo":
                row.update(
                    f1=locomo_f1(answer["text"], q.answer or "", q.category),
                    bleu1=bleu1(answer["text"], q.answer or ""),
                )
        row["question_ms"] = round((time.perf_counter() - started) * 1000, 2)
        return row

    def _judge(self, q: Question, answer: str, run: int) -> dict[str, Any]:
        assert self.judge_llm is not None
        if self.o.benchmark == "locomo":
            text = _render("eval_judge_locomo", question=q.text, gold=q.answer or "", answer=answer)
            reply = self.judge_llm.complete("", text, run=run)
            return {**reply, "correct": _locomo_label(reply["text"])}
        rules = json.loads(read_text("prompts", "eval_judge_longmemeval_rules.json"))
        kind = "abstention" if q.abstention else q.category
        rule = rules.get(kind, rules["default"])
        gold_label = {"single-session-preference": "Rubric", "abstention": "Explanation"}.get(
            kind, "Correct answer"
        )
        text = _render(
            "eval_judge_longmemeval",
            question=q.text,
            gold=q.answer or "",
            answer=answer,
            rule=rule,
            gold_label=gold_label,
        )
        reply = self.judge_llm.complete("", text, run=run)
        return {**reply, "correct": _yes(reply["text"])}


def _render(name: str, **values: str) -> str:
    return Template(read_text("prompts", f"{name}.md")).safe_substitute(values)


def _use(reply: dict[str, Any]) -> dict[str, Any]:
    return {k: reply.get(k) for k in ("prompt_tokens", "completion_tokens", "cached", "ms")}


def _coin(key: str) -> bool:
    """A fixed coin per question (the option order of the forced choice)."""
    return hashlib.sha256(key.encode()).digest()[0] % 2 == 1


# A reply that is only an option's letter: "a", "(a)", "a)", "A."
_OPTION_LETTER = re.compile(r"\(?([ab])\)?[.:]?", re.IGNORECASE)


def _chose_not_mentioned(reply: str, options: list[str]) -> bool:
    """Whether the forced-choice reply picks "Not mentioned in the conversation": by its text,
    or by the letter of its option. The letter is read before `normalize_answer`, which
    drops "a" as an article: a reply "(a)" for option (a) read as no choice."""
    if "not mentioned" in normalize_answer(reply):
        return True
    letter = _OPTION_LETTER.fullmatch(reply.strip())
    return letter is not None and options["ab".index(letter[1].lower())] == NOT_MENTIONED


def _locomo_label(text: str) -> float:
    """CORRECT/WRONG from the judge's answer: the JSON label, else the last label word."""
    upper = text.upper()
    for marker in ('"LABEL": "CORRECT"', "'LABEL': 'CORRECT'"):
        if marker in upper.replace(" :", ":"):
            return 1.0
    positions = [(upper.rfind("CORRECT"), 1.0), (upper.rfind("WRONG"), 0.0)]
    pos, value = max(positions)
    if pos < 0:
        return 0.0
    if value == 1.0 and upper[max(0, pos - 2) : pos] == "IN":  # "INCORRECT"
        return 0.0
    return value


def _yes(text: str) -> float:
    words = normalize_answer(text).split()
    return 1.0 if (words and words[0] == "yes") or ("yes" in words and "no" not in words) else 0.0
