"""The algorithm registry: built-ins come from entry points; a plugin installed at test time (a real dist-info
entry point on the path) is found and trained; broken plugins are reported by name and skipped. A command whose test
reads the import's warnings in its output runs as a fresh process (freshProcesses: forked from an interpreter that
imported the third-party libraries only); the others with the site installed fork from a warm interpreter started
with its PYTHONPATH (conftest.siteInterpreter)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Callable, Iterator

import pytest
from conftest import REPO, freshProcesses, runFolder, runModule, siteInterpreter

from environments import failed_env_plugins, registered_env
from rl_baselines.core.registry import ActionType, AlgoType, PluginLoadWarning, failed_plugins, registered_rl
from rl_baselines.runs import train
from rl_baselines.runs.train import DEFAULT_ALGO, DEFAULT_ENV
from srl_toolbox.cli import UsageError, runCommand

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


def _siteCommand(env: dict[str, str]) -> Iterator[Callable[..., subprocess.CompletedProcess]]:
    """``run(MODULE, *ARGS)``: ``python -m MODULE ARGS`` with ``env``, forked from a warm interpreter started with it
    (the plugins' skipped warnings are printed by its imports, not by the command)."""
    interpreter = siteInterpreter(env)
    yield lambda module, *args: runModule(module, *args, env=env, interpreter=interpreter)
    interpreter.stop()


@pytest.fixture(scope="module")
def pluginRun(pluginPath) -> Iterator[Callable[..., subprocess.CompletedProcess]]:
    """:func:`_siteCommand` for pluginPath."""
    yield from _siteCommand({"PYTHONPATH": pluginPath})


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
    core = ["rl_baselines/core/registry.py", "rl_baselines/core/base.py", "rl_baselines/runs/train.py",
            "rl_baselines/runs/train_loop.py"]
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for path in core:
        text = open(os.path.join(repo, path)).read()
        for module in ("rl_baselines.rl_algorithm", "rl_baselines.rl_algorithm.random_agent"):
            assert f"from {module}" not in text and f"import {module}" not in text, path


FOUND_SCRIPT = ("import json, warnings\n"
                "with warnings.catch_warnings(record=True) as caught:\n"
                "    warnings.simplefilter('always')\n"
                "    from rl_baselines.runs import train_config\n"
                "    from rl_baselines.core.registry import registered_rl, failed_plugins\n"
                "print(json.dumps({'names': sorted(registered_rl), 'failed': failed_plugins,\n"
                "                  'warnings': [str(w.message) for w in caught]}))\n")


@pytest.fixture(scope="module")
def pluginFresh(pluginPath, tmp_path_factory) -> dict[str, subprocess.CompletedProcess | str]:
    """Fresh processes with pluginPath installed (freshProcesses): ``found``, FOUND_SCRIPT run by ``python -c``;
    ``trained``, train's run of first_action for 300 steps (in the folder ``log_dir``)."""
    log_dir = tmp_path_factory.mktemp("first_action")
    found, trained = freshProcesses(
        {"PYTHONPATH": pluginPath}, ("-c", FOUND_SCRIPT, [], None),
        ("-m", "rl_baselines.train", ["--algo", "first_action", "--env", "MobileRobotGymEnv-v0", "--srl-model",
                                      "ground_truth", "--num-timesteps", "300", "--log-dir", log_dir, "--no-vis",
                                      "--no-progress"], None))
    return {"found": found, "trained": trained, "log_dir": str(log_dir)}


@pytest.mark.slow
def test_plugin_is_found_and_broken_ones_are_skipped(pluginFresh):
    result = pluginFresh["found"]
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
def test_plugin_trains_through_the_cli(tmp_path, pluginFresh, pluginRun):
    help_text = pluginRun("rl_baselines.train", "--algo", "first_action", "--help").stdout
    assert "--first-action-note" in help_text
    # a fresh process: its output holds the warnings of its imports
    result = pluginFresh["trained"]
    assert result.returncode == 0, result.stderr
    # the four broken plugins are each reported by name, once, and training still happened
    for name in ("future_api", "not_an_algo", "broken_import", "half_done"):
        assert result.stderr.count(f"'{name}'") == 1, result.stderr
    run_dir = runFolder(result)
    assert json.load(open(os.path.join(run_dir, "first_action_model.json")))["steps"] >= 300
    assert len(open(os.path.join(run_dir, "monitor", "0.monitor.csv")).read().splitlines()) >= 3
    # choosing a broken plugin is a one-line error that names why it is missing
    bad = pluginRun("rl_baselines.train", "--algo", "broken_import", "--log-dir", tmp_path)
    assert bad.returncode == 2
    assert "unknown --algo 'broken_import'" in bad.stderr and "failed to load: broken_import" in bad.stderr
    # a discrete-only plugin refuses continuous actions
    bad = pluginRun("rl_baselines.train", "--algo", "first_action", "--env", "MobileRobotGymEnv-v0", "-c", "--log-dir",
                    tmp_path)
    assert bad.returncode == 2 and "does not support continuous actions" in bad.stderr
    supporting = bad.stderr.split("algorithms that do: ")[1].strip().split(", ")
    assert {"a2c", "continuous_only", "ppo2", "random_agent"} <= set(supporting) and "first_action" not in supporting
    # and a continuous-only one refuses discrete actions, listing those that take them
    bad = pluginRun("rl_baselines.train", "--algo", "continuous_only", "--env", "MobileRobotGymEnv-v0", "--log-dir",
                    tmp_path)
    assert bad.returncode == 2 and "does not support discrete actions (add -c/--continuous-actions)" in bad.stderr
    assert "first_action" in bad.stderr.splitlines()[-1]


CLASHING_CODE = textwrap.dedent('''
    from rl_baselines.core.hyperparams import Hyperparam
    from qa_fix.tiny import TinyAgent


    class SeedClash(TinyAgent):
        HYPERPARAMS = {**TinyAgent.HYPERPARAMS, "seed": Hyperparam(3)}


    class StepsClash(TinyAgent):
        HYPERPARAMS = {**TinyAgent.HYPERPARAMS, "num_timesteps": Hyperparam(3)}


    class FlagClash(TinyAgent):
        @classmethod
        def customArguments(cls, parser):
            super().customArguments(parser)
            parser.add_argument("--log-dir", default="mine")
            return parser


    class VersionClash(TinyAgent):
        @classmethod
        def customArguments(cls, parser):
            super().customArguments(parser)
            parser.add_argument("--version", default="mine")
            return parser


    class BrokenArguments(TinyAgent):
        @classmethod
        def customArguments(cls, parser):
            parser.add_argument("--my-count", type="int")
            return parser
''')

FIX_ENTRY_POINTS = textwrap.dedent('''
    [srl_toolbox.rl_algorithms]
    clash_seed = qa_fix.clash:SeedClash
    clash_steps = qa_fix.clash:StepsClash
    clash_flag = qa_fix.clash:FlagClash
    clash_version = qa_fix.clash:VersionClash
    broken_arguments = qa_fix.clash:BrokenArguments
    ppo2 = qa_fix.missing:PPO2
    broken_fix = qa_fix.nothere:X
    multi_line = qa_fix.multiline:X

    [srl_toolbox.environments]
    Dot+Env-v0 = environments.mobile_robot.mobile_robot_env:MobileRobotGymEnv
''')


@pytest.fixture(scope="module")
def brokenSite(tmp_path_factory) -> dict[str, str]:
    """PYTHONPATH of a distribution with plugins that broke commands: hyperparameters named like train's flags, a
    redeclared ppo2 that fails to import, a plugin that fails to import, an env id gymnasium cannot parse."""
    root = tmp_path_factory.mktemp("broken_site")
    package = root / "qa_fix"
    package.mkdir()
    (package / "__init__.py").write_text("")
    shutil.copy(os.path.join(REPO, "tests", "tiny_plugin_algo.py"), package / "tiny.py")
    (package / "clash.py").write_text(CLASHING_CODE)
    (package / "multiline.py").write_text('raise RuntimeError("first line\\nsecond line")\n')
    dist_info = root / "qa_fix-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: qa-fix\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text(FIX_ENTRY_POINTS)
    return {"PYTHONPATH": os.pathsep.join([REPO, str(root)])}


@pytest.fixture(scope="module")
def brokenRun(brokenSite) -> Iterator[Callable[..., subprocess.CompletedProcess]]:
    """:func:`_siteCommand` for brokenSite."""
    yield from _siteCommand(brokenSite)


BROKEN_SCRIPT = ("import json, warnings\n"
                 "with warnings.catch_warnings(record=True) as caught:\n"
                 "    warnings.simplefilter('always')\n"
                 "    from rl_baselines.runs import train_config\n"
                 "    from rl_baselines.core.registry import registered_rl, failed_plugins\n"
                 "    from environments import registered_env, failed_env_plugins\n"
                 "print(json.dumps({'names': sorted(registered_rl), 'failed': failed_plugins, "
                 "'envs': sorted(registered_env),\n"
                 "                  'failed_envs': failed_env_plugins,\n"
                 "                  'warnings': [str(w.message) for w in caught]}))\n")


@pytest.fixture(scope="module")
def brokenFresh(brokenSite) -> dict[str, subprocess.CompletedProcess]:
    """Fresh processes with brokenSite installed (freshProcesses): ``skipped``, BROKEN_SCRIPT run by ``python -c``;
    ``help``, ``python -m rl_baselines.train --algo clash_seed --help``."""
    skipped, help_ = freshProcesses(brokenSite, ("-c", BROKEN_SCRIPT, [], None),
                                    ("-m", "rl_baselines.train", ["--algo", "clash_seed", "--help"], None))
    return {"skipped": skipped, "help": help_}


def test_broken_plugins_are_skipped_with_one_warning_each(brokenFresh) -> None:
    result = brokenFresh["skipped"]
    assert result.returncode == 0, result.stderr  # the malformed env id raised gymnasium.error.Error at import
    data = json.loads(result.stdout)
    # the flag clashes below are found once the train settings are imported (the documented check)
    # a hyperparameter taking one of train's flags crashed every parser of that algorithm (argparse.ArgumentError)
    assert "hyperparameter 'seed' (--seed) has the flag of one of the train command's own" in data["failed"]["clash_seed"]
    assert "'num_timesteps' (--num-timesteps)" in data["failed"]["clash_steps"]
    # and so did a flag its customArguments adds
    assert "customArguments adds --log-dir, a flag of the train command" in data["failed"]["clash_flag"]
    assert "customArguments adds --version" in data["failed"]["clash_version"]
    # a customArguments that raises anything else is skipped too: the other algorithms' commands still work
    assert "customArguments raises ValueError" in data["failed"]["broken_arguments"]
    # a redeclared ppo2 that fails to import left the built-in active while the warning said ppo2 was skipped
    assert "ppo2" not in data["names"] and "declared by 2 entry points" in data["failed"]["ppo2"]
    assert "qa_fix.missing:PPO2 failed to load: ModuleNotFoundError" in data["failed"]["ppo2"]
    # and named the distribution to uninstall (not srl-toolbox's)
    assert data["failed"]["ppo2"].endswith(
        "uninstall one of the distributions qa-fix, srl-toolbox: pip uninstall qa-fix")
    assert not {"clash_seed", "clash_steps", "clash_flag", "clash_version", "broken_arguments", "broken_fix"} & set(
        data["names"]) and "a2c" in data["names"]
    assert "Dot+Env-v0" not in data["envs"] and "Malformed environment ID" in data["failed_envs"]["Dot+Env-v0"]
    assert "MobileRobotGymEnv-v0" in data["envs"]
    skipped = sorted(w.split("'")[1] for w in data["warnings"] if "skipped" in w)
    assert skipped == ["Dot+Env-v0", "broken_arguments", "broken_fix", "clash_flag", "clash_seed", "clash_steps",
                       "clash_version", "multi_line", "ppo2"], data["warnings"]
    # an import error's message of several lines is said on one line, in the warning and the recorded reason
    assert data["failed"]["multi_line"] == "qa_fix.multiline:X: RuntimeError: first line / second line"
    assert not [w for w in data["warnings"] if "\n" in w], data["warnings"]


def test_commands_name_the_plugins_that_failed_to_load(brokenFresh, brokenRun, tmp_path) -> None:
    # a fresh process: its output holds the warnings of its imports
    result = brokenFresh["help"]
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.count("skipped algorithm plugin 'clash_seed'") == 1, result.stderr
    assert "unknown --algo 'clash_seed'" in result.stderr.splitlines()[-1]
    # the pipeline's unknown --algo listed the valid choices only, train's and hyperparam_search's also these
    result = brokenRun("rl_baselines.pipeline", "--algo", "broken_fix", "--env", "MobileRobotGymEnv-v0",
                       "--srl-model", "ground_truth", "--num-timesteps", "100", "--log-dir", tmp_path / "logs",
                       "--no-vis")
    error = result.stderr.strip().splitlines()[-1]
    assert result.returncode == 2 and "unknown --algo 'broken_fix'" in error, result.stderr
    assert ("; plugins that failed to load: broken_arguments, broken_fix, clash_flag, clash_seed, clash_steps, "
            "clash_version, multi_line, ppo2") in error
    assert not (tmp_path / "logs").exists()
    # with no --algo, "unknown --algo 'ppo2'" said nothing of the default nor why it was skipped
    result = brokenRun("rl_baselines.train", "--env", "MobileRobotGymEnv-v0", "--log-dir", tmp_path / "logs")
    error = result.stderr.strip().splitlines()[-1]
    assert result.returncode == 2, result.stderr
    assert "unknown --algo 'ppo2' (the default --algo; skipped: declared by 2" in error, error
    assert "pip uninstall qa-fix)" in error and not (tmp_path / "logs").exists()
    result = brokenRun("rl_baselines.train", "--algo", "a2c", "--env", "Dot+Env-v0", "--log-dir", tmp_path / "logs")
    error = result.stderr.strip().splitlines()[-1]
    assert result.returncode == 2 and "unknown --env 'Dot+Env-v0'" in error, result.stderr
    assert error.endswith("; env plugins that failed to load: Dot+Env-v0")


def test_a_command_shows_a_skipped_plugin_warning_with_its_category(monkeypatch, capsys) -> None:
    """A registry first loaded inside a command's main (dataset_generator --policy imports the algorithms there, the
    SRL registry loads on first use): runCommand's one-line format keeps a skipped plugin's category, as documented;
    any other warning is ``warning: <message>`` on one line."""
    monkeypatch.setattr(warnings, "formatwarning", warnings.formatwarning)  # runCommand replaces it
    # Python's way of showing a warning, which pytest's own recording of warnings would replace
    monkeypatch.setattr(warnings, "showwarning", lambda message, category, filename, lineno, file=None, line=None:
                        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line)))

    def main(argv) -> int:
        warnings.warn_explicit("skipped algorithm plugin 'x' (x:X: ImportError)", PluginLoadWarning,
                               filename="srl_toolbox.rl_algorithms", lineno=0)
        warnings.warn("a library's advice\nover two lines", UserWarning, stacklevel=1)
        return 0

    with warnings.catch_warnings(), pytest.raises(SystemExit) as exited:
        warnings.simplefilter("always")
        runCommand(main, [])
    assert exited.value.code == 0
    assert capsys.readouterr().err.splitlines() == [
        "warning: PluginLoadWarning: skipped algorithm plugin 'x' (x:X: ImportError)",
        "warning: a library's advice over two lines"]


