# Two commands on a fresh machine: `make run` (the dashboard; `make run PORT=8502` for another port) and
# `make test` (everything CI runs); `make quick` runs the fast tests only.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
PORT ?= 8501

.PHONY: run test quick lint typecheck unit check validate bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/streamlit run app.py --server.port $(PORT) --server.headless true

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(PY) tools/size_budget.py

typecheck: $(STAMP)
	$(VENV)/bin/mypy engine

# every run prints its 25 slowest tests and fixtures, so that any CI log says where the suite's time goes
unit: $(STAMP)
	$(VENV)/bin/pytest -q -n 2 --durations=25

test: lint typecheck unit

# the tests not marked slow (browser, app pages, the validation report, long plans): about 2.5 minutes, for iterating
quick: $(STAMP)
	$(VENV)/bin/pytest -q -n 2 -m "not slow"

check: test

bench: $(STAMP)
	$(PY) bench/run.py
	$(PY) bench/plan.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info

validate: $(STAMP)
	$(PY) -m engine validate
