"""What a hyperparameter search's ``--workers`` process imports to start: not torch, Stable-Baselines3,
sb3-contrib nor matplotlib, which only the command's checks (the algorithms) and its outputs need.

A worker is a multiprocessing spawn child: it imports the command's module by name as ``__mp_main__``
(``multiprocessing.spawn.prepare``, the child's first step, given what the parent sends when it runs as ``python -m
rl_baselines.hyperparam_search``), then unpickles its target, ``search_trials._workerMain``, and its config. The test
does those steps in a fresh interpreter and reads ``sys.modules``. The names the run-folder readers spell to stay
light (the Monitor CSV suffix) are checked against Stable-Baselines3's own here.
"""
from __future__ import annotations

import json
import subprocess
import sys

from stable_baselines3.common.monitor import Monitor

from rl_baselines.core import run_folder
from rl_baselines.runs import evaluation, evaluation_files

HEAVY = ("torch", "stable_baselines3", "sb3_contrib", "matplotlib")

# A --workers process's start, as multiprocessing's spawn child makes it (its main module, then its target)
WORKER_START = """
import json, multiprocessing.spawn, pickle, sys
multiprocessing.spawn.prepare({"init_main_from_name": "rl_baselines.hyperparam_search"})
assert sys.modules["__mp_main__"].__name__ == "__mp_main__"
from rl_baselines.sweeps import search_study, search_trials
pickle.loads(pickle.dumps((search_trials._workerMain, search_study.SearchConfig)))
print(json.dumps(sorted(name for name in %r if name in sys.modules)))
"""


def test_a_search_worker_starts_without_torch_or_the_algorithms():
    result = subprocess.run([sys.executable, "-c", WORKER_START % (HEAVY,)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == []


def test_the_light_spellings_match_stable_baselines3():
    assert run_folder.MONITOR_SUFFIX == f".{Monitor.EXT}"
    assert evaluation.readEvaluations is evaluation_files.readEvaluations  # (the old import path still works)
