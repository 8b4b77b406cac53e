# Two entry points: `make demo` (the main job) and `make test` (the whole suite + docs).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# The suite runs on this many pytest-xdist workers, a test file to each (0: in this process)
WORKERS ?= 2
PYTEST := $(PY) -m pytest -n $(WORKERS) --dist loadfile

.PHONY: demo test check docs bench validation clean

$(VENV)/.stamp-base: setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e .
	touch $@

$(VENV)/.stamp-test: $(VENV)/.stamp-base
	$(PIP) install -q -e ".[test,docs,mpi,onednn]"
	touch $@

demo: $(VENV)/.stamp-base
	$(PY) -m ozaki

# The docs first: tests/test_docs_html.py then reads that build instead of making its own
test: $(VENV)/.stamp-test
	$(PY) -m sphinx -W --keep-going -q -b html docs docs/_build/html
	OZAKI_DOCS_HTML=$(CURDIR)/docs/_build/html $(PYTEST) -q

# The inner loop: every test but the slow ones (subprocesses, MPI, > 1 s), under 2 minutes.
check: $(VENV)/.stamp-test
	$(PYTEST) -q -m "not slow"

docs: $(VENV)/.stamp-test
	$(PY) -m sphinx -W --keep-going -b html docs docs/_build/html

validation: $(VENV)/.stamp-test
	$(PY) -m validation
	$(PY) -m validation.fft
	$(PY) -m validation.linalg

bench: $(VENV)/.stamp-test
	$(PY) -m pytest benchmarks --benchmark-enable --benchmark-min-rounds=3 -p no:cacheprovider

clean:
	rm -rf $(VENV) docs/_build build *.egg-info
