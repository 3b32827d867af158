# make book   - set up .venv (if missing), execute every notebook on PROFILE, build the HTML book
# make test   - set up .venv with test dependencies and run the whole test suite, one process per core
# make lab    - set up .venv and open JupyterLab on notebooks/ (results still go to the repository's results/)
# make versitygw - build the versitygw S3 server (Apache-2.0) once (Go module proxy) into a cache outside the
#                  repository; an S3 server of your own is measured with the suites' endpoint parameters instead
# make lint   - ruff
# make clean  - remove build outputs and executed notebooks (never results/)
PYTHON ?= python3
PROFILE ?= quick
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: book test lab lint clean install sysdeps versitygw setup bytecode

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

# versitygw (the local S3 server of the S3 chapters and tests): its version has one home,
# benchmarks_lib/servers/versitygw.py. A failed build leaves its log beside the binary's folder and one line here;
# the S3 cases then skip with that reason and the rest of the book goes on.
VERSITYGW_VERSION := $(shell sed -n 's/^VERSITYGW_VERSION = "\(.*\)"/\1/p' benchmarks_lib/servers/versitygw.py)
VERSITYGW_DIR := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/iobench-book/versitygw
VERSITYGW_BIN := $(VERSITYGW_DIR)/bin/versitygw

versitygw:
	@if [ -n "$$IOBENCH_VERSITYGW" ] || command -v versitygw >/dev/null 2>&1 || [ -x "$(VERSITYGW_BIN)" ]; then :; \
	elif command -v go >/dev/null 2>&1; then \
	  echo "building versitygw $(VERSITYGW_VERSION) into $(VERSITYGW_BIN) (once; about a minute) ..."; \
	  t0=$$(date +%s); mkdir -p $(VERSITYGW_DIR); \
	  if GOBIN=$(VERSITYGW_DIR)/bin go install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION) \
	      > $(VERSITYGW_DIR)/build.log 2>&1; then \
	    rm -f $(VERSITYGW_DIR)/build.log; echo "versitygw built in $$(( $$(date +%s) - t0 )) s"; \
	  else echo "note: the versitygw build failed (the S3 cases skip): $$(tail -n 1 $(VERSITYGW_DIR)/build.log)"; fi; \
	else echo "note: neither Go nor a versitygw binary: the S3 cases skip (install Go, then make versitygw)"; fi

# the Python install, the system tools and versitygw's Go build at the same time: on a fresh machine the Go build
# (about a minute) does not wait for the pip install, nor the pip install for it
setup:
	@$(MAKE) --no-print-directory -j3 --output-sync=target install sysdeps versitygw

# the package's bytecode written once (0.4 s; 0.1 s when current), read by every process a book or the tests start:
# where PYTHONDONTWRITEBYTECODE is set (as here), each would compile the package again (0.2 s of CPU each)
bytecode: setup
	@$(BIN)/python -m compileall -q benchmarks_lib

book: bytecode
	$(BIN)/iobench book --profile $(PROFILE)

# the test files spread over one worker more than the cores (pytest-xdist; a file's tests in one worker, so its
# fixtures are built once): the workers wait on the servers, kernels and browsers they start about a fifth of the
# time (2 cores, 2 workers: 79% of the CPU used); the files with slow tests first (tests/conftest.py).
# Not --dist loadgroup: with pytest 9.2 it no longer groups (pytest-xdist issue 1386)
# Then the tests that measure the machine itself (marked quiet: the A/A compare, the link's calibration) run alone,
# one at a time, so that what they measure is the method and not the other tests' load.
test: bytecode
	@rc=0; $(BIN)/python -m pytest -q -n $$(( $$(nproc) + 1 )) --dist loadfile --no-loadscope-reorder -m "not quiet" || rc=$$?; \
	$(BIN)/python -m pytest -q -p no:xdist -m quiet || rc=$$?; exit $$rc

lab: install
	$(BIN)/jupyter lab --notebook-dir=notebooks $$( [ "$$(id -u)" = 0 ] && echo --allow-root )

lint: install
	$(BIN)/ruff check benchmarks_lib tests tools

clean:
	rm -rf _build book/executed .iobench-scratch
