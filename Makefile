# The two commands of the README: `make demo` and `make test`. Everything they need is built
# into .venv/ at the root; the only system package (nasm, for libjpeg-turbo's SIMD code) is
# installed here when missing and root can install it (without it the build still works, with
# a slower JPEG decode of identical bits).
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(abspath $(VENV)/bin)
export PATH := $(BIN):$(PATH)
# One Cargo workspace at the repository root; every build (develop, wheels, sdist tests)
# shares this target dir, so each crate is compiled once.
export CARGO_TARGET_DIR := $(abspath target)
PLUGINS := $(sort $(dir $(wildcard plugins/*/pyproject.toml)))
# Shipped distributions: the core and every family plugin (not the template, which is a
# starting point to copy, built by its own test).
DIST_PLUGINS := $(filter-out plugins/template/,$(PLUGINS))
DIST := $(abspath dist)
DIST_NAMES := $(foreach p,$(DIST_PLUGINS),sglang_mm_$(notdir $(patsubst %/,%,$(p))))
PLUGIN_WHEELS = $(foreach n,$(DIST_NAMES),$(wildcard $(DIST)/$(n)-*.whl))
WHEELHOUSE := $(DIST)/wheelhouse
CARGO := cargo
CARGO_HOME_DIR := $(or $(CARGO_HOME),$(HOME)/.cargo)
CARGO_FLAGS := --locked

.PHONY: demo test build dist wheelhouse env system-deps lint rust-test rust-package py-test \
	fuzz-smoke fuzz-asan bench clean sglang-ext

demo: build
	$(PY) -m sglang_mm_core.demo examples

test: build lint rust-test rust-package fuzz-smoke wheelhouse py-test

env: $(VENV)/.installed

$(VENV)/.installed: requirements/dev.txt $(wildcard plugins/*/requirements-test.txt) | system-deps
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements/dev.txt $(foreach f,$(wildcard plugins/*/requirements-test.txt),-r $(f))
	touch $@

system-deps:
	@command -v nasm >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nasm; \
	  else echo "note: nasm not found; libjpeg-turbo builds without SIMD (same bits, slower)" >&2; fi; }

# The core in development mode (its Python sources are used in place), then every wheel once
# into dist/; the plugins are installed from those same wheels.
build: env dist
	$(BIN)/maturin develop --release --quiet
	$(PY) -m pip install --quiet --no-deps --force-reinstall $(PLUGIN_WHEELS)

# Wheels and sdists of every shipped distribution.
dist: env
	@mkdir -p $(DIST)
	rm -f $(DIST)/*.whl $(DIST)/*.tar.gz
	$(BIN)/maturin build --release --quiet --out $(DIST)
	$(BIN)/maturin sdist --out $(DIST)
	@for p in $(DIST_PLUGINS); do \
	  $(BIN)/maturin build --release --quiet -m $${p}rust/Cargo.toml --out $(DIST) || exit 1; \
	  $(BIN)/maturin sdist -m $${p}rust/Cargo.toml --out $(DIST) || exit 1; \
	done

# Everything a fresh venv needs to install the dist/ wheels and build the sdists without an
# index: the packaging tests install with --no-index from here, so they reach no network.
wheelhouse: dist
	@mkdir -p $(WHEELHOUSE)
	$(PY) -m pip download --quiet --dest $(WHEELHOUSE) -c requirements/dev.txt \
	  "$$(ls $(DIST)/sglang_mm_core-*.whl)[conformance,safetensors]" $(PLUGIN_WHEELS) maturin cmake pillow
	rm -f $(WHEELHOUSE)/sglang_mm_*  # ours come from dist/ itself, always the fresh ones

lint: env
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy $(CARGO_FLAGS) --workspace --all-targets --release -- -D warnings

rust-test: env
	$(CARGO) test $(CARGO_FLAGS) --release -p mm-kernels
	$(CARGO) test $(CARGO_FLAGS) --release -p mm-kernels --features parallel
	$(CARGO) test $(CARGO_FLAGS) --release -p core-py -p qwen-vl-py -p inkling-py -p gemma3-py -p pixtral-py -p internvl-py

# The kernel crates as crates.io would receive them, built and verified from the package.
# Verification unpacks them from a temporary local registry, and cargo takes a crate of an
# already seen registry and version for immutable: an older unpacked copy (in
# $CARGO_HOME/registry/src/-<hash>/) or build of the same 0.1.0 would be reused. So both go
# first: the copies of that local registry only (never crates.io's), and a target dir of its own.
PACKAGE_DIR := $(CARGO_TARGET_DIR)/package
rust-package: env
	rm -rf $(PACKAGE_DIR) $(CARGO_TARGET_DIR)/package-verify \
	  $(CARGO_HOME_DIR)/registry/src/-*/mm-kernels-* $(CARGO_HOME_DIR)/registry/src/-*/mm-pyglue-*
	$(CARGO) package $(CARGO_FLAGS) -p mm-kernels -p mm-pyglue --allow-dirty \
	  --target-dir $(CARGO_TARGET_DIR)/package-verify
	mkdir -p $(PACKAGE_DIR)
	cp $(CARGO_TARGET_DIR)/package-verify/package/*.crate $(PACKAGE_DIR)/

py-test: build sglang-ext
	$(PY) -m pytest -q

# SGLang's compiled extension, the reference of tests/compat: only its .so, taken once out of
# the sglang wheel (downloaded without dependencies; pinned by the .so's sha256).
SGLANG_EXT_MEMBER := sglang/srt/rust_extensions/_multimodal.cpython-311-x86_64-linux-gnu.so
SGLANG_EXT := $(DIST)/sglang-ext/$(notdir $(SGLANG_EXT_MEMBER))
sglang-ext: $(SGLANG_EXT)
$(SGLANG_EXT): | env
	rm -rf $(@D) && mkdir -p $(@D)
	$(PY) -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
	  --platform manylinux_2_34_x86_64 --dest $(@D) sglang==0.5.23
	$(PY) -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' \
	  $(@D)/sglang-*.whl $(SGLANG_EXT_MEMBER) > $@.part
	echo "32fb01ae1d4b1b941e34ded18fb47b2123c55d4b5d81ada455c3028f9f520aea  $@.part" | sha256sum -c --quiet
	mv $@.part $@ && rm $(@D)/sglang-*.whl

# A bounded libFuzzer run of each decoder entry point (rust/mm-kernels/fuzz/README.md) from
# the committed corpus; new inputs go to a scratch dir. `fuzz-smoke` (part of `make test`)
# builds the targets with plain stable cargo and coverage flags, no tool to install;
# `fuzz-asan` runs them under cargo-fuzz with AddressSanitizer (cargo-fuzz wants nightly: the
# stable compiler accepts its flags under RUSTC_BOOTSTRAP=1, set for these commands only).
FUZZ_DIR := rust/mm-kernels/fuzz
FUZZ_SECONDS := 15
FUZZ_TARGETS := decode_rgb image_dimensions
FUZZ_TRIPLE := $(shell rustc -vV | sed -n 's/^host: //p')
FUZZ_RUSTFLAGS := --cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
  -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
  -Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions -Coverflow-checks
FUZZ_ARGS = -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
fuzz-smoke: env
	cd $(FUZZ_DIR) && RUSTFLAGS="$(FUZZ_RUSTFLAGS)" $(CARGO) build --release --quiet --bins \
	  --target $(FUZZ_TRIPLE) --target-dir $(CARGO_TARGET_DIR)/fuzz-plain
	@set -e; for t in $(FUZZ_TARGETS); do \
	  scratch=$$(mktemp -d); \
	  $(CARGO_TARGET_DIR)/fuzz-plain/$(FUZZ_TRIPLE)/release/$$t $$scratch \
	    $(FUZZ_DIR)/corpus/$$t $(FUZZ_DIR)/corpus/seeds $(FUZZ_ARGS) || { rm -rf $$scratch; exit 1; }; \
	  rm -rf $$scratch; \
	done

fuzz-asan: env
	$(CARGO) install --locked --quiet cargo-fuzz --version 0.13.2
	@set -e; for t in $(FUZZ_TARGETS); do \
	  scratch=$$(mktemp -d); \
	  (cd $(FUZZ_DIR) && RUSTC_BOOTSTRAP=1 $(CARGO) fuzz run --target-dir $(CARGO_TARGET_DIR)/fuzz \
	    $$t $$scratch corpus/$$t corpus/seeds -- $(FUZZ_ARGS)) || { rm -rf $$scratch; exit 1; }; \
	  rm -rf $$scratch; \
	done

bench: build sglang-ext
	@set -e; for b in bench/bench_core.py $(filter-out bench/bench_core.py bench/bench_server.py,$(wildcard bench/bench_*.py)); do \
	  echo "== $$b"; $(PY) $$b; done

clean:
	rm -rf $(VENV) target dist
