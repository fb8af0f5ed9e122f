"""The algorithm registry: built-ins come from entry points; a plugin installed at test time (a real dist-info
entry point on the path) is found and trained; broken plugins are reported by name and skipped."""
from __future__ import annotations

import json
import os
import textwrap

import pytest
from conftest import runFolder, runModule

from rl_baselines.core.registry import ActionType, AlgoType, registered_rl

PLUGIN_CODE = textwrap.dedent('''
    """A third-party algorithm written only against the public contract."""
    import numpy as np

    from rl_baselines.core.base import BaseRLObject
    from rl_baselines.core.registry import ActionType, AlgoType
    from srl_toolbox.files import readJson, writeJson


    class FirstActionAgent(BaseRLObject):
        """Always takes action 0 (discrete only)."""

        ALGO_TYPE = AlgoType.OTHER
        ACTION_TYPES = (ActionType.DISCRETE,)
        MODEL_EXTENSION = ".json"

        @classmethod
        def customArguments(cls, parser):
            parser.add_argument("--first-action-note", default="hello")
            return parser

        def save(self, save_path, _locals=None):
            writeJson(save_path, {"steps": self.num_timesteps})

        @classmethod
        def load(cls, load_path, args=None):
            agent = cls()
            agent.num_timesteps = readJson(load_path)["steps"]
            return agent

        def getAction(self, observation, dones=None, deterministic=False):
            return np.zeros(len(observation), dtype=np.int64)

        def train(self, args, callback, env_kwargs=None, train_kwargs=None):
            env = self.makeEnv(args, env_kwargs)
            observation = env.reset()
            while self.num_timesteps < args.num_timesteps:
                observation, _, _, _ = env.step(self.getAction(observation))
                self.num_timesteps += env.num_envs
                callback(locals(), globals())
            env.close()


    class ContinuousOnlyAgent(FirstActionAgent):
        ACTION_TYPES = (ActionType.CONTINUOUS,)


    class FutureApiAgent(FirstActionAgent):
        API_VERSION = 3


    class WrongTrainAgent(FirstActionAgent):
        """Version 2, with SB3's train signature: it loaded, then training crashed with a traceback."""

        API_VERSION = 2

        def train(self, env, total_timesteps, callback=None):
            pass


    class HalfDoneAgent(BaseRLObject):
        """Only train: save, load and getAction are left out."""

        def train(self, args, callback, env_kwargs=None, train_kwargs=None):
            pass


    def not_a_class():
        return None
''')

ENTRY_POINTS = textwrap.dedent('''
    [srl_toolbox.rl_algorithms]
    first_action = third_party_algo.algo:FirstActionAgent
    continuous_only = third_party_algo.algo:ContinuousOnlyAgent
    future_api = third_party_algo.algo:FutureApiAgent
    not_an_algo = third_party_algo.algo:not_a_class
    broken_import = third_party_algo.missing_module:Anything
    half_done = third_party_algo.algo:HalfDoneAgent
    wrong_train = third_party_algo.algo:WrongTrainAgent
''')


@pytest.fixture(scope="module")
def pluginPath(tmp_path_factory) -> str:
    """A folder that holds an installed third-party distribution (package + dist-info with entry points)."""
    root = tmp_path_factory.mktemp("site")
    package = root / "third_party_algo"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "algo.py").write_text(PLUGIN_CODE)
    dist_info = root / "third_party_algo-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: third-party-algo\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text(ENTRY_POINTS)
    return str(root)


def test_builtins_are_registered():
    assert {"a2c", "ppo2", "random_agent"} <= set(registered_rl)
    for name in ("a2c", "ppo2"):
        algo_class, algo_type, actions = registered_rl[name]
        assert algo_type is AlgoType.REINFORCEMENT_LEARNING
        assert set(actions) == {ActionType.DISCRETE, ActionType.CONTINUOUS}
        assert algo_class.getOptParam()
    assert registered_rl["random_agent"][1] is AlgoType.OTHER


