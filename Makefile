# retrygen's own tasks. `make test` is the README's test command and what .ci/run runs.
CARGO ?= cargo
CORPUS ?= ../shared/corpus

.PHONY: build toolchains codegen check-codegen lint unit runtime-tests anchors vectors conformance shared-runtime faults mutation mutation-full injection corpus bench bench-quick dist-check test

build:
	$(CARGO) build --release

# Installs what the conformance run needs beyond the machine's own toolchains (TypeScript,
# a Kotlin compiler, mono's C# compiler) into .cache/toolchains; idempotent and fast when done.
toolchains:
	bash scripts/bootstrap-toolchains.sh

# Regenerates every generated file of retrygen.toml (the goldens under golden/).
codegen:
	$(CARGO) run --quiet --release -- generate

# Fails with a diff when a committed generated file is stale.
check-codegen:
	$(CARGO) run --quiet --release -- check

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets --quiet -- -D warnings

unit:
	$(CARGO) test --workspace --quiet

# Each language's runtime (runtime/<language>/) as a plain project of that language: formatter,
# linter, strict compile and its own unit tests, nothing rendered.
runtime-tests: toolchains
	$(CARGO) xtask runtime-tests

# Every runtime marks each anchored rule of docs/contract.md, in the contract's order.
anchors:
	$(CARGO) xtask anchors

# The vectors are what the reference implementation (conformance/reference/) says, byte for byte:
# every hand-written expectation agrees with it and no vector file is stale (v2, and v3's draft).
vectors:
	python3 conformance/reference/generate.py --check
	$(CARGO) xtask conformance-v3 --lang none

# Every language's module built with its real toolchain and run on the shared vectors.
conformance: toolchains
	$(CARGO) xtask conformance
	$(CARGO) xtask conformance-v3

# One mutant per anchored contract rule in each language's runtime; the vectors must kill each
# (v2's on v2's vectors, v3's on v3's, in every language).
# `make test` runs one or more rules of every v2 family (V, R, S, B, K) in every language and three
# v3 anchors (a rule of the decision, the problem scanner, the precondition check) in every
# language (a few minutes); `make mutation-full` runs them all and rewrites docs/mutation.md.
MUTATION_SAMPLE ?= V4,R3,R7,R9,S3,B3,K2,H2,R5a,Q2
mutation: toolchains
	$(CARGO) xtask mutation --anchor $(MUTATION_SAMPLE)

mutation-full: toolchains
	$(CARGO) xtask mutation --out docs/mutation.md

# Generated hostile specs: every string round-trips through all six modules, each linted.
injection: toolchains
	$(CARGO) xtask injection --lint all

# The fault matrix: every language's HTTP client adapter against a real fault-injecting server on
# 127.0.0.1, the same scenarios for all over every protocol each client speaks (HTTP/1.1, h2c,
# HTTP/1.1 over TLS, h2), then the seeded soak (40 requests per run, protocol and seed, each arrival
# given a fault drawn by the seed); the server's arrival counts decide. Scenarios marked `pending`
# (or `pending_in` a language) in conformance/faults/scenarios.json are listed with their reason.
faults: toolchains
	$(CARGO) xtask faults --with-soak 40 --seed 1 --seed 2

# Every public document of the corpus read, classified and rendered, then compiled and run in all
# six languages (skipped only when the corpus folder is absent, outside this workspace).
corpus:
	@if [ -d "$(CORPUS)" ]; then $(CARGO) xtask corpus "$(CORPUS)" && $(CARGO) xtask conformance --corpus "$(CORPUS)" --lint rust,python,go,csharp; else echo "no corpus at $(CORPUS)"; fi

# Two specs' thin tables on one shared runtime ([[runtime]]) per language, each layout formatted,
# linted and compiled with the language's real toolchain.
shared-runtime: toolchains
	$(CARGO) xtask shared-runtime

bench:
	$(CARGO) xtask bench

# The packages retrygen installs from (docs/distribution.md): the wheel, the npm launcher and this
# host's binary package, the crate; each installed offline from its file and run, and the
# pre-commit hooks run on a throwaway repository.
dist-check: toolchains
	$(CARGO) xtask dist --check

# The benchmark programs of every language built and cross-checked with few iterations, so the
# full `make bench` cannot rot; timings are reported, never asserted.
bench-quick: toolchains
	$(CARGO) xtask bench --quick

test: toolchains lint unit check-codegen runtime-tests anchors vectors conformance shared-runtime faults mutation injection corpus bench-quick dist-check
