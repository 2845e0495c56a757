"""The context block handed to a caller's own LLM, within a token budget that it reports.

Lines are the Mem0g answer prompt's ("Memories for user X" with each fact's date, "Relations
for user X" with validity); the lowest-ranked lines go first, alternating sections, until the
block fits `max_tokens`. Tokens are estimated as characters / 4 (mem0g does not know the
caller's model); `ContextBlock` says what was used and what was dropped.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from mem0g.types import SearchResult


class ContextBlock(BaseModel):
    text: str
    tokens: int  # estimated tokens of `text` (characters / 4)
    max_tokens: int
    facts: int  # fact lines kept
    relations: int  # relation lines kept
    dropped: int  # lines left out to fit the budget


def estimate_tokens(text: str) -> int:
    return (len(text) + 3) // 4


BUDGET_CUT = "- (left out to fit the token budget)"
"""A section whose every line the budget took: "- (none)" told the caller's LLM that nothing
was known."""


def render(
    hits: SearchResult, who: str | None, max_tokens: int, as_of: datetime | None = None
) -> ContextBlock:
    """`as_of`: the memory as it was then, so an edge's end after it is not shown (it was
    not known then)."""
    memories = [f"- [{f.text_said_at:%Y-%m-%d}] {f.text}" for f in hits.facts]
    relations = []
    for r in hits.relations:
        since = f" (since {r.valid_from:%Y-%m-%d})" if r.valid_from else ""
        ended = r.invalid_at is not None and (as_of is None or r.invalid_at <= as_of)
        until = f" (until {r.invalid_at:%Y-%m-%d})" if ended and r.invalid_at else ""
        relations.append(f"- {r.source} -- {r.relation} --> {r.destination}{since}{until}")
    sections = [(f"Memories for user {who}:", memories), (f"Relations for user {who}:", relations)]
    kept = [list(lines) for _, lines in sections]

    def text_of() -> str:
        blocks = []
        for (title, found), lines in zip(sections, kept, strict=True):
            empty = BUDGET_CUT if found else "- (none)"
            blocks.append("\n".join([title, *(lines or [empty])]))
        return "\n\n".join(blocks)

    text = text_of()
    turn = 0
    while estimate_tokens(text) > max_tokens and any(kept):
        longest = max(range(len(kept)), key=lambda i: (len(kept[i]), -((i + turn) % len(kept))))
        kept[longest].pop()
        turn += 1
        text = text_of()
    if estimate_tokens(text) > max_tokens:  # not even the two headers fit: nothing does
        text = ""
    return ContextBlock(
        text=text,
        tokens=estimate_tokens(text),
        max_tokens=max_tokens,
        facts=len(kept[0]),
        relations=len(kept[1]),
        dropped=len(memories) + len(relations) - len(kept[0]) - len(kept[1]),
    )
