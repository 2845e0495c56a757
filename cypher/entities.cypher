// Entity repair: merges, splits and renames of entities, their history (:EntityEvent) and the
// resolver's possible duplicates (:PossibleDuplicate). What changes is computed in Python
// (mem0g/stores/repair.py, shared with the embedded store); these statements read and write
// it. A merge or split is one managed transaction of the entities' exact tenant, which starts
// with repair_lock; a rename is part of apply's transaction. Every value is a parameter.
//
//   (:EntityEvent {id, entity_id, other_id, event, data: <EntityEvent as JSON>, seq, ...})
//   (:PossibleDuplicate {pair, entity_id, candidate_id, data: <PossibleDuplicate as JSON>, ...})
// Both carry user_id/agent_id/run_id and tenant_key like every mem0g record.

// name: constraint_entity_event_id
CREATE CONSTRAINT mem0g_entity_event_id IF NOT EXISTS FOR (ev:EntityEvent) REQUIRE ev.id IS UNIQUE;

// name: index_entity_event_entity_id
CREATE INDEX mem0g_entity_event_entity_id IF NOT EXISTS FOR (ev:EntityEvent) ON (ev.entity_id);

// name: index_entity_event_other_id
CREATE INDEX mem0g_entity_event_other_id IF NOT EXISTS FOR (ev:EntityEvent) ON (ev.other_id);

// name: index_entity_event_tenant_key
CREATE INDEX mem0g_entity_event_tenant_key IF NOT EXISTS FOR (ev:EntityEvent) ON (ev.tenant_key);

// name: index_entity_event_user_id
CREATE INDEX mem0g_entity_event_user_id IF NOT EXISTS FOR (ev:EntityEvent) ON (ev.user_id);

// name: index_entity_event_agent_id
CREATE INDEX mem0g_entity_event_agent_id IF NOT EXISTS FOR (ev:EntityEvent) ON (ev.agent_id);

// name: index_entity_event_run_id
CREATE INDEX mem0g_entity_event_run_id IF NOT EXISTS FOR (ev:EntityEvent) ON (ev.run_id);

// name: index_possible_duplicate_tenant_key
CREATE INDEX mem0g_possible_duplicate_tenant_key IF NOT EXISTS
FOR (p:PossibleDuplicate) ON (p.tenant_key);

// name: index_possible_duplicate_pair
CREATE INDEX mem0g_possible_duplicate_pair IF NOT EXISTS
FOR (p:PossibleDuplicate) ON (p.tenant_key, p.pair);

// name: index_possible_duplicate_user_id
CREATE INDEX mem0g_possible_duplicate_user_id IF NOT EXISTS
FOR (p:PossibleDuplicate) ON (p.user_id);

// name: index_possible_duplicate_agent_id
CREATE INDEX mem0g_possible_duplicate_agent_id IF NOT EXISTS
FOR (p:PossibleDuplicate) ON (p.agent_id);

// name: index_possible_duplicate_run_id
CREATE INDEX mem0g_possible_duplicate_run_id IF NOT EXISTS
FOR (p:PossibleDuplicate) ON (p.run_id);

// name: index_entity_event_user_run
CREATE INDEX mem0g_entity_event_user_run IF NOT EXISTS
FOR (ev:EntityEvent) ON (ev.user_id, ev.run_id);

// name: index_possible_duplicate_user_run
CREATE INDEX mem0g_possible_duplicate_user_run IF NOT EXISTS
FOR (p:PossibleDuplicate) ON (p.user_id, p.run_id);

// First in a merge's or split's transaction: the tenant's turn (as lock_tenant in
// write.cypher) and a new epoch. An entity goes away (or comes back with an old plan number),
// which the held entity vectors (stores/neo4j/entity_vectors.py) cannot follow by plan number
// alone: a new epoch makes every store read the tenant's vectors afresh.
// name: repair_lock
MERGE (q:TenantSequence {tenant_key: $tenant_key})
ON CREATE SET q.user_id = $user_id, q.agent_id = $agent_id, q.run_id = $run_id
SET q.seq = coalesce(q.seq, 0) + 1, q.epoch = randomUUID()
RETURN q.seq AS seq;

// After repair_lock: the tenant's logged plans are of its old epoch, which no copy can catch up
// from any more (a copy of the tenant is copied whole again).
// name: drop_plan_log
MATCH (p:PlanLog)
WHERE p.tenant_key = $tenant_key AND p.seq IS NOT NULL  // so the (tenant_key, seq) index serves
DETACH DELETE p;

