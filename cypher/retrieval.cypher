// Vector search. The HNSW indexes answer a global top-$fetch over every tenant; the tenant and
// validity filters run after it, so Python asks for more than it needs ($fetch = $want times a
// factor) and falls back to the exact *_scan statement when fewer than $want rows survive.
// Both return candidates only: Python re-ranks them with the same float32 cosine as the
// embedded store, so the two stores rank identically. Scores here are Neo4j's normalised
// cosine, (1 + cos) / 2. $zero_query: the query vector has no direction (cosine undefined).
// $light (relations): rows carry ids and the relation only, ranked by Neo4j's own score, for
// similar_relations(refs=True), whose caller reads only the edges it keeps.

// name: similar_entities_index
CALL db.index.vector.queryNodes('mem0g_entity_embedding', $fetch, $vector)
YIELD node AS e, score
WITH e, score
WHERE ($user_id IS NULL OR e.user_id = $user_id)
  AND ($agent_id IS NULL OR e.agent_id = $agent_id)
  AND ($run_id IS NULL OR e.run_id = $run_id)
  AND (NOT $exact OR e.tenant_key = $tenant_key)
RETURN CASE WHEN $light
            THEN e {.id, .name, .type, .aliases, .keys, .user_id, .agent_id, .run_id,
                    .tenant_key, created_at: toString(e.created_at),
                    updated_at: toString(e.updated_at)}
            ELSE e {.*, created_at: toString(e.created_at), updated_at: toString(e.updated_at)}
       END AS entity, score
ORDER BY score DESC
LIMIT $want;

// name: similar_entities_scan
CALL () {
  MATCH (e:Entity) WHERE e.tenant_key = $seek_tenant_key RETURN e
  UNION ALL
  MATCH (e:Entity) WHERE e.user_id = $seek_user_id RETURN e
  UNION ALL
  MATCH (e:Entity)
  WHERE e.user_id = $seek_user_run[0] AND e.run_id = $seek_user_run[1] RETURN e
  UNION ALL
  MATCH (e:Entity) WHERE e.agent_id = $seek_agent_id RETURN e
  UNION ALL
  MATCH (e:Entity) WHERE e.run_id = $seek_run_id RETURN e
}
WITH e
WHERE ($user_id IS NULL OR e.user_id = $user_id)
  AND ($agent_id IS NULL OR e.agent_id = $agent_id)
  AND ($run_id IS NULL OR e.run_id = $run_id)
  AND e.embedding IS NOT NULL
WITH e, CASE WHEN $zero_query OR coalesce(e.embedding_zero, false) THEN 0.5
             ELSE vector.similarity.cosine(e.embedding, $vector) END AS score
RETURN CASE WHEN $light
            THEN e {.id, .name, .type, .aliases, .keys, .user_id, .agent_id, .run_id,
                    .tenant_key, created_at: toString(e.created_at),
                    updated_at: toString(e.updated_at)}
            ELSE e {.*, created_at: toString(e.created_at), updated_at: toString(e.updated_at)}
       END AS entity, score
ORDER BY score DESC, e.written, e.pos
LIMIT $want;

// The entity resolver's exact candidates (Neo4jGraphStore._entity_block, stores/
// neo4j/entity_vectors.py): a store holds a tenant's name vectors and scores them itself, since the
// HNSW index's top k is not exact. The tenant's plan number and epoch are read first, in a
// WITH of their own: every plan up to that number has committed, so its entities are visible
// to the read that follows (entities of later plans may come too, and are read again later).
// All of the tenant's entities, in write order, unless it has more than $max_rows (then only
// their number: the store leaves such a tenant to the index):
// name: entity_vectors_all
OPTIONAL MATCH (q:TenantSequence {tenant_key: $tenant_key})
WITH q.seq AS seq, q.epoch AS epoch
WITH seq, epoch, COUNT { MATCH (e:Entity) WHERE e.tenant_key = $tenant_key } AS size
RETURN seq, epoch, size, COLLECT {
  MATCH (e:Entity)
  WHERE size <= $max_rows AND e.tenant_key = $tenant_key AND e.embedding IS NOT NULL
  RETURN [e.id, e.embedding] AS row
  ORDER BY e.written, e.pos
} AS rows;

// Only those of plans after $since (a seek on the (tenant_key, seq) index):
// name: entity_vectors_since
OPTIONAL MATCH (q:TenantSequence {tenant_key: $tenant_key})
WITH q.seq AS seq, q.epoch AS epoch
RETURN seq, epoch, COLLECT {
  MATCH (e:Entity)
  WHERE e.tenant_key = $tenant_key AND e.seq > $since AND e.embedding IS NOT NULL
  RETURN [e.id, e.embedding] AS row
  ORDER BY e.seq, e.written, e.pos
} AS rows;

