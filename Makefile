# The commands of the README: `make demo`, `make check` (the inner loop) and `make test` (all
# of it, what .ci/run calls). Everything they need is built into .venv/ at the root; the only
# system package (nasm, for libjpeg-turbo's SIMD code) is installed here when missing and root
# can install it (without it the build still works, with a slower JPEG decode of identical bits).
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(abspath $(VENV)/bin)
export PATH := $(BIN):$(PATH)
# One Cargo workspace at the repository root and one target dir for every build (develop,
# wheels, tests, clippy, the sdist tests), so each crate is compiled once per profile.
export CARGO_TARGET_DIR := $(abspath target)
# The distributions: the core (maturin), the family plugins (plugins/<family>/: maturin when
# the family has a crate of its own, hatchling when it is composed of core kernels) and the
# SGLang drop-in (compat/sglang). The templates (plugins/template_*) are starting points to
# copy, built and tested by their own packaging test, not shipped.
PLUGINS := $(sort $(dir $(wildcard plugins/*/pyproject.toml)))
SHIPPED_PLUGINS := $(filter-out plugins/template_%,$(PLUGINS))
RUST_PLUGINS := $(sort $(dir $(patsubst %/rust/,%/,$(dir $(wildcard $(addsuffix rust/Cargo.toml,$(SHIPPED_PLUGINS)))))))
PY_DISTS := $(filter-out $(RUST_PLUGINS),$(SHIPPED_PLUGINS)) compat/sglang/
DIST := $(abspath dist)
WHEELHOUSE := $(DIST)/wheelhouse
CARGO := cargo
CARGO_HOME_DIR := $(or $(CARGO_HOME),$(HOME)/.cargo)
CARGO_FLAGS := --locked
# Where `make build` records what it installed in development mode.
BUILT := $(VENV)/.built

.PHONY: demo test check build dist wheelhouse env system-deps lint lint-py lint-rust rust-test \
	rust-package py-test py-check fuzz-smoke fuzz-asan bench clean sglang-ext

demo: build
	$(PY) -m sglang_mm_core._demo examples

# Everything: lint, the Rust tests, the packaged crates, a fuzz smoke run, the distributions
# (wheels and sdists, tested in fresh venvs) and every Python test. After the build the
# independent steps run two at a time (the fuzz build has a target dir of its own, mypy and the
# downloads wait on no compiler), each one's output kept together.
test: build
	$(MAKE) -j2 --output-sync=target lint rust-test rust-package fuzz-smoke wheelhouse sglang-ext
	$(MAKE) py-test

# The inner loop: lint and the Python tests against the sources in place (the core and every
# plugin installed in development mode, so an edit is what the tests run), without the
# packaging tests (fresh venvs from dist/) and the tests marked `slow`.
check: build lint py-check

env: $(VENV)/.installed

$(VENV)/.installed: requirements/dev.txt $(wildcard plugins/*/requirements-test.txt) | system-deps
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --no-compile -r requirements/dev.txt $(foreach f,$(wildcard plugins/*/requirements-test.txt),-r $(f))
	touch $@

system-deps:
	@command -v nasm >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nasm; \
	  else echo "note: nasm not found; libjpeg-turbo builds without SIMD (same bits, slower)" >&2; fi; }

# The core and every shipped distribution in development mode: their Python sources are used
# in place; the Rust extensions are compiled (release) into target/ and linked in.
build: env
	$(BIN)/maturin develop --release --quiet
	@for p in $(RUST_PLUGINS); do \
	  $(BIN)/maturin develop --release --quiet -m $${p}rust/Cargo.toml || exit 1; \
	done
	@if [ ! -f $(BUILT) ] || [ "$$(cat $(BUILT))" != "$(PY_DISTS)" ]; then \
	  $(PY) -m pip install --quiet --no-deps --no-build-isolation $(foreach p,$(PY_DISTS),-e $(p)) \
	    && echo "$(PY_DISTS)" > $(BUILT); \
	fi

# A wheel and an sdist of every shipped distribution, into dist/ (each wheel built once; the
# Rust ones share target/ with `build`, so only the wheel's own link step runs again).
dist: env
	@mkdir -p $(DIST)
	rm -f $(DIST)/*.whl $(DIST)/*.tar.gz
	$(BIN)/maturin build --release --quiet --out $(DIST)
	$(BIN)/maturin sdist --out $(DIST)
	@for p in $(RUST_PLUGINS); do \
	  $(BIN)/maturin build --release --quiet -m $${p}rust/Cargo.toml --out $(DIST) || exit 1; \
	  $(BIN)/maturin sdist -m $${p}rust/Cargo.toml --out $(DIST) || exit 1; \
	done
	@for p in $(PY_DISTS); do \
	  $(PY) -m build --no-isolation --quiet --outdir $(DIST) $$p > /dev/null || exit 1; \
	done

# Everything a fresh venv needs to install the dist/ wheels and build the sdists without an
# index: the packaging tests install with --no-index from here, so they reach no network.
wheelhouse: dist
	@mkdir -p $(WHEELHOUSE)
	$(PY) -m pip download --quiet --dest $(WHEELHOUSE) -c requirements/dev.txt \
	  $(foreach f,$(wildcard plugins/*/requirements-test.txt),-c $(f)) \
	  "$$(ls $(DIST)/sglang_mm_core-*.whl)[conformance,safetensors]" \
	  $(filter-out $(DIST)/sglang_mm_core-%,$(wildcard $(DIST)/*.whl)) \
	  maturin cmake hatchling editables pillow pytest transformers scikit-image
	rm -f $(WHEELHOUSE)/sglang_mm_*  # ours come from dist/ itself, always the fresh ones

lint: lint-py lint-rust

lint-py: env
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# Every crate, the plugins' included: each states the same lint tables (tested by
# tests/test_lints.py), so its sdist stays self-contained.
lint-rust: env
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy $(CARGO_FLAGS) --workspace --all-targets --release -- -D warnings

# Every test with the `parallel` feature (what every extension builds), and without it the
# test that proves no thread is ever started then.
rust-test: env
	$(CARGO) test $(CARGO_FLAGS) --release -p mm-kernels --test threads
	$(CARGO) test $(CARGO_FLAGS) --release -p mm-kernels --features parallel -p core-py \
	  $(foreach p,$(RUST_PLUGINS),-p $(shell sed -n 's/^name = "\(.*\)"/\1/p' $(p)rust/Cargo.toml | head -1))

# The kernel crates as crates.io would receive them (`cargo package`), for the plugin
# template's packaging test, which builds a plugin from exactly these files: that build is the
# packages' verification (cargo's own would compile them once more, libjpeg-turbo included).
# Cargo takes a crate of an already seen registry and version for immutable: an older unpacked
# copy (in $CARGO_HOME/registry/src/-<hash>/) of the same 0.1.0 would be reused, so those
# copies of the template's local registry go first (never crates.io's).
PACKAGE_DIR := $(CARGO_TARGET_DIR)/package
rust-package: env
	rm -rf $(PACKAGE_DIR) \
	  $(CARGO_HOME_DIR)/registry/src/-*/mm-kernels-* $(CARGO_HOME_DIR)/registry/src/-*/mm-pyglue-*
	$(CARGO) package $(CARGO_FLAGS) -p mm-kernels -p mm-pyglue --allow-dirty --no-verify

# Two workers (the packaging tests' fresh venvs are mostly pip and compile waits); a module
# stays on one worker, so its fixtures (a venv of wheels, a built template) are made once.
PYTEST := $(PY) -m pytest -q -n 2 --dist loadfile
py-test: build sglang-ext
	$(PYTEST)

# The inner loop's tests: the packaging tests and the `slow` ones left out.
py-check: build sglang-ext
	$(PYTEST) -m "not slow" --ignore=tests/packaging

# SGLang's compiled extension, the reference of compat/sglang/tests, and the DeepSeek-V4.1
# image preprocessing module, the reference of plugins/deepseek_v41/tests: only these two
# files, taken once out of the sglang wheel (downloaded without dependencies; each pinned by
# its sha256).
SGLANG_EXT_MEMBER := sglang/srt/rust_extensions/_multimodal.cpython-311-x86_64-linux-gnu.so
SGLANG_DSV41_MEMBER := sglang/srt/multimodal/deepseek_v41_image_processing.py
SGLANG_EXT := $(DIST)/sglang-ext/$(notdir $(SGLANG_EXT_MEMBER))
SGLANG_DSV41 := $(DIST)/sglang-ext/$(notdir $(SGLANG_DSV41_MEMBER))
SGLANG_MEMBER = $(PY) -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))'
sglang-ext: $(SGLANG_EXT) $(SGLANG_DSV41)
$(SGLANG_EXT) $(SGLANG_DSV41) &: | env
	rm -rf $(@D) && mkdir -p $(@D)
	$(PY) -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
	  --platform manylinux_2_34_x86_64 --dest $(@D) sglang==0.5.23
	$(SGLANG_MEMBER) $(@D)/sglang-*.whl $(SGLANG_DSV41_MEMBER) > $(SGLANG_DSV41).part
	echo "4e9dd81161974df583959cdd977e7f10134a55598608fd1dcb18e08be35d3f65  $(SGLANG_DSV41).part" | sha256sum -c --quiet
	$(SGLANG_MEMBER) $(@D)/sglang-*.whl $(SGLANG_EXT_MEMBER) > $(SGLANG_EXT).part
	echo "32fb01ae1d4b1b941e34ded18fb47b2123c55d4b5d81ada455c3028f9f520aea  $(SGLANG_EXT).part" | sha256sum -c --quiet
	mv $(SGLANG_DSV41).part $(SGLANG_DSV41) && mv $(SGLANG_EXT).part $(SGLANG_EXT)
	rm $(@D)/sglang-*.whl

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
	@set -e; pids=""; for t in $(FUZZ_TARGETS); do \
	  scratch=$$(mktemp -d); \
	  ( $(CARGO_TARGET_DIR)/fuzz-plain/$(FUZZ_TRIPLE)/release/$$t $$scratch \
	      $(FUZZ_DIR)/corpus/$$t $(FUZZ_DIR)/corpus/seeds $(FUZZ_ARGS) > $$scratch.log 2>&1; \
	    rc=$$?; tail -20 $$scratch.log; rm -rf $$scratch $$scratch.log; exit $$rc ) & pids="$$pids $$!"; \
	done; for p in $$pids; do wait $$p; done

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
