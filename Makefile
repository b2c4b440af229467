# Two commands on a fresh machine: `make run` (the dashboard) and `make test` (everything CI runs).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: run test lint typecheck unit check validate bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/streamlit run app.py --server.port 8501 --server.headless true

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(PY) tools/size_budget.py

typecheck: $(STAMP)
	$(VENV)/bin/mypy engine

unit: $(STAMP)
	$(VENV)/bin/pytest -q -n 2

test: lint typecheck unit

check: test

bench: $(STAMP)
	$(PY) bench/run.py
	$(PY) bench/plan.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info

validate: $(STAMP)
	$(PY) -m engine validate