def test_a_run_of_a_skipped_plugin_says_why_and_lists_the_valid_choices(brokenRun, tmp_path) -> None:
    """Replaying, resuming or recording with a run whose algorithm or env plugin is now skipped: the one-line refusal
    says why it was skipped and lists the valid names and the plugins that failed to load, as train does."""
    trained = runModule("rl_baselines.train", "--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model",
                        "ground_truth", "--num-timesteps", "128", "--hyperparam", "n_steps:64", "--log-dir",
                        tmp_path / "logs", "--no-vis", "--no-progress")  # without the broken site
    assert trained.returncode == 0, trained.stderr
    run_dir = runFolder(trained)
    skipped = "which is not installed (skipped: declared by 2 entry points ("
    choices = "; valid choices: a2c, "
    failed = "; plugins that failed to load: broken_arguments, broken_fix, clash_flag, clash_seed, clash_steps, " \
             "clash_version, multi_line, ppo2"
    for command in (("replay.enjoy_baselines", "--log-dir", run_dir, "--num-timesteps", "10"),
                    ("rl_baselines.train", "--resume", run_dir),
                    ("environments.dataset_generator", "--policy", run_dir, "--save-path", tmp_path / "data",
                     "--num-episode", "1")):
        result = brokenRun(*command)
        error = result.stderr.strip().splitlines()[-1]
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert f"algorithm 'ppo2', {skipped}" in error and choices in error and error.endswith(failed), error
    assert not (tmp_path / "data").exists()
    # a run whose env is now skipped (its args.json names the malformed id)
    other = tmp_path / "other_run"
    shutil.copytree(run_dir, other)
    record = json.loads((other / "args.json").read_text())
    (other / "args.json").write_text(json.dumps({**record, "algo": "a2c", "env": "Dot+Env-v0"}))
    env_choices = "; valid choices: CarRacingGymEnv-v0, "
    for command, start in ((("replay.enjoy_baselines", "--log-dir", other, "--num-timesteps", "10"),
                            f"error: the run in {str(other)!r} used env 'Dot+Env-v0', "),
                           (("environments.dataset_generator", "--policy", other, "--save-path", tmp_path / "data",
                             "--num-episode", "1"),
                            f"error: --policy {str(other)!r}: the run used env 'Dot+Env-v0', ")):
        result = brokenRun(*command)
        error = result.stderr.strip().splitlines()[-1]
        assert result.returncode == 2 and error.startswith(start), result.stderr
        assert "which is not installed (skipped: environments.mobile_robot.mobile_robot_env:MobileRobotGymEnv: " \
               "Malformed environment ID" in error and env_choices in error, error
        assert error.endswith("; env plugins that failed to load: Dot+Env-v0"), error
    assert not (tmp_path / "data").exists()


