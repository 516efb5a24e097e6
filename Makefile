# Set-up and checks. `make install` creates .venv; every other target installs first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# mypy cannot follow the install-time mapping of apmbench.* onto the top-level
# folders, so it reads them through a tree of links with the import names.
TYPECHECK := .typecheck

.PHONY: install test test-fast unit lint typecheck proto demo bench dist docs clean

# The suite runs on pytest-xdist workers: one per core the process may use, and at least
# 4, since most tests wait on a subprocess, a container or a deadline rather than compute
# (docs/development.md#the-test-suite). A module is one unit of work (its module-scoped
# fixtures are built once), handed out in the order tests/conftest.py gives.
# `make test TEST_WORKERS=1` runs it serially.
TEST_WORKERS ?= $(shell $(PYTHON) -c "import os; print(max(4, len(os.sched_getaffinity(0))))")
PARALLEL := -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder

# Bytecode for the project's own modules: editable sources have none, and a sandboxed
# system cannot write any (its root is read-only), so without this every restart of a
# `--system` compiles the SDK and the system again (about 15 ms of CPU per start).
install: $(STAMP)
	$(BIN)/python -m compileall -q harness adapters proto >/dev/null

# Both distributions editable in one resolve: apmbench-grpc's pin on apmbench-sdk
# is met by the SDK from this same tree (packaging/sdk).
# pip's output goes to $(INSTALL_LOG) and is printed only when the install fails: pip -q
# still prints warnings (an index location it skips, a deprecation) that are not the user's.
INSTALL_LOG := $(VENV)/install.log
QUIET_PIP = >>$(INSTALL_LOG) 2>&1 || { cat $(INSTALL_LOG); echo "install failed: the output above is in $(INSTALL_LOG)"; exit 1; }
$(STAMP): pyproject.toml setup.py packaging/sdk/pyproject.toml packaging/sdk/setup.py
	$(PYTHON) -m venv $(VENV)
	: >$(INSTALL_LOG)
	$(BIN)/python -m pip install -q --upgrade pip $(QUIET_PIP)
	$(BIN)/python -m pip install -q -e packaging/sdk -e '.[dev,models,ray]' $(QUIET_PIP)
	touch $(STAMP)
	@command -v bwrap >/dev/null || echo "note: --system runs in a bubblewrap sandbox;" \
		"install it with: apt-get install -y bubblewrap (as root)"

# Everything CI runs: lint, then every test; prints the 20 slowest tests and the serial
# total, and fails a passing run whose serial time outgrew tests/time_budget.toml.
test: lint
	$(BIN)/python -m pytest -q $(PARALLEL) --time-budget tests/time_budget.toml

# The developer's loop: unit and integration tests not marked slow (no engine needed).
test-fast: install
	$(BIN)/python -m pytest -q $(PARALLEL) -m "not slow" tests/unit tests/integration

unit: install
	$(BIN)/python -m pytest -q $(PARALLEL) tests/unit

lint: install typecheck
	$(BIN)/buf lint proto
	$(BIN)/ruff check proto harness adapters tests
	$(BIN)/ruff format --check proto/generate.py harness adapters tests

typecheck: install
	rm -rf $(TYPECHECK) && mkdir -p $(TYPECHECK)/apmbench
	ln -s ../../proto/apmbench/v1 $(TYPECHECK)/apmbench/v1
	ln -s ../../harness $(TYPECHECK)/apmbench/harness
	ln -s ../../adapters $(TYPECHECK)/apmbench/adapters
	cd $(TYPECHECK) && ../$(BIN)/mypy --config-file ../pyproject.toml -p apmbench.harness -p apmbench.adapters

proto: install
	$(BIN)/python proto/generate.py

# The demo (docs/quickstart.md): install quietly, then `evaluate` with no system into a new
# runs/demo-<UTC time>/ that runs/demo links to; earlier demos are kept, never deleted.
# Each phase prints a line, on a terminal or not. `make demo DEMO_ARGS="--synthetic tiny"`
# passes options on to evaluate.
demo:
	@echo "demo: install: $(VENV) and the package (minutes the first time; pip's output only if it fails)"
	@t=$$(date +%s); $(MAKE) --no-print-directory -s install && \
		echo "demo: install: done in $$(( $$(date +%s) - t )) s"
	@echo "demo: evaluate: the synthetic benchmark, then each reference system (a line per phase, and every 30 s while a system runs)"
	@$(BIN)/python -m apmbench.harness.demo $(DEMO_ARGS)

bench: install
	$(BIN)/python tests/bench/run_bench.py

# The documentation site (mkdocs.yml, docs/) into build/site. --strict: a broken link
# or anchor, a missing page or a page left out of the nav fails the build.
docs: install
	$(BIN)/mkdocs build --strict --site-dir build/site

# apmbench-sdk and apmbench-grpc, wheels and sdists, into dist/: `twine check`, then
# each wheel installed into a fresh venv (the SDK alone serves `null` and passes
# `check`); prints the SDK's installed size.
dist: install
	$(BIN)/python -m apmbench.harness.build.distributions --out dist

# Images for `evaluate --image` (docs/containers.md): a Debian root
# built by mmdebstrap (no registry needed; as root), apmbench/base, and one image
# per line of containers/systems.txt. Nothing is rebuilt whose inputs did not
# change. ROOTFS=IMAGE builds on an image from a registry instead.
.PHONY: images images-harness images-gpu images-vlm-cpu gpu-check containers
images: install
	$(BIN)/python -m apmbench.harness.build.images $(if $(ROOTFS),--rootfs $(ROOTFS))

# apmbench/harness: the harness and bubblewrap on a Debian root with bubblewrap, the base
# of a Kubernetes shard's pod image (deploy/README.md); built after what `images` builds.
images-harness: install
	$(BIN)/python -m apmbench.harness.build.images --harness

# apmbench/base-gpu: torch and transformers with CUDA from PyPI wheels (several GB),
# and the VLM systems on it: apmbench/vlm-{simplestream,video-memory,text-memory}:gpu.
images-gpu: install
	$(BIN)/python -m apmbench.harness.build.vlm_images --gpu $(if $(ROOTFS),--rootfs $(ROOTFS))

# The VLM systems on a CPU torch (apmbench/vlm-base-cpu, the :cpu images; ~1.7 GB):
# what the container tests run with a tiny model. Needs a CPU torch wheel on this host.
images-vlm-cpu: install
	$(BIN)/python -m apmbench.harness.build.vlm_images --cpu $(if $(ROOTFS),--rootfs $(ROOTFS))

# On a machine with an NVIDIA GPU: the three VLM systems on the tiny preset with a
# tiny random Qwen-VL model, printing time to first token and peak GPU memory.
gpu-check: install
	$(BIN)/python tests/gpu/run_gpu_check.py

# The container tier alone (real containers; skips without a Docker engine).
containers: install
	$(BIN)/python -m pytest -q $(PARALLEL) tests/containers

clean:
	rm -rf $(VENV) $(TYPECHECK) runs build dist *.egg-info
