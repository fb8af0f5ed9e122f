# Quick start: `make demo` and `make test`. Everything runs from the project's own virtual environment.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# visdom 0.2.4 only builds with setuptools < 81 (see build-constraints.txt)
export PIP_BUILD_CONSTRAINT := $(CURDIR)/build-constraints.txt
DEMO_DIR ?= logs/demo
DEMO_STEPS ?= 60000

.PHONY: install demo test bench visdom clean

install: $(VENV)/.installed

$(VENV)/.installed: setup.py build-constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip>=25"
	$(PY) -m pip install --quiet "torch==2.13.0" -e ".[test]"
	touch $@

demo: install
	$(PY) -m replay.demo --log-dir $(DEMO_DIR) --num-timesteps $(DEMO_STEPS)

test: install
	$(PY) -m pytest -n 2 tests

bench: install
	$(PY) benchmarks/env_speed.py
	$(PY) benchmarks/kuka_speed.py
	$(PY) benchmarks/all_envs_speed.py
	$(PY) benchmarks/dataset_speed.py
	$(PY) benchmarks/train_speed.py

visdom: install
	$(PY) -m replay.visdom_server --port 8097

clean:
	rm -rf $(VENV) *.egg-info