@pytest.fixture
def registryOrder() -> Iterator[None]:
    """Put the algorithms and envs back in their registry order after a test that removes one (monkeypatch puts it
    back at the end: messages list them in that order)."""
    algos, envs = dict(registered_rl), dict(registered_env)
    yield
    for registry, saved in ((registered_rl, algos), (registered_env, envs)):
        registry.clear()
        registry.update(saved)


def test_the_default_is_named_only_when_the_flag_was_left_out(registryOrder, monkeypatch) -> None:
    """``unknown --algo 'ppo2' (the default --algo; skipped: ...)`` only when --algo was not given, whatever its
    value; likewise --env."""
    monkeypatch.delitem(registered_rl, DEFAULT_ALGO)
    monkeypatch.setitem(failed_plugins, DEFAULT_ALGO, "my_plugin:PPO2: ImportError: boom")
    for argv, default in (([], True), (["--algo", DEFAULT_ALGO], False), ([f"--algo={DEFAULT_ALGO}"], False)):
        with pytest.raises(UsageError) as refused:
            train.parseCommand(argv)
        note = "(the default --algo; skipped: " if default else "(skipped: "
        assert str(refused.value).startswith(f"unknown --algo '{DEFAULT_ALGO}' {note}my_plugin:PPO2: ImportError: "
                                             f"boom); valid choices: a2c, "), str(refused.value)
    monkeypatch.undo()
    monkeypatch.delitem(registered_env, DEFAULT_ENV)
    monkeypatch.setitem(failed_env_plugins, DEFAULT_ENV, "my_plugin:Kuka: ImportError: boom")
    for argv, default in ((["--algo", "a2c"], True), (["--algo", "a2c", "--env", DEFAULT_ENV], False)):
        with pytest.raises(UsageError) as refused:
            train.parseCommand(argv)
        note = "(the default --env; skipped: " if default else "(skipped: "
        assert str(refused.value).startswith(f"unknown --env '{DEFAULT_ENV}' {note}my_plugin:Kuka: ImportError: "
                                             f"boom); valid choices: "), str(refused.value)


