"""Benchmark `Memory.search` latency against query-embedding latency, and `add` overhead.

For each size N a fresh store gets one target tenant of N synthetic edges (people, companies,
cities, hobbies, universities), written through `store.apply(WritePlan)` in batches, the real
write path. Then:

* search: Q distinct natural queries through `Memory.search` (embedding included), interleaved
  with embedding the same strings alone through the inner embedder (no cache), so both see the
  same machine load; the target is search p95 <= 2x query-embedding p95 at 10k edges.
* add (on the 10k store): `Memory.add` against the scripted TEST DOUBLE LLM server answering
  instantly; the time the add spent waiting on LLM round trips or the embedding model (the
  union of those spans: the graph and fact paths run concurrently) is subtracted to give
  mem0g's own overhead per add; the target is p95 <= 20 ms.

It is a measurement: the exit code is 0 whether targets pass or not. Ratios taken while the
1-minute load exceeds the CPU count are flagged "busy": the model then slows far more than the
rest, which flatters search. Building 100k edges embeds ~120k texts (minutes to tens of
minutes on 2 cores); `--vector-cache FILE` keeps them for reruns, `--pool-size P` embeds only
P texts per kind and reuses perturbed vectors for the rest (recorded in the JSON notes).

    .venv/bin/python scripts/bench_search.py --sizes 1000,10000,100000 \
        --out bench-results/search.json --vector-cache bench-results/vectors-minilm.npz

The package behind scripts/bench_search.py, one module per job: data (the synthetic world),
vectors (its embeddings, writing it), timing (measuring tools), stores (embedded or Neo4j),
search and add (the two benchmarks), report (targets, tables), cli (options, the run).
Only scripts/ and tests/ import it.
"""
