// Reads by id, by name key, around entities, and per tenant.
//
// Parameters shared by the scoped reads:
//   $user_id, $agent_id, $run_id  the scope; an unset (null) id matches anything
//   $exact, $tenant_key           exact=true: only records whose tenant_key equals the scope's
//   $include_invalid, $as_of      the Validity of edge reads
// Scans of a whole tenant start from a UNION ALL of index seeks ("anchors"), one branch per
// index: $seek_tenant_key, $seek_user_id, $seek_user_run ([user_id, run_id], the composite
// indexes), $seek_agent_id, $seek_run_id. The store sets exactly one of them (rows._seek):
// the server runs every branch whatever parameter-only predicates say, and a seek of null
// reads nothing, so a small tenant in a large shared database costs its own rows.
// Rows come back in write order (written, pos: the apply call and the position in its plan;
// an edge holds them as one sortable key, `ord`, plan_rows.write_order).

// $light: without the embedding (a search's linked entities: names and ids are enough).
// name: get_entities
UNWIND range(0, size($ids) - 1) AS i
MATCH (e:Entity {id: $ids[i]})
WHERE ($user_id IS NULL OR e.user_id = $user_id)
  AND ($agent_id IS NULL OR e.agent_id = $agent_id)
  AND ($run_id IS NULL OR e.run_id = $run_id)
RETURN CASE WHEN $light
            THEN e {.id, .name, .type, .aliases, .keys, .user_id, .agent_id, .run_id,
                    .tenant_key, created_at: toString(e.created_at),
                    updated_at: toString(e.updated_at)}
            ELSE e {.*, created_at: toString(e.created_at), updated_at: toString(e.updated_at)}
       END AS entity
ORDER BY i;

// name: get_relations
UNWIND range(0, size($ids) - 1) AS i
MATCH (s:Entity)-[r:RELATES {id: $ids[i]}]->(d:Entity)
WHERE ($user_id IS NULL OR r.user_id = $user_id)
  AND ($agent_id IS NULL OR r.agent_id = $agent_id)
  AND ($run_id IS NULL OR r.run_id = $run_id)
RETURN r {.*, source_id: s.id, destination_id: d.id, source_name: s.name,
          destination_name: d.name, valid_from: toString(r.valid_from),
          invalid_at: toString(r.invalid_at), created_at: toString(r.created_at),
          updated_at: toString(r.updated_at),
          provenance_at: [t IN coalesce(r.provenance_at, []) | toString(t)]} AS relation
ORDER BY i;

// Entities having any of $keys among their normalised name/alias keys, ordered by the first
// key they match, then by write order. Seeks the (:EntityKey) index per key: the cost follows
// the matches, not the size of the tenant.
// name: find_entities
UNWIND range(0, size($keys) - 1) AS i
CALL (i) {
  MATCH (k:EntityKey) WHERE $exact AND k.tenant_key = $tenant_key AND k.key = $keys[i]
  RETURN k
  UNION ALL
  MATCH (k:EntityKey) WHERE NOT $exact AND k.user_id = $user_id AND k.key = $keys[i]
  RETURN k
  UNION ALL
  MATCH (k:EntityKey)
  WHERE NOT $exact AND $user_id IS NULL AND k.agent_id = $agent_id AND k.key = $keys[i]
  RETURN k
  UNION ALL
  MATCH (k:EntityKey)
  WHERE NOT $exact AND $user_id IS NULL AND $agent_id IS NULL AND k.run_id = $run_id
    AND k.key = $keys[i]
  RETURN k
}
MATCH (k)-[:KEY_OF]->(e:Entity)
WHERE ($user_id IS NULL OR e.user_id = $user_id)
  AND ($agent_id IS NULL OR e.agent_id = $agent_id)
  AND ($run_id IS NULL OR e.run_id = $run_id)
WITH e, min(i) AS first_key
RETURN e {.*, created_at: toString(e.created_at), updated_at: toString(e.updated_at)} AS entity
ORDER BY first_key, e.written, e.pos, e.created_at, e.id;