// A search's entity linking ranks the scope's names on the client (Neo4jGraphStore.
// name_ranker), from the vectors the store holds per tenant; the same rows bring each
// tenant's kept fact vector sum (facts.cypher, add_fact_vectors), which the search's fact
// half then needs no read of its own for. This brings the names up to date in one read: per tenant of the scope, its plan number and epoch first (as entity_vectors_all),
// then, where $held names a plan number the store holds of that tenant's current epoch, the
// entities of later plans (a seek on the (tenant_key, seq) index). A tenant with `since` null
// is new to the store (or was written again after a delete or a repair): the store reads it
// whole with entity_vectors_all. Seeks only: no tenant's entities are scanned here.
// name: scope_entity_vectors
CALL () {
  MATCH (q:TenantSequence) WHERE q.tenant_key = $seek_tenant_key RETURN q
  UNION ALL
  MATCH (q:TenantSequence) WHERE q.user_id = $seek_user_id RETURN q
  UNION ALL
  MATCH (q:TenantSequence)
  WHERE q.user_id = $seek_user_run[0] AND q.run_id = $seek_user_run[1] RETURN q
  UNION ALL
  MATCH (q:TenantSequence) WHERE q.agent_id = $seek_agent_id RETURN q
  UNION ALL
  MATCH (q:TenantSequence) WHERE q.run_id = $seek_run_id RETURN q
}
WITH q
WHERE q.seq IS NOT NULL
  AND ($user_id IS NULL OR q.user_id = $user_id)
  AND ($agent_id IS NULL OR q.agent_id = $agent_id)
  AND ($run_id IS NULL OR q.run_id = $run_id)
WITH q.tenant_key AS key, q.seq AS seq, coalesce(q.epoch, '') AS epoch,
     q.fact_vector_sum AS fact_sum
WITH key, seq, epoch, fact_sum, $held[key] AS mark
WITH key, seq, epoch, fact_sum,
     CASE WHEN mark IS NOT NULL AND mark.epoch = epoch THEN mark.seq END AS since
RETURN key, seq, epoch, since, fact_sum, COLLECT {
  MATCH (e:Entity)
  WHERE e.tenant_key = key AND e.seq > since AND e.embedding IS NOT NULL
  RETURN [e.id, e.embedding] AS row
  ORDER BY e.seq, e.written, e.pos
} AS rows
ORDER BY key;

// How many entities with a name vector the scope holds: a store checks it once per scope
// against the vectors it loaded by tenant sequence (entities written before mem0g kept one
// per tenant have none, and would be missed: such a scope is left to the index).
// name: scope_entity_count
CALL () {
  MATCH (e:Entity) WHERE e.tenant_key = $seek_tenant_key RETURN e
  UNION ALL
  MATCH (e:Entity) WHERE e.user_id = $seek_user_id RETURN e
  UNION ALL
  MATCH (e:Entity)
  WHERE e.user_id = $seek_user_run[0] AND e.run_id = $seek_user_run[1] RETURN e
  UNION ALL
  MATCH (e:Entity) WHERE e.agent_id = $seek_agent_id RETURN e
  UNION ALL
  MATCH (e:Entity) WHERE e.run_id = $seek_run_id RETURN e
}
WITH e
WHERE ($user_id IS NULL OR e.user_id = $user_id)
  AND ($agent_id IS NULL OR e.agent_id = $agent_id)
  AND ($run_id IS NULL OR e.run_id = $run_id)
  AND e.embedding IS NOT NULL
RETURN count(e) AS size;

// name: similar_relations_index
CALL db.index.vector.queryRelationships('mem0g_relation_embedding', $fetch, $vector)
YIELD relationship AS r, score
WITH r, score
WHERE ($user_id IS NULL OR r.user_id = $user_id)
  AND ($agent_id IS NULL OR r.agent_id = $agent_id)
  AND ($run_id IS NULL OR r.run_id = $run_id)
  AND ($include_invalid
       OR ($as_of IS NULL AND r.invalid_at IS NULL)
       OR ($as_of IS NOT NULL
           AND (r.valid_from IS NULL OR r.valid_from <= $as_of)
           AND (r.invalid_at IS NULL OR r.invalid_at > $as_of)))
MATCH (s:Entity)-[r]->(d:Entity)
RETURN CASE WHEN $light THEN r {.id, .name, source_id: s.id, destination_id: d.id}
            ELSE r {.*, source_id: s.id, destination_id: d.id, source_name: s.name,
                   destination_name: d.name, valid_from: toString(r.valid_from),
                   invalid_at: toString(r.invalid_at), created_at: toString(r.created_at),
                   updated_at: toString(r.updated_at),
                   provenance_at: [t IN coalesce(r.provenance_at, []) | toString(t)]}
            END AS relation, score
ORDER BY score DESC, r.ord
LIMIT $want;

