// Fact <-> entity links: (:Fact)-[:NAMES]->(:Entity), the fact names the entity (one of its
// keys is a word n-gram of the fact's text; mem0g/resolve/links.py decides which, at add time).
// Written in apply's transaction after the facts; a fact's DETACH DELETE (delete_facts,
// delete_tenant, reset) and an entity's (delete_entity) take their links with them.

// ---------------------------------------------------------------- writes

// A changed fact's stored links go first: the plan carries its whole new set.
// name: unlink_facts
UNWIND $ids AS id
MATCH (:Fact {id: id})-[n:NAMES]->(:Entity)
DELETE n;

// name: link_facts
UNWIND $rows AS row
MATCH (f:Fact {id: row.fact_id})
WHERE f.tenant_key = $tenant_key
MATCH (e:Entity {id: row.entity_id})
WHERE e.tenant_key = $tenant_key
MERGE (f)-[:NAMES]->(e);

// A merge: other's links move onto keep (before other is deleted).
// name: merge_links
MATCH (f:Fact)-[n:NAMES]->(o:Entity {id: $other_id})
WHERE o.tenant_key = $tenant_key
MATCH (k:Entity {id: $keep_id})
WHERE k.tenant_key = $tenant_key
MERGE (f)-[:NAMES]->(k)
DELETE n;

// A split: the facts linked to keep, with their texts (the links are recomputed from them).
// name: linked_to
MATCH (f:Fact)-[:NAMES]->(e:Entity {id: $id})
WHERE e.tenant_key = $tenant_key
RETURN f.id AS id, f.text AS text;

// name: unlink_between
UNWIND $facts AS id
MATCH (:Fact {id: id})-[n:NAMES]->(e:Entity)
WHERE e.id IN $entities
DELETE n;

// ---------------------------------------------------------------- reads

// The scope's facts linked to any of the entities, most of them named first, then by
// Neo4j's cosine (Python re-scores the rows with the embedded store's arithmetic), then
// write order; $fetch rows at most.
// name: linked_facts
MATCH (e:Entity)
WHERE e.id IN $entity_ids
  AND ($user_id IS NULL OR e.user_id = $user_id)
  AND ($agent_id IS NULL OR e.agent_id = $agent_id)
  AND ($run_id IS NULL OR e.run_id = $run_id)
MATCH (f:Fact)-[:NAMES]->(e)
WITH f, count(DISTINCT e) AS named
WITH f, named,
     CASE WHEN $zero_query OR f.embedding IS NULL OR coalesce(f.embedding_zero, false) THEN 0.0
          ELSE vector.similarity.cosine(f.embedding, $vector) END AS score
ORDER BY named DESC, score DESC, f.written, f.seq, f.pos
LIMIT $fetch
RETURN f.id AS id, named,
       CASE WHEN coalesce(f.embedding_zero, false) THEN null ELSE f.embedding END AS embedding;