// The edges at each of $ids (one hop, direction ignored) that the scope and validity accept:
// per seed in the given order, a self-loop once; outgoing before incoming, each in write
// order (relations_touching), or with $newest_first both directions together, newest first
// (each breadth-first step of expand: its cut keeps a hub's latest edges). $vector set: each
// edge comes back light (ids, relation, score = cosine to $vector; 0 without an embedding) for
// expand(vector=), which ranks hundreds of them and reads only the winners in full.
// $row_limit: expand needs only the first rows of a hop (a hub holds thousands of edges).
// name: edges_at
UNWIND range(0, size($ids) - 1) AS i
MATCH (n:Entity {id: $ids[i]})
CALL (n) {
  MATCH (n)-[r:RELATES]->(m:Entity)
  RETURN r, n AS s, m AS d, 0 AS direction
  UNION ALL
  MATCH (n)<-[r:RELATES]-(m:Entity)
  WHERE m <> n
  RETURN r, m AS s, n AS d, 1 AS direction
}
WITH i, direction, r, s, d
WHERE ($user_id IS NULL OR r.user_id = $user_id)
  AND ($agent_id IS NULL OR r.agent_id = $agent_id)
  AND ($run_id IS NULL OR r.run_id = $run_id)
  AND (NOT $exact OR r.tenant_key = $tenant_key)
  AND ($include_invalid
       OR ($as_of IS NULL AND r.invalid_at IS NULL)
       OR ($as_of IS NOT NULL
           AND (r.valid_from IS NULL OR r.valid_from <= $as_of)
           AND (r.invalid_at IS NULL OR r.invalid_at > $as_of)))
WITH i, direction, r, s, d
ORDER BY i, CASE WHEN $newest_first THEN 0 ELSE direction END,
         CASE WHEN $newest_first THEN null ELSE r.ord END, r.ord DESC
LIMIT $row_limit
RETURN i, CASE WHEN $vector IS NULL
            THEN r {.*, source_id: s.id, destination_id: d.id, source_name: s.name,
                   destination_name: d.name, valid_from: toString(r.valid_from),
                   invalid_at: toString(r.invalid_at), created_at: toString(r.created_at),
                   updated_at: toString(r.updated_at),
                   provenance_at: [t IN coalesce(r.provenance_at, []) | toString(t)]}
            ELSE r {.id, .name, source_id: s.id, destination_id: d.id,
                    score: CASE WHEN coalesce(r.embedding_zero, false) THEN 0.0
                                ELSE coalesce(2 * vector.similarity.cosine(r.embedding, $vector)
                                              - 1, 0.0) END}
            END AS relation
ORDER BY i, CASE WHEN $newest_first THEN 0 ELSE direction END,
         CASE WHEN $newest_first THEN null ELSE r.ord END, r.ord DESC;

// The existing edges an add's new triples may replace (Neo4jGraphStore.update_candidates):
// per row {source_id, relation, destination_id, vector}, the exact tenant's current edges at
// either endpoint, identical first, then rivals (same source and relation), then by cosine to
// the row's vector, newest first; the $k best, without their embeddings. The server scores a
// hub's hundreds of edges where they lie instead of sending them all, vectors and all.
// name: update_candidates
UNWIND range(0, size($rows) - 1) AS i
WITH i, $rows[i] AS q
CALL (q) {
  MATCH (n:Entity)
  WHERE n.id IN [q.source_id, q.destination_id]
  CALL (n) {
    MATCH (n)-[r:RELATES]->(m:Entity)
    RETURN r, n AS s, m AS d
    UNION ALL
    MATCH (n)<-[r:RELATES]-(m:Entity)
    WHERE m <> n
    RETURN r, m AS s, n AS d
  }
  WITH DISTINCT r, s, d
  WHERE r.tenant_key = $tenant_key AND r.invalid_at IS NULL
  WITH r, s, d, s.id = q.source_id AND r.name = q.relation AS rival,
       CASE WHEN q.vector IS NULL OR r.embedding IS NULL OR coalesce(r.embedding_zero, false)
                 OR size(r.embedding) <> size(q.vector)
            THEN 0.0
            ELSE coalesce(2 * vector.similarity.cosine(r.embedding, q.vector) - 1, 0.0)
       END AS score
  ORDER BY rival AND d.id = q.destination_id DESC, rival DESC, score DESC, r.ord DESC
  LIMIT $k
  RETURN collect(r {.*, embedding: null, source_id: s.id, destination_id: d.id,
                    source_name: s.name, destination_name: d.name,
                    valid_from: toString(r.valid_from), invalid_at: toString(r.invalid_at),
                    created_at: toString(r.created_at), updated_at: toString(r.updated_at),
                    provenance_at: [t IN coalesce(r.provenance_at, []) | toString(t)]}) AS edges
}
RETURN i, edges
ORDER BY i;