// name: similar_relations_scan
CALL () {
  MATCH ()-[r:RELATES]->() WHERE r.tenant_key = $seek_tenant_key RETURN r
  UNION ALL
  MATCH ()-[r:RELATES]->() WHERE r.user_id = $seek_user_id RETURN r
  UNION ALL
  MATCH ()-[r:RELATES]->()
  WHERE r.user_id = $seek_user_run[0] AND r.run_id = $seek_user_run[1] RETURN r
  UNION ALL
  MATCH ()-[r:RELATES]->() WHERE r.agent_id = $seek_agent_id RETURN r
  UNION ALL
  MATCH ()-[r:RELATES]->() WHERE r.run_id = $seek_run_id RETURN r
}
WITH r
WHERE ($agent_id IS NULL OR r.agent_id = $agent_id)
  AND ($run_id IS NULL OR r.run_id = $run_id)
  AND r.embedding IS NOT NULL
  AND startNode(r):Entity AND endNode(r):Entity
  AND ($include_invalid
       OR ($as_of IS NULL AND r.invalid_at IS NULL)
       OR ($as_of IS NOT NULL
           AND (r.valid_from IS NULL OR r.valid_from <= $as_of)
           AND (r.invalid_at IS NULL OR r.invalid_at > $as_of)))
WITH r, CASE WHEN $zero_query OR coalesce(r.embedding_zero, false) THEN 0.5
             ELSE vector.similarity.cosine(r.embedding, $vector) END AS score
ORDER BY score DESC, r.ord
LIMIT $want
MATCH (s:Entity)-[r]->(d:Entity)
RETURN CASE WHEN $light THEN r {.id, .name, source_id: s.id, destination_id: d.id}
            ELSE r {.*, source_id: s.id, destination_id: d.id, source_name: s.name,
                   destination_name: d.name, valid_from: toString(r.valid_from),
                   invalid_at: toString(r.invalid_at), created_at: toString(r.created_at),
                   updated_at: toString(r.updated_at),
                   provenance_at: [t IN coalesce(r.provenance_at, []) | toString(t)]}
            END AS relation, score
ORDER BY score DESC, r.ord;

// Facts: only current facts are :Fact nodes (a deleted fact's node is gone). $centre (a unit
// vector, or null): the hubness correction's centre (GraphStore.similar_facts(hub=)); with it
// each row carries `near`, its cosine to the centre (0 without a vector), and no embedding,
// ranked by Neo4j's own score as $light relations are.
// name: similar_facts_index
CALL db.index.vector.queryNodes('mem0g_fact_embedding', $fetch, $vector)
YIELD node AS f, score
WITH f, score
WHERE ($user_id IS NULL OR f.user_id = $user_id)
  AND ($agent_id IS NULL OR f.agent_id = $agent_id)
  AND ($run_id IS NULL OR f.run_id = $run_id)
  AND (NOT $exact OR f.tenant_key = $tenant_key)
RETURN f {.*, embedding: CASE WHEN $centre IS NULL THEN f.embedding END,
          created_at: toString(f.created_at), updated_at: toString(f.updated_at),
          provenance_at: [t IN coalesce(f.provenance_at, []) | toString(t)]} AS fact, score,
       CASE WHEN $centre IS NULL THEN null
            WHEN coalesce(f.embedding_zero, false) THEN 0.0
            ELSE coalesce(2 * vector.similarity.cosine(f.embedding, $centre) - 1, 0.0)
            END AS near
ORDER BY score DESC, f.written, f.seq, f.pos
LIMIT $want;

// name: similar_facts_scan
CALL () {
  MATCH (f:Fact) WHERE f.tenant_key = $seek_tenant_key RETURN f
  UNION ALL
  MATCH (f:Fact) WHERE f.user_id = $seek_user_id RETURN f
  UNION ALL
  MATCH (f:Fact) WHERE f.user_id = $seek_user_run[0] AND f.run_id = $seek_user_run[1] RETURN f
  UNION ALL
  MATCH (f:Fact) WHERE f.agent_id = $seek_agent_id RETURN f
  UNION ALL
  MATCH (f:Fact) WHERE f.run_id = $seek_run_id RETURN f
}
WITH f
WHERE ($user_id IS NULL OR f.user_id = $user_id)
  AND ($agent_id IS NULL OR f.agent_id = $agent_id)
  AND ($run_id IS NULL OR f.run_id = $run_id)
  AND f.embedding IS NOT NULL
WITH f, CASE WHEN $zero_query OR coalesce(f.embedding_zero, false) THEN 0.5
             ELSE vector.similarity.cosine(f.embedding, $vector) END AS score
RETURN f {.*, embedding: CASE WHEN $centre IS NULL THEN f.embedding END,
          created_at: toString(f.created_at), updated_at: toString(f.updated_at),
          provenance_at: [t IN coalesce(f.provenance_at, []) | toString(t)]} AS fact, score,
       CASE WHEN $centre IS NULL THEN null
            WHEN coalesce(f.embedding_zero, false) THEN 0.0
            ELSE coalesce(2 * vector.similarity.cosine(f.embedding, $centre) - 1, 0.0)
            END AS near
ORDER BY score DESC, f.written, f.seq, f.pos
LIMIT $want;
