# Quick start: `make demo` and `make test`. Everything runs from the project's own virtual environment.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# visdom 0.2.4 only builds with setuptools < 81 (see build-constraints.txt)
export PIP_BUILD_CONSTRAINT := $(CURDIR)/build-constraints.txt
DEMO_DIR ?= logs/demo
DEMO_STEPS ?= 60000
SRL_DEMO_DIR ?= logs/srl_demo
SRL_DEMO_STEPS ?= 36000
# The visdom port of the live plots: `make visdom`, `make demo` and `make srl-demo` use the same one
VISDOM_PORT ?= 8097
# A package index to take torch's build from besides PyPI, whose Linux wheel of torch 2.13.0 is the CUDA one (several
# GB): `make install TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu` takes the CPU build the tests run with
TORCH_INDEX_URL ?=

.PHONY: install demo srl-demo lint test test-fast bench bench-device bench-learning bench-srl bench-srl-rl bench-state-shape bench-renderer-gtc bench-encoders bench-cnn bench-zoo profile visdom clean browser

# The venv with the project and the example plugin package (plugins/srl-toolbox-cem), then visdom's browser scripts
# from the npm registry (checked against their SHA-256; a no-op when in place, so nothing is fetched at run time).
# They serve only the live plots: without a registry, a warning with the command that retries, and install goes
# on; later calls repeat the warning without trying again (--optional).
install: $(VENV)/.installed
	$(INSTALL_LOCK) $(PY) -m replay.visdom_static --optional

# Two makes in a fresh clone (`make visdom` in another terminal, then `make demo`) would build the same venv at once:
# each install step holds a lock (flock, where it exists), so the second make waits for the first, then finds the
# venv made and pip with nothing left to do.
INSTALL_LOCK := $(shell command -v flock >/dev/null 2>&1 && echo flock $(CURDIR)/.venv.lock)
$(VENV)/.installed: setup.py build-constraints.txt plugins/srl-toolbox-cem/pyproject.toml
	$(INSTALL_LOCK) sh -c 'test -x $(PY) || $(PYTHON) -m venv $(VENV)'
	$(INSTALL_LOCK) $(PY) -m pip install --quiet --upgrade "pip>=25"
	$(INSTALL_LOCK) $(PY) -m pip install --quiet $(if $(TORCH_INDEX_URL),--extra-index-url $(TORCH_INDEX_URL)) \
	  "torch==2.13.0" -e ".[test]" -e ./plugins/srl-toolbox-cem
	touch $@

# Debian's chromium for the browser test of the visdom page (tests/test_visdom_page.py): installed with apt-get
# when missing, as root (CI) or with passwordless sudo; otherwise that test is skipped and says why.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then sudo=""; elif sudo -n true 2>/dev/null; then sudo="sudo -n"; \
	  else echo "note: chromium is missing and apt-get needs root (sudo apt-get install chromium): the visdom page test will be skipped"; exit 0; fi; \
	  if ! command -v apt-get >/dev/null 2>&1; then echo "note: no apt-get to install chromium: the visdom page test will be skipped"; exit 0; fi; \
	  echo "Installing Debian's chromium for the visdom page test"; \
	  $$sudo apt-get update -qq && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

demo: install
	$(PY) -m replay.demo --log-dir $(DEMO_DIR) --num-timesteps $(DEMO_STEPS) --port $(VISDOM_PORT)

# A learned representation under an agent: MobileRobot dataset -> SRL model (srl_combination) -> ppo2 on its states
# -> replay GIF and latent-space pictures (python -m replay.srl_demo; everything under $(SRL_DEMO_DIR)).
srl-demo: install
	$(PY) -m replay.srl_demo --log-dir $(SRL_DEMO_DIR) --num-timesteps $(SRL_DEMO_STEPS) --port $(VISDOM_PORT)

# ruff (ruff.toml) and the import-linter contracts (.importlinter: the packages' dependency order): a wrong arrow
# between layers or a lint error fails `make test`, hence CI.
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

# The tests start a few hundred interpreters: where the environment sets PYTHONDONTWRITEBYTECODE, TEST_ENV lets them
# cache the project's compiled modules (__pycache__, ignored by git) instead of compiling them again at each start.
TEST_ENV := PYTHONDONTWRITEBYTECODE=
# --dist worksteal: a worker that runs out of tests takes the other's last queued ones (tests/conftest.py queues the
# modules with slow tests first, so the run ends on short ones).
test: install browser lint
	$(TEST_ENV) $(PY) -m pytest -n 2 --dist worksteal tests plugins/srl-toolbox-cem/tests

# Everything but the tests marked slow (whole trainings, sweeps, searches, the browser): a few minutes on 2 cores.
# `make test` (and CI) still runs every test.
test-fast: install
	$(TEST_ENV) $(PY) -m pytest -n 2 -m "not slow" tests plugins/srl-toolbox-cem/tests