// The sibling edges of the retriever ("who works with X" -> X's coworkers): per key
// {hub_id, relation, hub_is_destination}, in key order, the edges (x)-[relation]->(hub)
// (hub_is_destination) or (hub)-[relation]->(x) (not), that the scope and validity accept.
// The hub is sought by its unique id and only the needed direction is expanded (the other
// branch is switched off by its key alone), the relation name is compared before anything
// else; an edge two keys match counts for the first. Rows are cut to $limit in key order, then
// newest first in write order (as expand's), before the light projection (ids, relation,
// score = cosine to $vector; 0 without an embedding, as edges_at scores for expand(vector=)).
// name: sibling_edges
UNWIND range(0, size($keys) - 1) AS i
WITH i, $keys[i] AS key
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
LIMIT $limit
RETURN r {.id, .name, source_id: s.id, destination_id: d.id,
          score: CASE WHEN coalesce(r.embedding_zero, false) THEN 0.0
                      ELSE coalesce(2 * vector.similarity.cosine(r.embedding, $vector) - 1, 0.0)
                 END} AS relation
ORDER BY first_key, r.ord DESC;

// name: episodes
CALL () {
  MATCH (ep:Episode) WHERE ep.tenant_key = $seek_tenant_key RETURN ep
  UNION ALL
  MATCH (ep:Episode) WHERE ep.user_id = $seek_user_id RETURN ep
  UNION ALL
  MATCH (ep:Episode)
  WHERE ep.user_id = $seek_user_run[0] AND ep.run_id = $seek_user_run[1] RETURN ep
  UNION ALL
  MATCH (ep:Episode) WHERE ep.agent_id = $seek_agent_id RETURN ep
  UNION ALL
  MATCH (ep:Episode) WHERE ep.run_id = $seek_run_id RETURN ep
}
WITH ep
WHERE ($agent_id IS NULL OR ep.agent_id = $agent_id)
  AND ($run_id IS NULL OR ep.run_id = $run_id)
RETURN ep {.*} AS episode
ORDER BY ep.written, ep.created_at, ep.id;

// The exact tenant's version (Neo4jGraphStore.tenant_version): its plan number and epoch, as
// lock_tenant leaves them; no node means a tenant never written (or deleted).
// name: tenant_version
OPTIONAL MATCH (q:TenantSequence {tenant_key: $tenant_key})
RETURN q.epoch AS epoch, q.seq AS seq;

// The versions of every exact tenant of a scope (Neo4jGraphStore.scope_versions): a client-held
// copy of the scope (memory/copy.py) answers a search only while these equal the versions it
// copied. A few seeks on the sequence nodes' id indexes, no record read.
// name: scope_versions
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
WHERE ($agent_id IS NULL OR q.agent_id = $agent_id)
  AND ($run_id IS NULL OR q.run_id = $run_id)
RETURN q.tenant_key AS key, q.epoch AS epoch, q.seq AS seq;

// The logged plans of an exact tenant after plan number $seq up to $until (log_plan), in
// order: a client-held copy catches up with them when they are all there and of its epoch.
// name: plan_log_since
MATCH (p:PlanLog)
WHERE p.tenant_key = $tenant_key AND p.seq > $seq AND p.seq <= $until
RETURN p.epoch AS epoch, p.seq AS seq, p.plan AS plan
ORDER BY p.seq;

// Every exact tenant key in use, read from the tenant_key indexes (a tenant whose only records
// are facts, fact history or a summary counts too).
// name: tenants
CALL () {
  MATCH (e:Entity) WHERE e.tenant_key IS NOT NULL RETURN DISTINCT e.tenant_key AS key
  UNION
  MATCH ()-[r:RELATES]->() WHERE r.tenant_key IS NOT NULL RETURN DISTINCT r.tenant_key AS key
  UNION
  MATCH (ep:Episode) WHERE ep.tenant_key IS NOT NULL RETURN DISTINCT ep.tenant_key AS key
  UNION
  MATCH (f:Fact) WHERE f.tenant_key IS NOT NULL RETURN DISTINCT f.tenant_key AS key
  UNION
  MATCH (ev:FactEvent) WHERE ev.tenant_key IS NOT NULL RETURN DISTINCT ev.tenant_key AS key
  UNION
  MATCH (s:Summary) WHERE s.tenant_key IS NOT NULL RETURN DISTINCT s.tenant_key AS key
}
RETURN key;

// Whole-database counts come from the count store and the invalid_at index. Edges count
// when they leave an :Entity (a foreign :RELATES elsewhere in the database does not). A
// :Fact node is a current fact (a delete removes it); one counts when it has a tenant, as
// every tenant's `facts` would return it, from the tenant_key index without reading it.
// name: stats_all
CALL () { MATCH (e:Entity) RETURN count(e) AS entities }
CALL () { MATCH (:Entity)-[r:RELATES]->() RETURN count(r) AS relations }
CALL () {
  MATCH (s)-[r:RELATES]->() WHERE r.invalid_at IS NOT NULL AND s:Entity
  RETURN count(r) AS invalid
}
CALL () { MATCH (ep:Episode) RETURN count(ep) AS episodes }
CALL () { MATCH (f:Fact) WHERE f.tenant_key IS NOT NULL RETURN count(f) AS facts }
RETURN entities, relations, invalid, episodes, facts;

