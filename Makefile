# The usual targets. `make demo` and `make test` work on a fresh machine: they create .venv first.
VENV ?= .venv
# The CPU build by default; on a GPU machine pass the CUDA build that fits the driver, e.g. TORCH=torch==2.13.0+cu128
TORCH ?= torch==2.13.0
PYTHON := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean gpu-bundle

$(STAMP): setup.cfg pyproject.toml
	python3 -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --upgrade pip
	# The CPU build of PyTorch first: a plain `pip install torch` pulls a multi-GB CUDA build.
	$(PYTHON) -m pip install --quiet "$(TORCH)"
	$(PYTHON) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	PATH="$(abspath $(VENV))/bin:$$PATH" bash examples/demo.sh

test: $(STAMP)
	$(PYTHON) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check mosesrnn moses_integration tests benchmarks

bench: $(STAMP)
	$(PYTHON) benchmarks/score_speed.py
	$(PYTHON) benchmarks/train_speed.py

# What a bare GPU host needs beside the tree, into bundle/ (ignored; carry it: carry ["bundle"]); needs ../shared.
# Then on the host: bash benchmarks/on_device.sh OUTDIR (docs/performance.md, "The device check").
BUNDLE_PYTHON ?= $(if $(wildcard $(PYTHON)),$(PYTHON),python3)
gpu-bundle:
	$(BUNDLE_PYTHON) benchmarks/gpu_bundle.py

clean:
	rm -rf $(VENV) demo-output .pytest_cache
