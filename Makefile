# One command for each routine job. Everything installs into .venv on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup run test test-python-core test-slow test-bench lint bench clean

setup: $(STAMP)

# torch first, pinned: the CPU build lies on disk; a looser requirement would pull a CUDA build.
# Every C source of pyreplay (and its build script) is a prerequisite: editing any of them rebuilds the extension.
# protobufs: what LF programs with the `protobufs` target property need (protoc and the runtime);
# cluster: Ray, for `lfrl run --cluster` and its tests.
$(STAMP): pyproject.toml setup.py pyreplay/setup.py $(wildcard pyreplay/*.c pyreplay/*.h) $(wildcard lfpy/runtime/*.c lfpy/runtime/*.h)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[dev,protobufs,cluster]'
	touch $(STAMP)

# The main job: generate the sampling program for two workers (the second one stepping in a child
# process), compile it and run it with a progress bar; it prints samples/s and each worker's checksum.
# build/ holds generated files only: --force replaces those of an earlier run.
run: setup
	$(VENV)/bin/lfrl gen sampling --workers 2 --envs-per-worker 4 --steps 400000 --env-id CartPole-v1 --processes yes \
		--force -o build/sampling/Sampling.lf
	$(VENV)/bin/lfrl compile build/sampling/Sampling.lf
	$(VENV)/bin/lfrl run build/sampling/Sampling.lf

# The tests, but the slow ones (minutes each: a wheel installed in a fresh environment, a documented
# training run, Atari, the heavier Ray cluster runs); `make test-slow` runs those, and CI runs both.
test: setup
	$(PY) -m pytest -q -m "not slow and not bench"

# The runtime's tests on the pure-Python core, the reference the C core must match (LFPY_CORE,
# docs/runtime.md): semantics, federation, checkpoints, transients, parameters and the templates'
# programs. tests/test_core.py and tests/test_lane.py compare the two cores within `make test`; the
# learners' own tests would only repeat their runs on the slower core.
CORE_TESTS := test_runtime test_federation test_checkpoint test_transient test_templates_run test_determinism \
	test_overrides test_parameter_errors test_savina
test-python-core: setup
	LFPY_CORE=python $(PY) -m pytest -q -m "not slow and not bench" $(CORE_TESTS:%=tests/%.py)

test-slow: setup
	$(PY) -m pytest -q -m "slow and not bench"

# `make bench QUICK=1` end to end, checked (minutes; CI runs it after the tests).
test-bench: setup
	$(PY) -m pytest -q -m bench

lint: setup
	$(VENV)/bin/ruff check .

# Every benchmark and one report, benchmarks/README.md (about 50 minutes here); QUICK=1: a reduced
# run of a few minutes into build/bench-quick (README.md included), leaving benchmarks/ as it is.
bench: setup
	$(PY) -m pip install --quiet -e '.[bench]'
	$(PY) benchmarks/report.py $(if $(QUICK),--quick)

clean:
	rm -rf $(VENV) build *.egg-info
