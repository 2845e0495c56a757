"""Resolution: what each extracted thing is against what the tenant already holds.

What lives here: `names.py` (pure name and type rules), `entities.py` (the entity resolver),
`updates.py` (the graph update resolver, and what its decisions write), `facts.py` (Mem0's
fact update resolver), `links.py` (fact <-> entity links). Who may import it: pipeline.py,
`Memory`, archive.py, retrieve/ (the name n-grams of linking), extract/checks.py (name
normalisation), and the stores only lazily for the link rule of `links.py`. It imports llm,
embed, config, types and the store seam (`stores.base`, `stores.vectors`), never a store.
"""