def test_sweep_helps_list_the_valid_algorithms_plugins_included(pluginRun) -> None:
    """pipeline's and hyperparam_search's --help list the --algo names as train's does (a plugin's too; the search:
    the algorithms with a search space), and the env ids."""
    helps = {}
    for module in ("rl_baselines.train", "rl_baselines.pipeline", "rl_baselines.hyperparam_search"):
        result = pluginRun(module, "--help")
        assert result.returncode == 0, result.stderr
        helps[module] = " ".join(result.stdout.split())
    assert "algorithm: a2c, " in helps["rl_baselines.train"] and "first_action" in helps["rl_baselines.train"]
    assert "algorithms: a2c, " in helps["rl_baselines.pipeline"] and "first_action" in helps["rl_baselines.pipeline"]
    searchable = sorted(name for name, (cls, _, _) in registered_rl.items() if cls.getOptParam())
    assert f"algorithm with a search space: {', '.join(searchable)} [{DEFAULT_ALGO}]" in \
        helps["rl_baselines.hyperparam_search"]
    for module, text in helps.items():
        assert "env id" in text and "MobileRobotGymEnv-v0" in text, module


def _versionedAgents() -> dict[str, type]:
    """Algorithm classes of each way to declare a version beside version 1's train(self, args, ...)."""
    from rl_baselines.core.base import BaseRLObject
    from rl_baselines.rl_algorithm.ppo2 import PPO2Model

    class V1Methods(BaseRLObject):
        ALGO_TYPE = AlgoType.OTHER
        ACTION_TYPES = (ActionType.DISCRETE,)

        def save(self, save_path, _locals=None):
            pass

        @classmethod
        def load(cls, load_path, args=None):
            return cls()

        def getAction(self, observation, dones=None, deterministic=False):
            return None

        def train(self, args, callback, env_kwargs=None, train_kwargs=None):
            pass

    declared_v2 = type("DeclaredV2", (V1Methods,), {"API_VERSION": 2, "train": V1Methods.train})
    declared_v1 = type("DeclaredV1", (V1Methods,), {"API_VERSION": 1})
    return {"declared_v2": declared_v2, "undeclared": V1Methods, "declared_v1": declared_v1,
            "v2_on_a_v1_class": type("OnV1", (declared_v1,), {"API_VERSION": "2.0"}),
            "v1_subclass_of_a_builtin": type("OnPPO2", (PPO2Model,), {"train": V1Methods.train})}


