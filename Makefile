# make book   - set up .venv (if missing), execute every notebook on PROFILE, build the HTML book
# make test   - set up .venv with test dependencies and run the whole test suite
# make lab    - set up .venv and open JupyterLab on notebooks/ (results still go to the repository's results/)
# make lint   - ruff
# make clean  - remove build outputs and executed notebooks (never results/)
PYTHON ?= python3
PROFILE ?= quick
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: book test lab lint clean install sysdeps

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[all,book,test]"
	rm -f $(VENV)/.installed-* && touch $(STAMP)

install: $(STAMP)

# Optional system tools, installed when we are root on Debian: fio (ceiling cross-check), nginx (cache chapter),
# chromium (the browser test of the built book; Playwright drives it, no browser is downloaded).
sysdeps:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  missing=""; command -v fio >/dev/null || missing="$$missing fio"; \
	  command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing="$$missing nginx-light"; \
	  command -v chromium >/dev/null || missing="$$missing chromium"; \
	  if [ -n "$$missing" ]; then \
	    (apt-get install -y -q $$missing >/dev/null 2>&1 || (apt-get update -q >/dev/null 2>&1 && \
	     apt-get install -y -q $$missing >/dev/null 2>&1)) || echo "note: could not install$$missing (tests that need them skip)"; \
	  fi; \
	else echo "note: not root: fio/nginx/chromium are not installed automatically (tests that need them skip)"; fi

book: install sysdeps
	$(BIN)/iobench book --profile $(PROFILE)

test: install sysdeps
	$(BIN)/python -m pytest -q

lab: install
	$(BIN)/jupyter lab --notebook-dir=notebooks

lint: install
	$(BIN)/ruff check benchmarks_lib tests

clean:
	rm -rf _build book/executed .iobench-scratch
