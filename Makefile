# The two commands of the README: `make preview` and `make test`.
# Everything else here is what they are made of.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: preview test e2e bench fuzz venv tools e2e-tools package lint typecheck generate goldens check-generated clean

## preview: build the environment and preview the quickstart fleet offline, in a simulated healthy world
preview: $(STAMP)
	$(BIN)/modelplane preview --assume-ready examples/quickstart

## test: every test tier (unit, function, render, validation, gRPC, conformance with the real Crossplane CLI) plus lint and type checks
test: $(STAMP) tools lint typecheck
	CROSSPLANE="$$(tools/crossplane.sh)" CROSSPLANE_ENGINE="$$(tools/crossplane.sh engine)" $(BIN)/pytest

## e2e: the end-to-end tier: a real API server, Crossplane core, provider-kubernetes and workload API servers on loopback
e2e: $(STAMP) tools e2e-tools
	CROSSPLANE="$$(tools/crossplane.sh)" $(BIN)/pytest -m e2e tests/e2e

## e2e-tools: build, once, the pinned kube-apiserver, controller-manager, scheduler, kwok, Kueue, KEDA, Crossplane core, provider-kubernetes and registry (etcd and Prometheus from apt)
e2e-tools:
	@tools/e2e/tools.sh >/dev/null

## fuzz: fuzz every function with random inputs, MODELPLANE_FUZZ_EXAMPLES per function (20,000 unless set; `make test` runs 2,000, derandomized)
fuzz: $(STAMP)
	MODELPLANE_FUZZ=deep $(BIN)/pytest tests/fuzz -p no:cacheprovider

## bench: print RunFunction latency, function start-up and placement quality beside their targets
bench: $(STAMP)
	$(BIN)/python -m bench

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "modelplane needs Python 3.11 or newer; set PYTHON=")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@rm -f $(VENV)/.installed-* && touch $@

venv: $(STAMP)

## tools: build, once, the pinned Crossplane CLI and the Crossplane core its render runs, into a cache outside the repo
tools:
	@tools/crossplane.sh >/dev/null
	@tools/crossplane.sh engine >/dev/null

## images: build every function's runtime image without Docker (debootstrap, as root) into _output/images
.PHONY: images
images: $(STAMP)
	PYTHON=$(BIN)/python tools/images.sh _output/images

## package: build the Configuration and Function xpkgs, runtime images embedded, into _output/packages with `crossplane xpkg build`
package: tools images
	CROSSPLANE="$$(tools/crossplane.sh)" IMAGES=_output/images tools/package.sh _output/packages

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

## generate: regenerate schemas/ (JSON schemas and pydantic models) from apis/
generate: $(STAMP)
	$(BIN)/python schemas/generate.py

check-generated: $(STAMP)
	$(BIN)/python schemas/generate.py --check

## goldens: regenerate the golden files: renders under tests/golden/files/, preview outputs under tests/preview/golden/
goldens: $(STAMP)
	$(BIN)/python -m tests.golden.regenerate
	MODELPLANE_UPDATE_GOLDENS=1 $(BIN)/pytest tests/preview -q -p no:cacheprovider -k golden

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache _output
