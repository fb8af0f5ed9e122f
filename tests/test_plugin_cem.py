"""The real third-party plugin plugins/srl-toolbox-cem, installed into the test environment by `make install`, used
end to end through the toolbox's commands with no change in the core: train, save, load, continue, enjoy, plots,
pipeline and hyperparameter search with `cem`, and the `downsample` SRL model from a dataset to an agent. Also:
broken SRL-model plugins are reported by name and skipped (the algorithm side is in test_registry.py)."""
from __future__ import annotations

import glob
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import runFolder, runModule, runTrain, snapshot

from rl_baselines.core.registry import AlgoType, failed_plugins, registered_rl
from srl_models.config import SRLLookupError, resolveSRLModel
from srl_models.registry import SRLType, failed_srl_plugins, learnedModels, registered_srl
from srl_toolbox.cli import pythonCommand

pytestmark = pytest.mark.slow  # whole trainings or sweeps: left out of `make test-fast`

# What the plugin may import from the toolbox: the contracts and the helpers docs/plugins.md names
# The published import paths (docs/plugins.md, docs/architecture.md); never a deprecated re-export shim
# (tests/test_shims.py checks every module of the project for that too).
PUBLIC_MODULES = {"rl_baselines.core.base", "rl_baselines.core.algo_types", "rl_baselines.core.hyperparams",
                  "rl_baselines.envs.factory", "rl_baselines.check_plugin", "environments.dataset", "srl_models.base",
                  "srl_toolbox.cli", "srl_toolbox.files"}
GROUND_TRUTH = ("--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth")


def test_plugin_is_installed_and_registered() -> None:
    distribution = importlib.metadata.distribution("srl-toolbox-cem")
    groups = {(point.group, point.name) for point in distribution.entry_points}
    assert {("srl_toolbox.rl_algorithms", "cem"), ("srl_toolbox.srl_models", "downsample")} <= groups

    algo_class, algo_type, _ = registered_rl["cem"]
    assert algo_class.__module__ == "srl_toolbox_cem.cem" and algo_type is AlgoType.EVOLUTION_STRATEGIES
    assert registered_srl["downsample"][1] is SRLType.LEARNED and "downsample" in learnedModels()
    assert "cem" not in failed_plugins and "downsample" not in failed_srl_plugins


def test_train_save_load_continue_enjoy(tmp_path) -> None:
    help_text = runModule("rl_baselines.train", "--algo", "cem", "--help").stdout
    assert "--elite-frac" in help_text and "--num-population" in help_text
    result = runTrain("--algo", "cem", *GROUND_TRUTH, "--num-timesteps", "1500", "--num-population", "2",
                      "--min-episodes-save", "1", "--seed", "1", "--log-dir", tmp_path)
    run_dir = runFolder(result)
    model_path = os.path.join(run_dir, "cem_model.npz")
    for name in ("args.json", "learning_curve.png", "best/cem_model.npz"):
        assert os.path.isfile(os.path.join(run_dir, name)), name
    assert not glob.glob(os.path.join(run_dir, "vecnormalize*"))  # cem normalises states itself, in its model
    rewards = np.loadtxt(os.path.join(run_dir, "monitor", "0.monitor.csv"), delimiter=",", skiprows=2, usecols=1)
    assert rewards.size == 6  # 1500 steps of 250-step episodes: the ES progress reaches the monitor file

    agent = registered_rl["cem"][0].load(model_path)
    assert agent.num_timesteps == 1500 and agent.generation >= 2 and agent.hyperparams["num_population"] == 2
    actions = agent.getAction(np.zeros((3, 2), dtype=np.float32))
    assert actions.shape == (3,) and set(actions.tolist()) <= {0, 1, 2, 3}

    more = runTrain("--algo", "cem", *GROUND_TRUTH, "--num-timesteps", "500", "--load-rl-model-path", model_path,
                    "--log-dir", tmp_path)
    assert registered_rl["cem"][0].load(os.path.join(runFolder(more), "cem_model.npz")).num_timesteps == 2000

    replay = runModule("replay.enjoy_baselines", "--log-dir", run_dir, "--num-timesteps", "250")
    assert replay.returncode == 0, replay.stderr
    assert "Mean episode reward over 1 episode:" in replay.stdout
    plots = runModule("replay.plots", "-i", run_dir, "--output-dir", tmp_path / "plots")
    assert plots.returncode == 0 and os.listdir(tmp_path / "plots"), plots.stderr