def test_a_class_declaring_version_2_with_version_1s_train_is_refused_at_load() -> None:
    """It ran through the version 1 adapter without a word: refused (skipped at load, and by check_plugin) naming
    the class, the version it declares and the train it has. A class that declares nothing (version 1 did not ask
    to), declares 1, or subclasses a built-in with version 1's train still runs through the adapter."""
    from rl_baselines.check_plugin import PluginCheckError, checkClass
    from rl_baselines.core.plugin_v1 import isV1
    from rl_baselines.core.registry import _refusal

    agents = _versionedAgents()
    refused = {name: _refusal(agent) for name, agent in agents.items()}
    assert refused["declared_v2"] == (
        "DeclaredV2 declares API_VERSION 2, but its train(self, args, callback, env_kwargs=None, train_kwargs=None) "
        "is version 1's; version 2's takes (self, env, total_timesteps, hyperparams, callback, logger, settings, "
        "checkpoint=None): declare API_VERSION = 1 to run it through the version 1 adapter, or move it to version 2 "
        "(docs/plugins.md, API version 1)")
    assert refused["v2_on_a_v1_class"].startswith("OnV1 declares API_VERSION '2.0', but its train(self, args, "
                                                  "callback, env_kwargs=None, train_kwargs=None) (from V1Methods) is "
                                                  "version 1's;")
    assert {name for name, reason in refused.items() if reason is None} == {"undeclared", "declared_v1",
                                                                          "v1_subclass_of_a_builtin"}
    assert all(isV1(agents[name]) for name in ("undeclared", "declared_v1", "v1_subclass_of_a_builtin"))
    with pytest.raises(PluginCheckError, match=r"^DeclaredV2 declares API_VERSION 2, but its train\(self, args"):
        checkClass(agents["declared_v2"])


