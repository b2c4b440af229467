# Two commands on a fresh machine: `make run` (the dashboard; `make run PORT=8502` for another port) and
# `make test` (everything CI runs); `make quick` runs the fast tests only.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
PORT ?= 8501

.PHONY: run test quick lint typecheck unit check validate bench clean native

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(STAMP)

# the compiled hot path (mypyc, into build/native; docs/performance.md): built where a compiled source
# changed since the last build, about 1.5 minutes; where it cannot be built the engine runs pure Python
native: $(STAMP)
	$(PY) tools/build_native.py --if-stale

run: native
	$(VENV)/bin/streamlit run app.py --server.port $(PORT) --server.headless true

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(PY) tools/size_budget.py

typecheck: $(STAMP)
	$(VENV)/bin/mypy engine

# every run prints its 25 slowest tests and fixtures, so that any CI log says where the suite's time goes
# then, on the pure-Python modules, the tests that patch what compiled code calls directly (marked pure)
unit: native
	$(VENV)/bin/pytest -q -n 2 --durations=25
	FENGONG_PURE=1 $(VENV)/bin/pytest -q -m pure

# lint and the type check run beside the compiled build (about a minute each on a fresh clone), then the tests
test:
	$(MAKE) --no-print-directory -j2 --output-sync=target lint typecheck native
	$(MAKE) --no-print-directory unit

# the tests not marked slow (browser, app pages, the validation report, long plans): about 2.5 minutes, for iterating
quick: $(STAMP)
	$(VENV)/bin/pytest -q -n 2 -m "not slow"

check: test

bench: native
	$(PY) bench/run.py
	$(PY) bench/plan.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info

validate: native
	$(PY) -m engine validate