// An entity's name, aliases and keys as Python computed them, and its :EntityKey nodes in
// step: the keys it lost go, the keys it gained get a node.
// name: set_entity_names
UNWIND $rows AS row
MATCH (e:Entity {id: row.id})
WHERE e.tenant_key = $tenant_key
SET e.name = row.name, e.aliases = row.aliases, e.keys = row.keys, e.updated_at = row.updated_at
WITH e, row
CALL (e, row) {
  MATCH (k:EntityKey)-[:KEY_OF]->(e)
  WHERE k.key IN row.removed_keys
  DETACH DELETE k
}
FOREACH (key IN row.added_keys |
  CREATE (:EntityKey {key: key, tenant_key: e.tenant_key, user_id: e.user_id,
                      agent_id: e.agent_id, run_id: e.run_id})-[:KEY_OF]->(e))
RETURN count(e) AS updated;

// A relationship cannot change its ends: each edge is deleted and created again between its
// new ends with all its properties (id, written/pos, provenance, ...), its embedding written
// back as a float32 vector property, and its name strings as Python computed them. Python
// checks the counters (every edge deleted and created once).
// name: repoint_relations
UNWIND $rows AS row
MATCH ()-[r:RELATES {id: row.id}]->()
WHERE r.tenant_key = $tenant_key
WITH row, r, properties(r) AS props
DELETE r
WITH row, props
MATCH (s:Entity {id: row.source_id}), (d:Entity {id: row.destination_id})
WHERE s.tenant_key = $tenant_key AND d.tenant_key = $tenant_key
CREATE (s)-[n:RELATES]->(d)
SET n = props, n.source = row.source, n.destination = row.destination
WITH n, props
WHERE props.embedding IS NOT NULL
CALL db.create.setRelationshipVectorProperty(n, 'embedding', props.embedding);

// name: delete_relations
UNWIND $ids AS id
MATCH ()-[r:RELATES {id: id}]->()
WHERE r.tenant_key = $tenant_key
DELETE r
RETURN count(r) AS deleted;

// The merged-away entity (its edges were moved or deleted first) and its key nodes.
// name: delete_entity
MATCH (e:Entity {id: $id})
WHERE e.tenant_key = $tenant_key
CALL (e) {
  MATCH (k:EntityKey)-[:KEY_OF]->(e)
  DETACH DELETE k
}
DETACH DELETE e
RETURN count(e) AS deleted;

// $seq: the plan number of the transaction (lock_tenant or repair_lock): history in commit
// order.
// name: create_entity_events
UNWIND $rows AS props
CREATE (ev:EntityEvent)
SET ev = props, ev.seq = $seq;

// A display name (AliasUpdate.name), in apply's transaction after create_relations: the old
// name stays an alias and the new one is not an alias of itself (repair.renamed, the same
// rule), and every edge at the entity shows the new name. Returns the old names (for the
// RENAME events); an entity already called so is left alone.
// name: rename_entities
UNWIND $rows AS row
MATCH (e:Entity {id: row.id})
WHERE e.tenant_key = $tenant_key AND e.name <> row.name
WITH e, row, e.name AS old, [a IN coalesce(e.aliases, []) WHERE a <> row.name] AS kept
SET e.name = row.name,
    e.aliases = kept + CASE WHEN old IN kept THEN [] ELSE [old] END,
    e.updated_at = $updated_at
WITH e, old
CALL (e) {
  MATCH (e)-[r:RELATES]->()
  SET r.source = e.name
}
CALL (e) {
  MATCH ()-[r:RELATES]->(e)
  SET r.destination = e.name
}
RETURN e.id AS id, old, e.name AS name;

// The kept entity of a merge event (a split then reads that entity's history).
// name: merge_event_entity
MATCH (ev:EntityEvent {id: $id})
RETURN ev.entity_id AS entity_id;

// Events naming the entity, kept or merged away, in commit order (one tenant's: seq).
// name: entity_history
CALL () {
  MATCH (ev:EntityEvent) WHERE ev.entity_id = $entity_id RETURN ev
  UNION
  MATCH (ev:EntityEvent) WHERE ev.other_id = $entity_id RETURN ev
}
WITH ev
WHERE ($user_id IS NULL OR ev.user_id = $user_id)
  AND ($agent_id IS NULL OR ev.agent_id = $agent_id)
  AND ($run_id IS NULL OR ev.run_id = $run_id)
