// The store's own data as warm-up queries (mem0g/stores/neo4j/warmup.py): up to $limit valid
// edges with an embedding (a query vector, the source entity as a seed, its first key as a
// name, "relation destination" as words) and up to $limit facts (vector, text), each with the
// ids of its exact tenant, which alone its warm-up search reads. The first ones the scans
// meet: a bounded read, at most 2 x $limit rows.

// name: warmup_sample
CALL () {
  MATCH (s:Entity)-[r:RELATES]->(d:Entity)
  WHERE r.invalid_at IS NULL AND r.embedding IS NOT NULL
  WITH s, r, d
  LIMIT $limit
  RETURN 'edge' AS kind, r.user_id AS user_id, r.agent_id AS agent_id, r.run_id AS run_id,
         s.id AS seed, s.keys[0] AS key, r.name + ' ' + d.name AS text, r.embedding AS vector
  UNION ALL
  MATCH (f:Fact)
  WHERE f.embedding IS NOT NULL
  WITH f
  LIMIT $limit
  RETURN 'fact' AS kind, f.user_id AS user_id, f.agent_id AS agent_id, f.run_id AS run_id,
         null AS seed, null AS key, f.text AS text, f.embedding AS vector
}
RETURN kind, user_id, agent_id, run_id, seed, key, text, vector;
