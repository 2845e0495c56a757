// A tenant's recent graph changes: edges created and edges invalidated, newest first.
// A table, one row per change (an edge created and later invalidated gives two rows).
//
// Parameters: the last $days days (null: no time window) and at most $limit rows, so
// `:param days => null` gives "the latest $limit changes". The tenant is picked by $user_id;
// $agent_id and $run_id narrow it (null: any).
//
// Time: recorded_at is when mem0g wrote the change (the edge's created_at; for an
// invalidation its updated_at, which is the time of the invalidation unless a later mention
// touched the edge). valid_from / invalid_at are conversation time.
:param user_id => 'maya';
:param agent_id => null;
:param run_id => null;
:param days => 30;
:param limit => 50;

MATCH (s:Entity)-[r:RELATES]->(d:Entity)
WHERE r.user_id = $user_id
  AND ($agent_id IS NULL OR r.agent_id = $agent_id)
  AND ($run_id IS NULL OR r.run_id = $run_id)
UNWIND [{change: 'created', at: r.created_at, order: 0}]
       + CASE WHEN r.invalid_at IS NULL THEN []
              ELSE [{change: 'invalidated', at: r.updated_at, order: 1}] END AS c
WITH s, r, d, c
WHERE $days IS NULL OR c.at >= datetime() - duration({days: $days})
RETURN c.at AS recorded_at,
       c.change AS change,
       s.name AS source,
       r.name AS relation,
       d.name AS destination,
       r.valid_from AS valid_from,
       r.invalid_at AS invalid_at,
       r.id AS edge_id
ORDER BY recorded_at DESC, c.order DESC, r.written DESC, r.pos DESC, edge_id
LIMIT $limit;