RETURN ev.data AS data
ORDER BY ev.seq, ev.written, ev.pos;

// New pairs of a plan or a merge; a pair recorded already (either order: `pair` is unordered)
// keeps its record. The tenant lock of the transaction keeps two writers apart.
// name: create_pairs
UNWIND $rows AS row
MERGE (p:PossibleDuplicate {tenant_key: $tenant_key, pair: row.pair})
ON CREATE SET p += row.props;

// name: delete_pairs
UNWIND $pairs AS pair
MATCH (p:PossibleDuplicate {tenant_key: $tenant_key, pair: pair})
DELETE p;

// The exact tenant's pairs naming any of $ids (a merge re-points them).
// name: pairs_of
MATCH (p:PossibleDuplicate)
WHERE p.tenant_key = $tenant_key AND (p.entity_id IN $ids OR p.candidate_id IN $ids)
RETURN p.data AS data
ORDER BY p.written, p.pos;

// The scope's pairs whose two entities both still exist, oldest first.
// name: possible_duplicates
CALL () {
  MATCH (p:PossibleDuplicate) WHERE p.tenant_key = $seek_tenant_key RETURN p
  UNION ALL
  MATCH (p:PossibleDuplicate) WHERE p.user_id = $seek_user_id RETURN p
  UNION ALL
  MATCH (p:PossibleDuplicate)
  WHERE p.user_id = $seek_user_run[0] AND p.run_id = $seek_user_run[1] RETURN p
  UNION ALL
  MATCH (p:PossibleDuplicate) WHERE p.agent_id = $seek_agent_id RETURN p
  UNION ALL
  MATCH (p:PossibleDuplicate) WHERE p.run_id = $seek_run_id RETURN p
}
WITH p
WHERE ($agent_id IS NULL OR p.agent_id = $agent_id)
  AND ($run_id IS NULL OR p.run_id = $run_id)
  AND EXISTS { MATCH (e:Entity {id: p.entity_id}) WHERE e.tenant_key = p.tenant_key }
  AND EXISTS { MATCH (c:Entity {id: p.candidate_id}) WHERE c.tenant_key = p.tenant_key }
RETURN p.data AS data
ORDER BY p.written, p.pos;

// delete_tenant's part (after delete_tenant_sequences, in its transaction), anchored on the
// tenant indexes as delete.cypher's statements are.
// name: delete_tenant_entity_events
CALL () {
  MATCH (ev:EntityEvent) WHERE ev.tenant_key = $seek_tenant_key RETURN ev
  UNION ALL
  MATCH (ev:EntityEvent) WHERE ev.user_id = $seek_user_id RETURN ev
  UNION ALL
  MATCH (ev:EntityEvent)
  WHERE ev.user_id = $seek_user_run[0] AND ev.run_id = $seek_user_run[1] RETURN ev
  UNION ALL
  MATCH (ev:EntityEvent) WHERE ev.agent_id = $seek_agent_id RETURN ev
  UNION ALL
  MATCH (ev:EntityEvent) WHERE ev.run_id = $seek_run_id RETURN ev
}
WITH ev
WHERE ($agent_id IS NULL OR ev.agent_id = $agent_id)
  AND ($run_id IS NULL OR ev.run_id = $run_id)
DELETE ev;

// name: delete_tenant_possible_duplicates
CALL () {
  MATCH (p:PossibleDuplicate) WHERE p.tenant_key = $seek_tenant_key RETURN p
  UNION ALL
  MATCH (p:PossibleDuplicate) WHERE p.user_id = $seek_user_id RETURN p
  UNION ALL
  MATCH (p:PossibleDuplicate)
  WHERE p.user_id = $seek_user_run[0] AND p.run_id = $seek_user_run[1] RETURN p
  UNION ALL
  MATCH (p:PossibleDuplicate) WHERE p.agent_id = $seek_agent_id RETURN p
  UNION ALL
  MATCH (p:PossibleDuplicate) WHERE p.run_id = $seek_run_id RETURN p
}
WITH p
WHERE ($agent_id IS NULL OR p.agent_id = $agent_id)
  AND ($run_id IS NULL OR p.run_id = $run_id)
DELETE p;
