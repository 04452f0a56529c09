# One task runner for developers and CI. Every target that needs the venv depends on `setup`,
# so `make test` and `make demo` each work alone on a fresh clone.
VENV      := .venv
PY        := $(VENV)/bin/python
STAMP     := $(VENV)/.installed

.PHONY: setup demo test test-fast lint typecheck bench bench-quick package clean

setup: $(STAMP)

$(STAMP): pyproject.toml packaging/find_python.sh packaging/install_system_deps.sh
	@sh packaging/install_system_deps.sh
	@PYBIN=$$(sh packaging/find_python.sh) || exit 1; \
	 if [ ! -x $(PY) ]; then echo "creating $(VENV) with $$PYBIN"; $$PYBIN -m venv $(VENV) || exit 1; fi
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,desktop,redis]'
	@touch $(STAMP)

demo: setup
	$(VENV)/bin/shopfleet demo

# A base temp folder of our own: pytest's shared /tmp/pytest-of-USER keeps only the last three
# runs and deletes older ones, which breaks a run when another pytest starts beside it.
test: setup
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q --basetemp=$(CURDIR)/.pytest-tmp

test-fast: setup
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -m "not slow"

lint: setup
	$(VENV)/bin/ruff check core desktop tests bench

typecheck: setup
	$(VENV)/bin/mypy core desktop

bench: setup
	$(PY) -m pip install -q -e '.[bench]'
	@for b in bench/[!_]*.py; do echo "# $$b" >&2; $(PY) $$b || exit 1; done

bench-quick: setup
	$(PY) -m pip install -q -e '.[bench]'
	@for b in bench/[!_]*.py; do echo "# $$b" >&2; $(PY) $$b --quick || exit 1; done

package: setup
	sh packaging/build_linux.sh

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
