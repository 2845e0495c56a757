"""`Memory`'s entity methods: list and read entities, and the repairs by hand (merge, split,
their history, the possible duplicates the resolver recorded)."""

from __future__ import annotations

from mem0g import validation
from mem0g.memory.parts import MemoryPart
from mem0g.stores.base import UnknownEntityError
from mem0g.stores.repair import describe
from mem0g.types import (
    Entity,
    EntityEvent,
    MergeResult,
    PossibleDuplicate,
    Relation,
    SplitResult,
    Validity,
)


class EntityMethods(MemoryPart):
    """`Memory`'s entity reads and repairs (rules: stores/repair.py)."""

    # ------------------------------------------------------------------ entities and repair

    def list_entities(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> list[Entity]:
        """Every entity of the scope, in write order, without embeddings."""
        return self.store.list_entities(self._tenant(user_id, agent_id, run_id))

    def get_entity(
        self,
        entity_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> Entity | None:
        """One entity of the scope (None: unknown, merged away, or another tenant's)."""
        validation.text(entity_id, "entity_id")
        scope = self._tenant(user_id, agent_id, run_id)
        found = self.store.get_entities(scope, [entity_id])
        return found[0].model_copy(update={"embedding": None}) if found else None

    def entity_relations(
        self,
        entity_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        include_invalid: bool = False,
    ) -> list[Relation]:
        """The edges at one entity (either end), without embeddings."""
        validation.text(entity_id, "entity_id")
        scope = self._tenant(user_id, agent_id, run_id)
        validity = Validity(include_invalid=include_invalid)
        found = self.store.relations_touching(scope, [entity_id], validity)
        return [r.model_copy(update={"embedding": None}) for r in found]

    def merge_entities(
        self,
        keep_id: str,
        other_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> MergeResult:
        """Merge `other_id` into `keep_id` (two records of one thing): every edge of other is
        re-pointed onto keep, other's name, aliases and keys become keep's, other is deleted,
        and the merge is logged in both entities' history; one transaction. Edges between the
        two are removed (they would be self-loops) and kept in the log. `split_entity` takes it
        back. Both entities must be in the scope and of one exact tenant: raises
        `UnknownEntityError` / `CrossTenantError` (ValueErrors), writing nothing.

        Holds keep's tenant's add lock: an add planned around `other` in this process would
        otherwise fail at its write (its plan names an entity the merge removed)."""
        validation.text(keep_id, "keep_id")
        validation.text(other_id, "other_id")
        scope = self._tenant(user_id, agent_id, run_id)
        found = self.store.get_entities(scope, [keep_id])
        if not found:
            raise UnknownEntityError(f"no entity {keep_id!r} in {describe(scope)}")
        with self._lock(found[0].tenant):
            return self.store.merge_entities(scope, keep_id, other_id)

    def split_entity(
        self,
        merge_id: str | None = None,
        *,
        entity_id: str | None = None,
        other_id: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> SplitResult:
        """Take a merge back, by its event id (`MergeResult.merge_id`, or from
        `entity_history`) or by (`entity_id`: the kept entity, `other_id`: the merged-away
        one: the latest such merge not split yet). The other entity returns with its id,
        name, type, aliases, keys and embedding, and exactly the edges that merge moved go
        back to it (edges keep gained since stay on keep); logged as SPLIT."""
        scope = self._tenant(user_id, agent_id, run_id)
        if merge_id is None:
            if not (entity_id and other_id):
                raise ValueError("give a merge id, or the kept entity's id and the other's")
            validation.text(entity_id, "entity_id")
            validation.text(other_id, "other_id")
            events = self.store.entity_history(scope, entity_id)
            split = {e.merge_id for e in events if e.event == "SPLIT"}
            merges = [
                e
                for e in events
                if e.event == "MERGE"
                and (e.entity_id, e.other_id) == (entity_id, other_id)
                and e.id not in split
            ]
            if not merges:
                raise UnknownEntityError(
                    f"no merge of {other_id!r} into {entity_id!r} to split in {describe(scope)}"
                )
            merge_id = merges[-1].id
        validation.text(merge_id, "merge_id")
        return self.store.split_entity(scope, merge_id)

    def entity_history(
        self,
        entity_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> list[EntityEvent]:
        """MERGE, SPLIT and RENAME events naming the entity (also one merged away), oldest
        first; a MERGE's undo record comes without embeddings."""
        validation.text(entity_id, "entity_id")
        scope = self._tenant(user_id, agent_id, run_id)
        events = self.store.entity_history(scope, entity_id)
        for event in events:
            if event.undo is not None:
                event.undo.other.embedding = None
                for rel in event.undo.dropped:
                    rel.embedding = None
        return events

    def possible_duplicates(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> list[PossibleDuplicate]:
        """Entity pairs the resolver recorded as maybe one thing, with the reason, oldest
        first; pairs settled by a merge or naming a deleted entity are gone from the list."""
        scope = self._tenant(user_id, agent_id, run_id)
        return self.store.possible_duplicates(scope)
