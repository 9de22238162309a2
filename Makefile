# The two commands of the README: `make demo` and `make test`. Everything they need is built
# into .venv/ at the root; the only system packages (nasm, for libjpeg-turbo's SIMD) are
# installed here too when missing.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(abspath $(VENV)/bin)
export PATH := $(BIN):$(PATH)
export CARGO_TARGET_DIR := $(abspath rust/target)
PLUGINS := $(sort $(dir $(wildcard plugins/*/pyproject.toml)))
CARGO := cargo
CARGO_FLAGS := --locked --manifest-path rust/Cargo.toml

.PHONY: demo test build env system-deps lint rust-test py-test bench clean

demo: build
	$(PY) -m sglang_mm_core.demo examples

test: build lint rust-test py-test

env: $(VENV)/.installed

$(VENV)/.installed: requirements/dev.txt $(wildcard plugins/*/requirements-test.txt) | system-deps
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements/dev.txt $(foreach f,$(wildcard plugins/*/requirements-test.txt),-r $(f))
	touch $@

system-deps:
	@command -v nasm >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nasm; \
	  else echo "nasm is required to build libjpeg-turbo: sudo apt-get install nasm" >&2; exit 1; fi; }

build: env
	cd $(CURDIR) && $(BIN)/maturin develop --release --quiet
	@for p in $(PLUGINS); do \
	  echo "building plugin $$p"; \
	  $(PY) -m pip install --quiet --no-build-isolation --no-deps $$p || exit 1; \
	done

lint: env
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(CARGO) fmt --manifest-path rust/Cargo.toml --all -- --check
	$(CARGO) clippy $(CARGO_FLAGS) --workspace --all-targets --release -- -D warnings

rust-test: env
	$(CARGO) test $(CARGO_FLAGS) --release -p mm-kernels
	$(CARGO) test $(CARGO_FLAGS) --release -p mm-kernels --features parallel
	$(CARGO) test $(CARGO_FLAGS) --release -p qwen-vl-py

py-test: build
	$(PY) -m pytest -q

bench: build
	$(PY) bench/bench_core.py
	$(PY) bench/bench_inkling.py
	$(PY) bench/bench_qwen_vl.py

clean:
	rm -rf $(VENV) rust/target