def test_a_class_declaring_version_1_with_version_2s_train_is_refused_at_load() -> None:
    """It loaded, then the version 1 adapter called its train(env, total_timesteps, ...) with version 1's (args,
    callback, env_kwargs=..., train_kwargs=...): a TypeError once training started. Refused now (skipped at load, and
    by check_plugin) naming the class, the version it declares and its train; a version 1 class whose train takes
    version 1's call, a version 1 subclass of a built-in inheriting its train (which takes both), and a class that
    declares nothing (version 2 by the base class) with version 2's train still load."""
    import argparse

    from rl_baselines.check_plugin import PluginCheckError, checkClass
    from rl_baselines.core.plugin_v1 import isV1
    from rl_baselines.core.registry import _refusal
    from rl_baselines.rl_algorithm.ppo2 import PPO2Model

    def v2Train(self, env, total_timesteps, hyperparams, callback, logger, settings, checkpoint=None):
        pass

    def anyTrain(self, *args, **kwargs):
        pass

    versioned = _versionedAgents()
    v1 = versioned["declared_v1"]
    agents = {"declared_v1": type("V2TrainOnV1", (v1,), {"API_VERSION": 1, "train": v2Train}),
              "inherited_v1": type("Inherited", (type("Declaring", (v1,), {"API_VERSION": 1}),), {"train": v2Train}),
              "any_train": type("AnyTrain", (v1,), {"API_VERSION": 1, "train": anyTrain}),
              "v1_train": v1, "v1_on_a_builtin": type("V1OnPPO2", (PPO2Model,), {"API_VERSION": 1}),
              "undeclared": type("Undeclared", (versioned["undeclared"],), {"train": v2Train})}
    with pytest.raises(TypeError):  # (what the adapter met once training started)
        agents["declared_v1"]().train(argparse.Namespace(), None, env_kwargs={}, train_kwargs={})
    refused = {name: _refusal(agent) for name, agent in agents.items()}
    assert refused["declared_v1"] == (
        "V2TrainOnV1 declares API_VERSION 1, but its train(self, env, total_timesteps, hyperparams, callback, logger, "
        "settings, checkpoint=None) is version 2's; version 1's takes (self, args, callback, env_kwargs=None, "
        "train_kwargs=None): declare API_VERSION = 2 to run it as version 2, or write it as version 1's "
        "(docs/plugins.md, API version 1)")
    assert refused["inherited_v1"].startswith("Inherited declares API_VERSION 1 (in Declaring), but its train(self, "
                                              "env, total_timesteps,")
    assert {name for name, reason in refused.items() if reason is None} == {"any_train", "v1_train", "v1_on_a_builtin",
                                                                          "undeclared"}
    assert isV1(agents["v1_on_a_builtin"]) and not isV1(agents["undeclared"])
    with pytest.raises(PluginCheckError, match=r"^V2TrainOnV1 declares API_VERSION 1, but its train\(self, env"):
        checkClass(agents["declared_v1"])
