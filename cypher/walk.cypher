// The graph half of a search after linking, in one round trip (Neo4jGraphStore.walk; the rules
// in mem0g/stores/walk.py, whose `walk_in_turn` answers the same by separate reads):
//   hop1      edges_at for the seeds $ids, light and scored (expand(hops=1, vector=)): each
//             edge once at its first sighting, in seed order, then newest first in write
//             order (both directions together), at most $limit of them (cut at 2 x $limit
//             rows first, as expand does);
//   keys      the hubs of the $hubs best-scoring hop-1 edges (sibling_keys: scores rounded to
//             5 digits, ties in walk order; a key once);
//   siblings  sibling_edges for those keys (newest first), at most $sibling_limit;
//   fetched, found   lexical_relations with $query ($query null: no BM25 read);
//   records   the full rows (no embedding) of $rows, of the best $top of the graph ranking
//             (cosine / hop, each edge once) and of the best $top BM25 hits.
// Each part is a CALL that aggregates, so an empty part is an empty list, never no row.
// Scores are the cosine of edges_at: 2 x Neo4j's (1 + cos) / 2 - 1; 0 without an embedding.

// name: walk
CALL () {
  UNWIND range(0, size($ids) - 1) AS i
  MATCH (n:Entity {id: $ids[i]})
  CALL (n) {
    MATCH (n)-[r:RELATES]->(m:Entity)
    RETURN r, n AS s, m AS d
    UNION ALL
    MATCH (n)<-[r:RELATES]-(m:Entity)
    WHERE m <> n
    RETURN r, m AS s, n AS d
  }
  WITH i, r, s, d
  WHERE ($user_id IS NULL OR r.user_id = $user_id)
    AND ($agent_id IS NULL OR r.agent_id = $agent_id)
    AND ($run_id IS NULL OR r.run_id = $run_id)
    AND (NOT $exact OR r.tenant_key = $tenant_key)
    AND ($include_invalid
         OR ($as_of IS NULL AND r.invalid_at IS NULL)
         OR ($as_of IS NOT NULL
             AND (r.valid_from IS NULL OR r.valid_from <= $as_of)
             AND (r.invalid_at IS NULL OR r.invalid_at > $as_of)))
  WITH i, r, s, d
  ORDER BY i, r.ord DESC
  LIMIT $row_limit
  WITH r, s, d, min(i) AS first
  ORDER BY first, r.ord DESC
  LIMIT $limit
  RETURN collect(r {.id, .name, source_id: s.id, destination_id: d.id,
                    score: CASE WHEN coalesce(r.embedding_zero, false) THEN 0.0
                                ELSE coalesce(2 * vector.similarity.cosine(r.embedding, $vector)
                                              - 1, 0.0) END}) AS hop1
}
CALL (hop1) {
  UNWIND range(0, size(hop1) - 1) AS x
  WITH hop1[x] AS e, x
  ORDER BY round(e.score, 5) DESC, x
  WITH collect(e) AS ordered
  RETURN reduce(keys = [], e IN ordered |
    CASE WHEN size(keys) >= $hubs THEN keys
    ELSE reduce(acc = keys, key IN
           CASE WHEN e.source_id IN $ids
                THEN [{hub_id: e.destination_id, relation: e.name, hub_is_destination: true}]
                ELSE [] END
           + CASE WHEN e.destination_id IN $ids
                  THEN [{hub_id: e.source_id, relation: e.name, hub_is_destination: false}]
                  ELSE [] END |
           CASE WHEN size(acc) >= $hubs OR key IN acc THEN acc ELSE acc + [key] END)
    END) AS keys
}
CALL (keys) {
  UNWIND range(0, size(keys) - 1) AS i
  WITH i, keys[i] AS key
  MATCH (h:Entity {id: key.hub_id})
  CALL (h, key) {
    MATCH (h)<-[r:RELATES]-(x:Entity)
    WHERE key.hub_is_destination AND r.name = key.relation
    RETURN r, x AS s, h AS d
    UNION ALL
    MATCH (h)-[r:RELATES]->(x:Entity)
    WHERE NOT key.hub_is_destination AND r.name = key.relation
    RETURN r, h AS s, x AS d
  }
  WITH i, r, s, d
  WHERE ($user_id IS NULL OR r.user_id = $user_id)
    AND ($agent_id IS NULL OR r.agent_id = $agent_id)
    AND ($run_id IS NULL OR r.run_id = $run_id)
    AND ($include_invalid
         OR ($as_of IS NULL AND r.invalid_at IS NULL)
         OR ($as_of IS NOT NULL
             AND (r.valid_from IS NULL OR r.valid_from <= $as_of)
             AND (r.invalid_at IS NULL OR r.invalid_at > $as_of)))
  WITH r, s, d, min(i) AS first_key
  ORDER BY first_key, r.ord DESC
  LIMIT $sibling_limit
  RETURN collect(r {.id, .name, source_id: s.id, destination_id: d.id,
                    score: CASE WHEN coalesce(r.embedding_zero, false) THEN 0.0
                                ELSE coalesce(2 * vector.similarity.cosine(r.embedding, $vector)
                                              - 1, 0.0) END}) AS siblings
}
CALL () {
  CALL () {
    WITH $query AS q
    WHERE q IS NOT NULL
    CALL db.index.fulltext.queryRelationships('mem0g_relation_text', q, {limit: $fetch})
    YIELD relationship, score
    RETURN relationship AS r, score
  }
  WITH collect({r: r, s: score}) AS hits
  CALL (hits) {
    UNWIND hits AS h
    WITH h.r AS r, h.s AS score
    WHERE ($user_id IS NULL OR r.user_id = $user_id)
      AND ($agent_id IS NULL OR r.agent_id = $agent_id)
      AND ($run_id IS NULL OR r.run_id = $run_id)
      AND ($include_invalid
           OR ($as_of IS NULL AND r.invalid_at IS NULL)
           OR ($as_of IS NOT NULL
               AND (r.valid_from IS NULL OR r.valid_from <= $as_of)
               AND (r.invalid_at IS NULL OR r.invalid_at > $as_of)))
    WITH r, score, startNode(r) AS s, endNode(r) AS d
    WHERE s:Entity AND d:Entity
    WITH r, score, s, d
    ORDER BY score DESC, r.source + ' ' + r.name + ' ' + r.destination, r.id
    LIMIT $want
    RETURN collect({id: r.id, name: r.name, source_id: s.id, destination_id: d.id,
                    score: score}) AS found
  }
  RETURN size(hits) AS fetched, found
}
CALL (hop1, siblings, found) {
  WITH hop1 + siblings AS walked, size(hop1) AS near
  UNWIND range(0, size(walked) - 1) AS x
  WITH walked[x].id AS id, min(x) AS x, walked, near
  WITH id, x, walked[x].score / CASE WHEN x < near THEN 1 ELSE 2 END AS score
  ORDER BY score DESC, x
  LIMIT $top
  WITH collect(id) AS best
  RETURN best + [h IN found[..$top] | h.id] AS best
}
CALL (best) {
  UNWIND range(0, size($rows + best) - 1) AS i
  WITH ($rows + best)[i] AS rid, i
  WITH rid, min(i) AS i
  MATCH (s:Entity)-[r:RELATES {id: rid}]->(d:Entity)
  WHERE ($user_id IS NULL OR r.user_id = $user_id)
    AND ($agent_id IS NULL OR r.agent_id = $agent_id)
    AND ($run_id IS NULL OR r.run_id = $run_id)
  WITH r, s, d, i
  ORDER BY i
  RETURN collect(r {.*, embedding: null, source_id: s.id, destination_id: d.id,
                    source_name: s.name, destination_name: d.name,
                    valid_from: toString(r.valid_from), invalid_at: toString(r.invalid_at),
                    created_at: toString(r.created_at), updated_at: toString(r.updated_at),
                    provenance_at: [t IN coalesce(r.provenance_at, []) | toString(t)]})
         AS records
}
RETURN hop1, siblings, fetched, found, records
