// The fact memory (Mem0) beside the graph: current facts, their history, the messages that
// extraction sees, and one running summary per exact tenant.
//
// A deleted fact's :Fact node goes; its :FactEvent nodes stay, so its history stays readable.
// Provenance is two parallel lists, as on :RELATES: episode_ids and provenance_at.
// Write order: every row of a plan carries $seq (the tenant's plan number from lock_tenant,
// in commit order) and pos (its place in the plan); `written` (client time, ns) orders rows of
// different tenants, whose seq numbers are unrelated.

// ---------------------------------------------------------------- writes (in apply's transaction)

// Returns the deleted facts' embeddings: the tenant's kept vector sum loses them
// (add_fact_vectors).
// name: delete_facts
UNWIND $ids AS id
MATCH (f:Fact {id: id})
WITH f, f.embedding AS embedding
DETACH DELETE f
RETURN embedding;

// Embeddings are float32 vector properties, as for entities (db.create.setNodeVectorProperty).
// name: create_facts
UNWIND $rows AS row
CREATE (f:Fact)
SET f = row.props, f.seq = $seq
WITH f, row
WHERE row.embedding IS NOT NULL
CALL db.create.setNodeVectorProperty(f, 'embedding', row.embedding);

// A changed stored fact: new text, the episodes that said it added to its provenance, and a
// new embedding only when the change carries one.
// Returns the embeddings replaced, for the tenant's kept vector sum (add_fact_vectors).
// name: update_facts
UNWIND $rows AS row
MATCH (f:Fact {id: row.id})
SET f.text = row.text, f.lex_text = row.lex_text, f.updated_at = $updated_at,
    f.episode_ids = coalesce(f.episode_ids, []) + row.episode_ids,
    f.provenance_at = coalesce(f.provenance_at, []) + row.provenance_at
WITH f, row, f.embedding AS old
WHERE row.embedding IS NOT NULL
SET f.embedding_zero = row.embedding_zero
WITH f, row, old
CALL db.create.setNodeVectorProperty(f, 'embedding', row.embedding)
RETURN old;

// The exact tenant's current facts' unit embeddings, summed, and how many; and how many facts
// it holds, with or without a vector ($facts: created less deleted): kept on its sequence node
// by every plan that adds, re-embeds or deletes a fact (Python sends the change, $delta, in
// float64, or null when no vector changed), under the lock lock_tenant took, so writers of
// one tenant never interleave. The sum goes back to null when the last vector goes (no
// rounding left behind). The count spares a search counting the scope's facts
// (lexical.cypher, fact_word_counts); it never goes below 0 (facts an older mem0g wrote after
// the upgrade were never counted).
// name: add_fact_vectors
MATCH (q:TenantSequence {tenant_key: $tenant_key})
WITH q, coalesce(q.fact_vectors, 0) + $count AS count, q.fact_vector_sum AS old,
     coalesce(q.fact_count, 0) + $facts AS facts
SET q.fact_count = CASE WHEN facts > 0 THEN facts ELSE 0 END,
    q.fact_vectors = CASE WHEN count > 0 THEN count END,
    q.fact_vector_sum = CASE
      WHEN count <= 0 THEN null
      WHEN $delta IS NULL THEN old
      WHEN old IS NULL THEN $delta
      ELSE [i IN range(0, size($delta) - 1) | old[i] + $delta[i]]
    END;

// name: create_fact_events
UNWIND $rows AS props
CREATE (ev:FactEvent)
SET ev = props, ev.seq = $seq;

// ---------------------------------------------------------------- reads

// The kept vector sums of the scope's tenants (add_fact_vectors): the scope's fact centroid
// for the dense ranking's hubness correction (retrieve/hubness.py), a few seeks, no fact read.
// name: fact_vector_sum
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
WHERE q.fact_vectors > 0
  AND ($user_id IS NULL OR q.user_id = $user_id)
  AND ($agent_id IS NULL OR q.agent_id = $agent_id)
  AND ($run_id IS NULL OR q.run_id = $run_id)
RETURN collect(q.fact_vector_sum) AS sums;

// name: get_facts
UNWIND range(0, size($ids) - 1) AS i
MATCH (f:Fact {id: $ids[i]})
WHERE ($user_id IS NULL OR f.user_id = $user_id)
  AND ($agent_id IS NULL OR f.agent_id = $agent_id)
  AND ($run_id IS NULL OR f.run_id = $run_id)
RETURN f {.*, created_at: toString(f.created_at), updated_at: toString(f.updated_at),
          provenance_at: [t IN coalesce(f.provenance_at, []) | toString(t)]} AS fact