def test_bad_hyperparameter_is_one_line(tmp_path) -> None:
    for flags, message in ((("--hyperparam", "elite_frac:3"), "'elite_frac' must be in (0, 1], got 3.0"),
                           (("--num-population", "1"), "'num_population' must be in [2, 10000], got 1")):
        result = runModule("rl_baselines.train", "--algo", "cem", *GROUND_TRUTH, *flags, "--log-dir", tmp_path)
        assert result.returncode == 2 and message in result.stderr and result.stderr.count("\n") == 1
    assert not os.listdir(tmp_path)


def test_downsample_model_from_dataset_to_agent(tmp_path) -> None:
    data = tmp_path / "data"
    generated = runModule("environments.dataset_generator", "--env", "MobileRobotGymEnv-v0", "--num-episode", "2",
                          "--max-steps", "20", "--img-shape", "3", "32", "32", "--name", "tiny", "--save-path", data,
                          "--no-progress")
    assert generated.returncode == 0, generated.stderr
    fitted = runModule("srl_toolbox_cem.downsample", "--data-folder", data / "tiny", "--grid", "4", "4",
                       "--log-folder", tmp_path / "srl")
    assert fitted.returncode == 0, fitted.stderr
    model_folder = fitted.stdout.strip().splitlines()[-1].removeprefix("Model folder: ")
    config = json.load(open(os.path.join(model_folder, "exp_config.json")))
    assert config["srl_model"] == "downsample" and config["state_dim"] == 48 and config["img_shape"] == [3, 32, 32]

    result = runTrain("--algo", "cem", "--env", "MobileRobotGymEnv-v0", "--srl-model-path", model_folder,
                      "--num-timesteps", "300", "--num-population", "2", "--log-dir", tmp_path / "logs")
    run_dir = runFolder(result)
    assert os.sep + os.path.join("downsample", "cem") + os.sep in run_dir

    agent = registered_rl["cem"][0].load(os.path.join(run_dir, "cem_model.npz"))
    assert agent.observation_shape == (48,)  # the agent saw the plugin model's states, not pixels
    replay = runModule("replay.enjoy_baselines", "--log-dir", run_dir, "--num-timesteps", "50")
    assert replay.returncode == 0, replay.stderr


def test_pipeline_and_hyperparam_search_run_cem(tmp_path) -> None:
    sweep = runModule("rl_baselines.pipeline", "--algo", "cem", *GROUND_TRUTH, "--num-iteration", "1",
                      "--log-dir", tmp_path / "sweep", "--workers", "1", "--no-vis", "--no-progress",
                      "--num-timesteps", "300", "--num-population", "2")
    assert sweep.returncode == 0, sweep.stderr
    assert "1/1 runs finished" in sweep.stdout
    assert glob.glob(str(tmp_path / "sweep" / "MobileRobotGymEnv-v0" / "ground_truth" / "cem" / "*" / "cem_model.npz"))
    search = runModule("rl_baselines.hyperparam_search", "--algo", "cem", *GROUND_TRUTH,
                       "--n-trials", "1", "--num-timesteps", "300", "--log-dir", tmp_path / "search",
                       "--optimizer", "random", "--pruner", "none", "--eval-episodes", "1", "--n-evaluations", "1",
                       "--no-progress")
    assert search.returncode == 0, search.stderr
    assert "searching num_population, elite_frac, init_std, extra_std, extra_decay" in search.stdout
    assert "1 completed" in search.stdout


BROKEN_SRL_PLUGINS = textwrap.dedent('''
    import numpy as np

    from srl_models.base import BaseSRLModel


    class MeanColour(BaseSRLModel):
        """State: the mean colour of the image."""

        def getState(self, observations):
            return np.asarray(observations, dtype=np.float32).mean(axis=(1, 2))

        def save(self, folder):
            pass

        @classmethod
        def load(cls, folder, device="cpu"):
            return cls(3, (3, 8, 8))


    class GetStateOnly(BaseSRLModel):
        """Leaves save and load out: the registry skips it, naming them."""

        def getState(self, observations):
            return np.zeros((len(observations), 1), dtype=np.float32)


    class FutureApi(MeanColour):
        API_VERSION = 2


    def not_a_model():
        return None
''')