# The speed figures, each appended to docs/benchmarks.md with its command and machine: envs (mobile robots, Kuka,
# every env), env worker start, renderers, ppo2 on Kuka under each physics and renderer, datasets, the train loop,
# ppo2 through a trained VAE, the frozen SRL encoder's forward pass, ppo2 from raw pixels on shared cores, sweeps
# (of the mobile robot by executor, of the arm by where its runs' envs step).
# Each script runs alone at smaller settings (its --help; --results-file FILE or --no-append keeps a trial out of
# docs/benchmarks.md).
bench: install
	$(PY) -m benchmarks.env_speed
	$(PY) -m benchmarks.env_start
	$(PY) -m benchmarks.render_speed
	$(PY) -m benchmarks.kuka_speed
	$(PY) -m benchmarks.kuka_ppo_speed
	$(PY) -m benchmarks.all_envs_speed
	$(PY) -m benchmarks.dataset_speed
	$(PY) -m benchmarks.train_speed
	$(PY) -m benchmarks.srl_speed
	$(PY) -m benchmarks.encoder_speed
	$(PY) -m benchmarks.pixel_update_speed
	$(PY) -m benchmarks.vec_env_speed
	$(PY) -m benchmarks.shared_cores
	$(PY) -m benchmarks.sweep_speed
	$(PY) -m benchmarks.sweep_layout

# Training steps/s of the algorithms on the CPU and on a GPU side by side, and the device --device auto picks for
# each (on a machine without a GPU only the CPU is measured)
bench-device: install
	$(PY) -m benchmarks.device_speed

# Every algorithm learning its task, 3 seeds, beside the random agent (about 45 min on 2 cores; a separate target
# because it is long: `python -m benchmarks.learning --quick` checks every run in a few minutes).
bench-learning: install
	$(PY) -m benchmarks.learning

# Every learned SRL model trained on one MobileRobot and one Kuka dataset, GTC and KNN-MSE into docs/srl.md (about
# 50 min on 2 busy cores; `python -m benchmarks.srl_table --quick` checks every model on tiny datasets in minutes).
bench-srl: install
	$(PY) -m benchmarks.srl_table

# Does SRL help? ppo2 on the four tasks of Raffin et al. (MobileRobot 2-D and 1-D, Kuka with a random and a moving
# target) from ground truth, raw pixels and 11 learned representations (the 9 of 2018, atc, curl), and two variants
# (srl_splits at ground truth's size, raw pixels with --augment shift), 5 seeds, into docs/srl.md (section "Does SRL
# help?", with each env's runs against the archived runs of other train settings: --compare-to) and
# docs/benchmarks.md. About 7 h on 2 quiet cores from an empty archive (the script prints its estimate
# first), but resumable: the same command again does only what is missing; finished runs are archived in
# benchmarks/srl_rl_runs.json (commit it) and not run again. `python -m benchmarks.srl_rl --quick` checks the chain.
bench-srl-rl: install
	$(PY) -m benchmarks.srl_rl --compare-to benchmarks/srl_rl_runs.json

# ppo2 on MobileRobot's ground truth as it is and through fixed random maps to 32 numbers (no images): does the
# shape of a state decide whether the agent learns in the SRL benchmark's budget? About 12 min on 2 cores.
bench-state-shape: install
	$(PY) -m benchmarks.state_shape

# Where a whole training run's time goes (py-spy --subprocesses of every process, sorted into render, physics,
# encode, policy, PPO update, evaluation, inter-process, logging): ppo2 on MobileRobot and Kuka (each renderer), from
# raw pixels and a VAE, into docs/benchmarks.md. About 10 min on 2 cores.
profile: install
	$(PY) -m pip install --quiet -e ".[profile]"
	$(PY) -m benchmarks.profile_runs

# Mobile robots: does an SRL model (vae, 3 seeds) trained on one renderer's dataset keep its GTC on the other
# renderer's frames of the same states? Into docs/benchmarks.md (its time: the README's table).
bench-renderer-gtc: install
	$(PY) -m benchmarks.renderer_gtc

# SRL encoders' seconds per epoch beside the VAE's (vae, autoencoder, srl_combination, atc, curl), and ppo2's steps/s
# from raw pixels without --augment, with --augment shift (DrAC) and with --augment-loss rad, on MobileRobot. Into
# docs/benchmarks.md; a few minutes.
bench-encoders: install
	$(PY) -m benchmarks.srl_epoch_speed

# Raw-pixel ppo2 with MediumCNN against SB3's NatureCNN (--features-extractor): steps to the threshold over 3 seeds on
# MobileRobot and Kuka, and the training rates. Hours on 2 cores; resumable (run it again to go on).
bench-cnn: install
	$(PY) -m benchmarks.cnn_features

# Wall-clock time to the threshold on MobileRobot: ppo2 from raw pixels and from a learned representation beside
# rl_zoo3's PPO with the same hyperparameters (whole processes; both programs' raw pixels side by side), seeds 0 1 2.
# rl_zoo3 goes into .zoo-packages without its dependencies (they would downgrade pillow); only its process sees it.
# About 35 min per seed on 2 cores; resumable.
ZOO_PACKAGES := rl_zoo3==2.9.2 huggingface_sb3==3.0 huggingface_hub==2.4.0 httpx2==2.16.2 httpcore2==2.16.2 \
	h11==0.16.0 truststore==0.10.5 wasabi==1.1.3
bench-zoo: install
	$(PY) -m pip install --quiet --no-deps --upgrade --target .zoo-packages $(ZOO_PACKAGES)
	$(PY) -m benchmarks.zoo_compare

visdom: install
	$(PY) -m replay.visdom_server --port $(VISDOM_PORT)

clean:
	rm -rf $(VENV) *.egg-info
