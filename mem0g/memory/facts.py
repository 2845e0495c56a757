"""The fact memory without the LLM: verbatim adds (`add(infer=False)`, with their fact links),
and one fact by id (get, update, delete, history); the scope's episodes."""

from __future__ import annotations

from datetime import datetime

from mem0g import validation
from mem0g.embed import CachedEmbedder
from mem0g.memory.parts import MemoryPart
from mem0g.resolve.links import plan_links
from mem0g.stores.base import PlanConflict
from mem0g.types import (
    AddResult,
    Episode,
    Fact,
    FactChange,
    FactEvent,
    FactResult,
    Message,
    Provenance,
    Tenant,
    WritePlan,
    utcnow,
)


def verbatim_plan(
    tenant: Tenant, messages: list[Message], when: datetime, embedder: CachedEmbedder
) -> tuple[WritePlan, AddResult]:
    """What `add(infer=False)` writes, before its fact links: one episode of the messages,
    each message's text one fact (embedded), with its ADD event. Also how
    scripts/bench_scale.py makes the tenants it imports in bulk, so they are the same records
    as adds make (tests/test_bench_scale.py compares the stored rows)."""
    now = utcnow()
    episode = Episode(tenant=tenant, messages=messages, timestamp=when, created_at=now)
    provenance = Provenance(episode_id=episode.id, timestamp=when)
    texts = [m.content.strip() for m in messages]
    vectors = embedder.embed(texts)
    plan = WritePlan(tenant=tenant, episode=episode, updated_at=now)
    results = []
    for text, vector in zip(texts, vectors, strict=True):
        fact = Fact(
            tenant=tenant,
            text=text,
            embedding=[float(x) for x in vector],
            created_at=now,
            updated_at=now,
            provenance=[provenance],
        )
        plan.new_facts.append(fact)
        plan.fact_events.append(
            FactEvent(
                fact_id=fact.id,
                tenant=tenant,
                event="ADD",
                new_text=text,
                actor="user",
                episode_id=episode.id,
                at=now,
            )
        )
        results.append(FactResult(event="ADD", id=fact.id, text=text))
    return plan, AddResult(episode_id=episode.id, facts=results)


class FactMethods(MemoryPart):
    """`Memory`'s fact methods that need no LLM."""

    def _import(self, tenant: Tenant, messages: list[Message], when: datetime) -> AddResult:
        """Messages become facts as they are: no extraction, no LLM."""
        plan, result = verbatim_plan(tenant, messages, when, self.embedder)
        self._apply_linked(plan)
        return result

    def _apply_linked(self, plan: WritePlan) -> None:
        """Apply a plan made without the LLM, with its fact links, from the tenant's version:
        a name another process's add brings meanwhile would otherwise miss these facts (each
        add links only the facts it can see), so a moved version means linking again."""
        for attempt in range(self.config.memory.replans + 1):
            plan.based_on = self.store.tenant_version(plan.tenant)
            try:
                linked = plan_links(self.store, plan)
                self.store.apply(linked)
                if self.copy is not None:
                    self.copy.written(linked)
                return
            except PlanConflict:
                if attempt == self.config.memory.replans:
                    raise

    # ------------------------------------------------------------------ facts, by id

    def get(
        self,
        fact_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> Fact | None:
        """One fact of the tenant, or None (also for another tenant's id)."""
        validation.text(fact_id, "fact_id")  # as update and delete: 5 or "" is a caller's bug
        scope = self._tenant(user_id, agent_id, run_id)
        found = self.store.get_facts(scope, [fact_id])
        return found[0].model_copy(update={"embedding": None}) if found else None

    def _fact_of(self, fact_id: str, scope: Tenant) -> Fact:
        validation.text(fact_id, "fact_id")
        found = self.store.get_facts(scope, [fact_id])
        if not found:
            raise KeyError(f"no fact {fact_id!r} for this tenant")
        return found[0]

    def update(
        self,
        fact_id: str,
        text: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> FactResult:
        """Replace a fact's text (the old text stays in its history)."""
        validation.text(fact_id, "fact_id")
        validation.text(text, "text", self.config.limits.max_fact_chars)
        scope = self._tenant(user_id, agent_id, run_id)
        with self._lock(scope):
            old = self._fact_of(fact_id, scope)
            now = utcnow()
            vector = self.embedder.embed([text.strip()])[0]
            plan = WritePlan(tenant=old.tenant, updated_at=now)
            plan.fact_changes.append(
                FactChange(fact_id=old.id, text=text.strip(), embedding=[float(x) for x in vector])
            )
            plan.fact_events.append(
                FactEvent(
                    fact_id=old.id,
                    tenant=old.tenant,
                    event="UPDATE",
                    old_text=old.text,
                    new_text=text.strip(),
                    actor="user",
                    at=now,
                )
            )
            self._apply_linked(plan)
        return FactResult(event="UPDATE", id=old.id, text=text.strip(), previous_text=old.text)

    def delete(
        self,
        fact_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> FactResult:
        """Delete a fact: gone from search and get, kept in its history."""
        scope = self._tenant(user_id, agent_id, run_id)
        with self._lock(scope):
            old = self._fact_of(fact_id, scope)
            now = utcnow()
            plan = WritePlan(tenant=old.tenant, updated_at=now)
            plan.fact_changes.append(FactChange(fact_id=old.id, text=None))
            plan.fact_events.append(
                FactEvent(
                    fact_id=old.id,
                    tenant=old.tenant,
                    event="DELETE",
                    old_text=old.text,
                    actor="user",
                    at=now,
                )
            )
            self.store.apply(plan)
        return FactResult(event="DELETE", id=old.id, text=old.text)

    def history(
        self,
        fact_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> list[FactEvent]:
        """Every change of a fact, oldest first, including after it was deleted."""
        validation.text(fact_id, "fact_id")
        scope = self._tenant(user_id, agent_id, run_id)
        return self.store.fact_history(scope, fact_id)

    def episodes(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> list[Episode]:
        """The scope's episodes (the messages of each add, with the conversation's time), in
        the order they were written: what every edge and fact points back to."""
        return self.store.episodes(Tenant(user_id=user_id, agent_id=agent_id, run_id=run_id))