def test_core_imports_no_algorithm_by_name():
    """Built-ins register through entry points only: the core modules never import them."""
    core = ["rl_baselines/core/registry.py", "rl_baselines/core/base.py", "rl_baselines/runs/train.py"]
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for path in core:
        text = open(os.path.join(repo, path)).read()
        for module in ("rl_baselines.rl_algorithm", "rl_baselines.rl_algorithm.random_agent"):
            assert f"from {module}" not in text and f"import {module}" not in text, path


@pytest.mark.slow
def test_plugin_is_found_and_broken_ones_are_skipped(pluginPath):
    script = ("import json, warnings\n"
              "with warnings.catch_warnings(record=True) as caught:\n"
              "    warnings.simplefilter('always')\n"
              "    from rl_baselines.core.registry import registered_rl, failed_plugins\n"
              "print(json.dumps({'names': sorted(registered_rl), 'failed': failed_plugins,\n"
              "                  'warnings': [str(w.message) for w in caught]}))\n")
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": pluginPath})
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert "first_action" in data["names"] and "ppo2" in data["names"]
    assert set(data["failed"]) == {"future_api", "not_an_algo", "broken_import", "half_done", "wrong_train"}
    assert ("WrongTrainAgent.train(self, env, total_timesteps, callback=None) does not take the version 2 arguments "
            "(self, env, total_timesteps, hyperparams, callback, logger, settings, checkpoint)"
            ) in data["failed"]["wrong_train"]
    assert "HalfDoneAgent is abstract: it does not implement getAction, load, save" in data["failed"]["half_done"]
    assert "API version 3" in data["failed"]["future_api"]
    assert "not a subclass" in data["failed"]["not_an_algo"]
    assert "ModuleNotFoundError" in data["failed"]["broken_import"]
    assert len(data["warnings"]) == 5 and all("skipped algorithm plugin" in w for w in data["warnings"])


@pytest.mark.slow
def test_plugin_trains_through_the_cli(tmp_path, pluginPath):
    env = {"PYTHONPATH": pluginPath}
    help_text = runModule("rl_baselines.train", "--algo", "first_action", "--help", env=env).stdout
    assert "--first-action-note" in help_text
    result = runModule("rl_baselines.train", "--algo", "first_action", "--env", "MobileRobotGymEnv-v0",
                       "--srl-model", "ground_truth",
                       "--num-timesteps", "300", "--log-dir", tmp_path, "--no-vis", "--no-progress", env=env)
    assert result.returncode == 0, result.stderr
    # the four broken plugins are each reported by name, once, and training still happened
    for name in ("future_api", "not_an_algo", "broken_import", "half_done"):
        assert result.stderr.count(f"'{name}'") == 1, result.stderr
    run_dir = runFolder(result)
    assert json.load(open(os.path.join(run_dir, "first_action_model.json")))["steps"] >= 300
    assert len(open(os.path.join(run_dir, "monitor", "0.monitor.csv")).read().splitlines()) >= 3
    # choosing a broken plugin is a one-line error that names why it is missing
    bad = runModule("rl_baselines.train", "--algo", "broken_import", "--log-dir", tmp_path, env=env)
    assert bad.returncode == 2
    assert "unknown --algo 'broken_import'" in bad.stderr and "failed to load: broken_import" in bad.stderr
    # a discrete-only plugin refuses continuous actions
    bad = runModule("rl_baselines.train", "--algo", "first_action", "--env", "MobileRobotGymEnv-v0", "-c", "--log-dir",
                    tmp_path, env=env)
    assert bad.returncode == 2 and "does not support continuous actions" in bad.stderr
    supporting = bad.stderr.split("algorithms that do: ")[1].strip().split(", ")
    assert {"a2c", "continuous_only", "ppo2", "random_agent"} <= set(supporting) and "first_action" not in supporting
    # and a continuous-only one refuses discrete actions, listing those that take them
    bad = runModule("rl_baselines.train", "--algo", "continuous_only", "--env", "MobileRobotGymEnv-v0", "--log-dir",
                    tmp_path, env=env)
    assert bad.returncode == 2 and "does not support discrete actions (add -c/--continuous-actions)" in bad.stderr
    assert "first_action" in bad.stderr.splitlines()[-1]