SRL_ENTRY_POINTS = textwrap.dedent('''
    [srl_toolbox.srl_models]
    mean_colour = broken_srl_plugin.models:MeanColour
    future_srl_api = broken_srl_plugin.models:FutureApi
    get_state_only = broken_srl_plugin.models:GetStateOnly
    not_an_srl_model = broken_srl_plugin.models:not_a_model
    broken_srl_import = broken_srl_plugin.missing:Anything
''')


def test_broken_srl_plugins_are_reported_by_name_and_skipped(tmp_path) -> None:
    package = tmp_path / "broken_srl_plugin"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "models.py").write_text(BROKEN_SRL_PLUGINS)
    dist_info = tmp_path / "broken_srl_plugin-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-srl-plugin\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text(SRL_ENTRY_POINTS)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    script = ("import json, warnings\n"
              "with warnings.catch_warnings(record=True) as caught:\n"
              "    warnings.simplefilter('always')\n"
              "    from srl_models.registry import registered_srl, failed_srl_plugins\n"
              "print(json.dumps({'names': sorted(registered_srl), 'failed': failed_srl_plugins,\n"
              "                  'warnings': [str(w.message) for w in caught if 'SRL model plugin' in str(w.message)]}))\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert {"mean_colour", "downsample", "ground_truth"} <= set(data["names"])
    assert set(data["failed"]) == {"future_srl_api", "not_an_srl_model", "broken_srl_import", "get_state_only"}
    assert "GetStateOnly is abstract: it does not implement load, save" in data["failed"]["get_state_only"]
    assert "API version 2" in data["failed"]["future_srl_api"]
    assert "not a subclass of srl_models.base.BaseSRLModel" in data["failed"]["not_an_srl_model"]
    assert "ModuleNotFoundError" in data["failed"]["broken_srl_import"]
    assert len(data["warnings"]) == 4
    # A command names each skipped plugin once, and asking for one is a one-line error
    before = snapshot(str(tmp_path))
    bad = runModule("rl_baselines.train", "--algo", "cem", "--srl-model", "future_srl_api", "--log-dir",
                    tmp_path / "logs", env={"PYTHONPATH": str(tmp_path)})
    assert bad.returncode == 2 and "unknown --srl-model 'future_srl_api'" in bad.stderr.splitlines()[-1]
    for name in ("future_srl_api", "not_an_srl_model", "broken_srl_import"):
        assert bad.stderr.count(f"'{name}'") >= 1, bad.stderr
    assert snapshot(str(tmp_path)) == before


def test_plugin_is_a_separate_package() -> None:
    root = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "plugins", "srl-toolbox-cem")
    for path in ("pyproject.toml", "README.md", "tests"):
        assert os.path.exists(os.path.join(root, path)), path
    # written against the public contract only: no import of toolbox internals
    for source in glob.glob(os.path.join(root, "src", "srl_toolbox_cem", "*.py")):
        imported = set(re.findall(r"^\s*(?:from|import)\s+([\w.]+)", open(source).read(), flags=re.MULTILINE))
        toolbox = {module for module in imported if module.split(".")[0] in ("rl_baselines", "srl_models",
                                                                               "environments", "replay", "srl_toolbox")}
        assert toolbox <= PUBLIC_MODULES, f"{source} imports {toolbox - PUBLIC_MODULES}"


def test_a_plugin_model_without_a_trained_folder_is_not_sent_to_prepare(tmp_path) -> None:
    # the hint named `srl_models.prepare ... --srl-model downsample`, which refuses a model it does not train
    config = tmp_path / "srl_models.yaml"
    config.write_text("{}\n")
    for name, words in (("downsample", "srl_models.prepare does not train 'downsample': pass its trained folder with "
                                       "--srl-model-path"),
                        ("vae", f"train and register one with {pythonCommand()} -m srl_models.prepare --env "
                                "MobileRobotGymEnv-v0 --srl-model vae")):
        with pytest.raises(SRLLookupError, match=re.escape(words)):
            resolveSRLModel("MobileRobotGymEnv-v0", name, str(config))