// name: stats_scope
CALL () {
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
  WHERE ($agent_id IS NULL OR e.agent_id = $agent_id)
    AND ($run_id IS NULL OR e.run_id = $run_id)
  RETURN count(e) AS entities, collect(DISTINCT e.tenant_key) AS entity_keys
}
CALL () {
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
    AND startNode(r):Entity AND endNode(r):Entity
  RETURN count(r) AS relations, count(r.invalid_at) AS invalid,
         collect(DISTINCT r.tenant_key) AS relation_keys
}
CALL () {
  CALL () {
    MATCH (ep:Episode) WHERE ep.tenant_key = $seek_tenant_key RETURN ep
    UNION ALL
    MATCH (ep:Episode) WHERE ep.user_id = $seek_user_id RETURN ep
    UNION ALL
    MATCH (ep:Episode)
    WHERE ep.user_id = $seek_user_run[0] AND ep.run_id = $seek_user_run[1] RETURN ep
    UNION ALL
    MATCH (ep:Episode) WHERE ep.agent_id = $seek_agent_id RETURN ep
    UNION ALL
    MATCH (ep:Episode) WHERE ep.run_id = $seek_run_id RETURN ep
  }
  WITH ep
  WHERE ($agent_id IS NULL OR ep.agent_id = $agent_id)
    AND ($run_id IS NULL OR ep.run_id = $run_id)
  RETURN count(ep) AS episodes, collect(DISTINCT ep.tenant_key) AS episode_keys
}
// Tenants whose only records are facts, fact history or a summary count as tenants too; the
// :Fact rows are the scope's current facts, the ones `facts` returns (same filter).
CALL () {
  CALL () {
    MATCH (f:Fact) WHERE f.tenant_key = $seek_tenant_key RETURN f AS n
    UNION ALL
    MATCH (f:Fact) WHERE f.user_id = $seek_user_id RETURN f AS n
    UNION ALL
    MATCH (f:Fact)
    WHERE f.user_id = $seek_user_run[0] AND f.run_id = $seek_user_run[1] RETURN f AS n
    UNION ALL
    MATCH (f:Fact) WHERE f.agent_id = $seek_agent_id RETURN f AS n
    UNION ALL
    MATCH (f:Fact) WHERE f.run_id = $seek_run_id RETURN f AS n
    UNION ALL
    MATCH (ev:FactEvent) WHERE ev.tenant_key = $seek_tenant_key RETURN ev AS n
    UNION ALL
    MATCH (ev:FactEvent) WHERE ev.user_id = $seek_user_id RETURN ev AS n
    UNION ALL
    MATCH (ev:FactEvent)
    WHERE ev.user_id = $seek_user_run[0] AND ev.run_id = $seek_user_run[1] RETURN ev AS n
    UNION ALL
    MATCH (ev:FactEvent) WHERE ev.agent_id = $seek_agent_id RETURN ev AS n
    UNION ALL
    MATCH (ev:FactEvent) WHERE ev.run_id = $seek_run_id RETURN ev AS n
    UNION ALL
    MATCH (s:Summary) WHERE s.tenant_key = $seek_tenant_key RETURN s AS n
    UNION ALL
    MATCH (s:Summary) WHERE s.user_id = $seek_user_id RETURN s AS n
    UNION ALL
    MATCH (s:Summary)
    WHERE s.user_id = $seek_user_run[0] AND s.run_id = $seek_user_run[1] RETURN s AS n
    UNION ALL
    MATCH (s:Summary) WHERE s.agent_id = $seek_agent_id RETURN s AS n
    UNION ALL
    MATCH (s:Summary) WHERE s.run_id = $seek_run_id RETURN s AS n
  }
  WITH n
  WHERE ($agent_id IS NULL OR n.agent_id = $agent_id)
    AND ($run_id IS NULL OR n.run_id = $run_id)
  RETURN count(CASE WHEN n:Fact THEN n END) AS facts,
         collect(DISTINCT n.tenant_key) AS fact_keys
}
RETURN entities, relations, invalid, episodes, facts,
       entity_keys + relation_keys + episode_keys + fact_keys AS keys;
