// Full-text (Lucene BM25) indexes over facts, relations and entity names, and their reads
// (mem0g/stores/neo4j/lexical.py). Relations and names: the `simple` analyzer (letter runs,
// lower-cased), which splits text as the embedded store's FTS5 tokenizer does; facts: the
// `english` analyzer (Porter stemming, as FTS5's `porter` there) over `lex_text`, the text's
// letter runs written by Python (lexical_query.indexed_words: the analyzer's own tokenizer
// keeps "covid19", "don't" or "node.js" whole, which no query term matches), so both stores
// rank alike.
// $query is built in Python from letter-only terms, each escaped and quoted, and requires the
// scope's terms in `lex_scope` at boost 0 (stores/lexical_query.py: digests of the ids,
// consonants only): no user text reaches Lucene's query syntax, and the index returns only
// the scope's rows, scored by the words alone. The reads still check the scope's ids (a
// second guard) and an edge's validity, and report how many hits the index returned, so the
// caller can ask again with a larger $fetch when the validity filter left too few. Equal
// scores: facts and edges by their indexed text, then id, as on the embedded store (the
// same content gives the same hits, whatever the random ids); entities by id.

// name: fulltext_index_facts
CREATE FULLTEXT INDEX mem0g_fact_words IF NOT EXISTS
FOR (f:Fact) ON EACH [f.lex_text, f.lex_scope]
OPTIONS {indexConfig: {`fulltext.analyzer`: 'english', `fulltext.eventually_consistent`: false}};

// name: fulltext_index_relations
CREATE FULLTEXT INDEX mem0g_relation_text IF NOT EXISTS
FOR ()-[r:RELATES]-() ON EACH [r.source, r.name, r.destination, r.lex_scope]
OPTIONS {indexConfig: {`fulltext.analyzer`: 'simple', `fulltext.eventually_consistent`: false}};

// name: fulltext_index_entities
CREATE FULLTEXT INDEX mem0g_entity_text IF NOT EXISTS
FOR (e:Entity) ON EACH [e.name, e.aliases, e.lex_scope]
OPTIONS {indexConfig: {`fulltext.analyzer`: 'simple', `fulltext.eventually_consistent`: false}};

// name: lexical_facts
CALL db.index.fulltext.queryNodes('mem0g_fact_words', $query, {limit: $fetch})
YIELD node, score
WITH collect({n: node, s: score}) AS hits
CALL (hits) {
  UNWIND hits AS h
  WITH h.n AS f, h.s AS score
  WHERE (NOT $exact OR f.tenant_key = $tenant_key)
    AND ($user_id IS NULL OR f.user_id = $user_id)
    AND ($agent_id IS NULL OR f.agent_id = $agent_id)
    AND ($run_id IS NULL OR f.run_id = $run_id)
  WITH f, score
  ORDER BY score DESC, f.text, f.id
  LIMIT $want
  RETURN collect({fact: f {.*, embedding: null, created_at: toString(f.created_at),
                           updated_at: toString(f.updated_at),
                           provenance_at: [t IN coalesce(f.provenance_at, []) | toString(t)]},
                  score: score}) AS found
}
RETURN size(hits) AS fetched, found;

// How many of the scope's current facts hold each word ($queries: one scoped Lucene query a
// word, built as for lexical_facts): each count stops past $share of the scope's facts (the
// index's limit), which is all the caller asks (Neo4jGraphStore.common_fact_words). The
// scope's facts are counted by its tenants' sequence nodes (facts.cypher, add_fact_vectors:
// the writes keep the count; counting the facts from the id indexes cost 2 of 3.5 ms at
// 10,000 facts). The hits are counted by their scores, no node read: the query requires the
// scope's terms (the same ids the searches' property checks compare), and reading each hit's
// ids cost twice the count (18 against 8 ms for a word in 10,000 facts of one scope).
// name: fact_word_counts
CALL () {
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
  WHERE ($user_id IS NULL OR q.user_id = $user_id)
    AND ($agent_id IS NULL OR q.agent_id = $agent_id)
    AND ($run_id IS NULL OR q.run_id = $run_id)
  RETURN coalesce(sum(q.fact_count), 0) AS facts
}
CALL (facts) {
  UNWIND range(0, size($queries) - 1) AS i
  CALL (i, facts) {
    CALL db.index.fulltext.queryNodes('mem0g_fact_words', $queries[i],
                                      {limit: toInteger(floor(facts * $share)) + 1})
    YIELD score
    RETURN count(score) AS holding
  }
  WITH i, holding ORDER BY i
  RETURN collect(holding) AS counts
}
RETURN facts, counts;

// name: lexical_relations
CALL db.index.fulltext.queryRelationships('mem0g_relation_text', $query, {limit: $fetch})
YIELD relationship, score
WITH collect({r: relationship, s: score}) AS hits
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
RETURN size(hits) AS fetched, found;

// name: lexical_entities
CALL db.index.fulltext.queryNodes('mem0g_entity_text', $query, {limit: $fetch})
YIELD node, score
WITH collect({n: node, s: score}) AS hits
CALL (hits) {
  UNWIND hits AS h
  WITH h.n AS e, h.s AS score
  WHERE ($user_id IS NULL OR e.user_id = $user_id)
    AND ($agent_id IS NULL OR e.agent_id = $agent_id)
    AND ($run_id IS NULL OR e.run_id = $run_id)
  WITH e, score
  ORDER BY score DESC, e.id
  LIMIT $want
  RETURN collect({entity: e {.*, embedding: null, created_at: toString(e.created_at),
                             updated_at: toString(e.updated_at)},
                  score: score}) AS found
}
RETURN size(hits) AS fetched, found;