ORDER BY i;

// The scope's current facts, oldest first; equal creation times keep write order.
// name: facts
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
WHERE ($agent_id IS NULL OR f.agent_id = $agent_id)
  AND ($run_id IS NULL OR f.run_id = $run_id)
RETURN f {.*, created_at: toString(f.created_at), updated_at: toString(f.updated_at),
          provenance_at: [t IN coalesce(f.provenance_at, []) | toString(t)]} AS fact
ORDER BY f.created_at, f.written, f.seq, f.pos, f.id;

// Every event of one fact in write order, which is the order the changes happened in even
// when the events' `at` values disagree. All events of a fact are one tenant's, so seq orders
// them by commit.
// name: fact_history
MATCH (ev:FactEvent)
WHERE ev.fact_id = $fact_id
  AND ($user_id IS NULL OR ev.user_id = $user_id)
  AND ($agent_id IS NULL OR ev.agent_id = $agent_id)
  AND ($run_id IS NULL OR ev.run_id = $run_id)
RETURN ev {.*} AS event
ORDER BY ev.seq, ev.pos, ev.written, ev.id;

// ---------------------------------------------------------------- messages of one exact tenant
// Episodes hold their messages as one JSON string plus message_count; conversation order is
// the episodes' commit order (seq), which only appends, so a summary's messages_covered stays
// a valid offset even when an episode is backdated.

// name: message_count
MATCH (ep:Episode)
WHERE ep.tenant_key = $tenant_key
RETURN coalesce(sum(ep.message_count), 0) AS n;

// The newest episodes holding the last $limit messages: every counted episode has at least
// one message, so $limit episodes are always enough. Python reverses them.
// name: recent_episodes
MATCH (ep:Episode)
WHERE ep.tenant_key = $tenant_key AND ep.message_count > 0
RETURN ep.messages AS messages, ep.message_count AS n
ORDER BY ep.seq DESC, ep.written DESC, ep.created_at DESC, ep.id DESC
LIMIT $limit;

// Sizes only, to find which episodes hold the messages after an offset.
// name: episode_sizes
MATCH (ep:Episode)
WHERE ep.tenant_key = $tenant_key
RETURN ep.id AS id, ep.message_count AS n
ORDER BY ep.seq, ep.written, ep.created_at, ep.id;

// name: episode_messages
UNWIND range(0, size($ids) - 1) AS i
MATCH (ep:Episode {id: $ids[i]})
RETURN ep.messages AS messages
ORDER BY i;

// ---------------------------------------------------------------- summaries

// name: get_summary
MATCH (s:Summary {tenant_key: $tenant_key})
RETURN s {.*} AS summary;

// Its own small transaction; replaced in place, one node per exact tenant. `text` comes back
// null only when MERGE found a summary that a delete_tenant then deleted (Python retries).
// name: set_summary
MERGE (s:Summary {tenant_key: $tenant_key})
SET s += $props
RETURN s.text AS text;

// Every fact event of the scope with the conversation time of the episode it came from
// (null for a user's direct edit): what `as_of` reads to know which text of each fact was
// true at a time (retrieve/timeline.py). Per fact in write order, the facts in the write
// order of their first events, as the embedded store returns them: the `as_of` ranking keeps
// this order for equal scores, and by fact id it was the order of random ids.
// name: fact_timeline
CALL () {
  MATCH (ev:FactEvent) WHERE ev.tenant_key = $seek_tenant_key RETURN ev
  UNION ALL
  MATCH (ev:FactEvent) WHERE ev.user_id = $seek_user_id RETURN ev
  UNION ALL
  MATCH (ev:FactEvent)
  WHERE ev.user_id = $seek_user_run[0] AND ev.run_id = $seek_user_run[1] RETURN ev
  UNION ALL
  MATCH (ev:FactEvent) WHERE ev.agent_id = $seek_agent_id RETURN ev
  UNION ALL
  MATCH (ev:FactEvent) WHERE ev.run_id = $seek_run_id RETURN ev
}
WITH ev
WHERE ($agent_id IS NULL OR ev.agent_id = $agent_id)
  AND ($run_id IS NULL OR ev.run_id = $run_id)
WITH ev ORDER BY ev.seq, ev.pos, ev.written, ev.id
WITH ev.fact_id AS fact_id, collect(ev) AS events
UNWIND range(0, size(events) - 1) AS i
WITH events[0] AS first, i, events[i] AS ev
OPTIONAL MATCH (ep:Episode {id: ev.episode_id})
RETURN ev {.*} AS event, toString(ep.timestamp) AS said
ORDER BY first.written, first.pos, first.id, i;
