"""A third-party package adds an environment through the `srl_toolbox.environments` entry point (a real dist-info on
the path): gymnasium.make finds it after `import environments`, and the train command trains on it. Those commands
fork from a warm interpreter started with the site's PYTHONPATH (conftest.siteInterpreter); the tests about the
plugin's import order, or the warnings of broken plugins, run fresh processes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import gymnasium as gym
import numpy as np
import pytest
from conftest import docsExample, freshProcesses, runFolder, runModule, siteInterpreter

from environments.observation_check import ObservationCheck, ObservationSpaceWarning, observationProblem

# docs/plugins.md's complete minimal environment, and two variants: one without a ground truth, one whose images do
# not fit its observation space
ENV_CODE = docsExample("### A complete minimal environment") + textwrap.dedent('''


    class LineWorldNoGTEnv(LineWorldEnv):
        """Pixels only: no ground truth (left out of SRL_MODES)."""
        SRL_MODES = ("raw_pixels",)

        def getGroundTruth(self):
            raise NotImplementedError


    class BadSpaceEnv(LineWorldEnv):
        """Its images are float64 in [0, 1], not the uint8 of its observation_space."""

        def _obs(self):
            observation = super()._obs()
            return observation / 255.0 if self.usesPixels else observation
''')


def _installPlugin(root) -> str:
    package = root / "line_world"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "env.py").write_text(ENV_CODE)
    dist_info = root / "line_world-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: line-world\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text(
        "[srl_toolbox.environments]\nLineWorldEnv-v0 = line_world.env:LineWorldEnv\n"
        "LineWorldNoGTEnv-v0 = line_world.env:LineWorldNoGTEnv\nBadSpace-v0 = line_world.env:BadSpaceEnv\n")
    return str(root)


@pytest.fixture(scope="module")
def lineWorldRun(tmp_path_factory):
    """``run(MODULE, *ARGS, cwd=None)``: ``python -m MODULE ARGS`` with LineWorld installed (in a site folder of this
    module's tests), forked from a warm interpreter started with its PYTHONPATH."""
    env = {"PYTHONPATH": _installPlugin(tmp_path_factory.mktemp("line_world") / "site")}
    interpreter = siteInterpreter(env)
    yield lambda module, *args, cwd=None: runModule(module, *args, env=env, cwd=cwd, interpreter=interpreter)
    interpreter.stop()


@pytest.mark.slow
def test_third_party_env_is_registered_and_trains(tmp_path, lineWorldRun):
    (tmp_path / "probe").mkdir()
    (tmp_path / "probe" / "check_line_world.py").write_text(
        "import environments, gymnasium\n"
        "from stable_baselines3.common.env_checker import check_env\n"
        "env = gymnasium.make('LineWorldEnv-v0', srl_model='ground_truth')\n"
        "check_env(env.unwrapped)\n"
        "print(env.reset(seed=0)[0].shape)\n")
    result = lineWorldRun("check_line_world", cwd=str(tmp_path / "probe"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "(1,)"
    run = lineWorldRun("rl_baselines.train", "--algo", "ppo2", "--env", "LineWorldEnv-v0", "--srl-model",
                       "ground_truth", "--num-timesteps", "256", "--hyperparam", "n_steps:64", "--log-dir",
                       tmp_path / "logs", "--no-vis", "--no-progress")
    assert run.returncode == 0, run.stderr
    run_dir = runFolder(run)
    assert json.load(open(os.path.join(run_dir, "env_globals.json")))["constants"]["MAX_STEPS"] == 20
    assert os.path.isfile(os.path.join(run_dir, "ppo2_model.zip"))
    # the env's own observation modes decide what --srl-model accepts
    bad = lineWorldRun("rl_baselines.train", "--env", "LineWorldEnv-v0", "--srl-model", "joints", "--log-dir",
                       tmp_path / "logs")
    assert bad.returncode == 2 and "valid choices: ground_truth, raw_pixels" in bad.stderr


def test_env_without_ground_truth_is_refused_up_front_where_ground_truth_is_needed(tmp_path, lineWorldRun):
    """An env whose SRL_MODES leave out ground_truth (read from its class, as train's --srl-model refusal does):
    the dataset generator, srl_models.prepare and enjoy --plotting refuse it in one line (exit 2), writing nothing;
    a plain replay of its run still works."""
    no_gt = "LineWorldNoGTEnv-v0 has no ground truth (its SRL_MODES, raw_pixels, do not include ground_truth)"
    data = tmp_path / "data"
    generate = lineWorldRun("environments.dataset_generator", "--env", "LineWorldNoGTEnv-v0", "--name", "nogt",
                            "--save-path", data, "--num-episode", "2", "--img-shape", "3", "32", "32")
    message, = generate.stderr.strip().splitlines()
    assert generate.returncode == 2 and message.startswith(
        f"error: --env {no_gt}, which a dataset records (ground_truth.npz); envs with ground truth: "), message
    assert "LineWorldEnv-v0" in message.split("envs with ground truth: ")[1] and not data.exists()
    prepare = lineWorldRun("srl_models.prepare", "--env", "LineWorldNoGTEnv-v0", "--srl-model", "autoencoder",
                           "--data-folder", data, "--log-folder", tmp_path / "srl", "--no-progress")
    assert prepare.returncode == 2 and len(prepare.stderr.strip().splitlines()) == 1, prepare.stderr
    assert f"error: --env {no_gt}" in prepare.stderr and not data.exists() and not (tmp_path / "srl").exists()
    run = lineWorldRun("rl_baselines.train", "--algo", "random_agent", "--env", "LineWorldNoGTEnv-v0", "--srl-model",
                       "raw_pixels", "--img-shape", "3", "32", "32", "--num-timesteps", "40", "--log-dir",
                       tmp_path / "logs", "--no-vis", "--no-progress")
    assert run.returncode == 0, run.stderr
    run_dir = runFolder(run)
    plots = lineWorldRun("replay.enjoy_baselines", "--log-dir", run_dir, "--plotting", "--no-vis",
                         "--num-timesteps", "20", "--no-progress")
    assert plots.returncode == 2 and plots.stderr.strip().splitlines() == [
        f"error: the run's env {no_gt}, which --plotting draws (the trajectory): replay without --plotting"]
    assert not os.path.exists(os.path.join(run_dir, "replay"))
    replay = lineWorldRun("replay.enjoy_baselines", "--log-dir", run_dir, "--num-timesteps", "20", "--no-progress")
    assert replay.returncode == 0, replay.stderr


@pytest.mark.parametrize("num_cpu", ["1", "2"])
def test_env_whose_observations_do_not_fit_its_space_is_one_warning(tmp_path, lineWorldRun, num_cpu):
    """An env plugin whose images are float64 for its uint8 space trained without a word (with one env, the VecEnv
    cast them to zeros and ones): its first observation is checked, one warning naming the env, what it gave and
    what it declares; an env that fits (LineWorld's images) gets none."""
    common = ["--algo", "random_agent", "--srl-model", "raw_pixels", "--img-shape", "3", "32", "32",
              "--num-timesteps", "40", "--num-cpu", num_cpu, "--log-dir", tmp_path / "logs", "--no-vis",
              "--no-progress"]
    bad = lineWorldRun("rl_baselines.train", "--env", "BadSpace-v0", *common)
    assert bad.returncode == 0, bad.stderr
    assert bad.stderr.strip().splitlines() == [
        "warning: ObservationSpaceWarning: BadSpace-v0: the observation of reset() does not fit its "
        "observation_space: float64 (32, 32, 3) in [0, 1], declared uint8 (32, 32, 3) in [0, 255]"]
    good = lineWorldRun("rl_baselines.train", "--env", "LineWorldEnv-v0", *common)
    assert good.returncode == 0 and "ObservationSpaceWarning" not in good.stderr, good.stderr


@pytest.mark.parametrize("num_cpu", ["1", "2"])
def test_dataset_of_an_env_whose_observations_do_not_fit_its_space_is_one_warning(tmp_path, lineWorldRun, num_cpu):
    """The dataset generator builds its envs itself (not through the training factory): it recorded a bad plugin
    env's float64 images without a word. The first observations of each episode are checked (in the worker that
    plays it): one warning, worded as the training's, for the whole dataset; an env that fits gets none."""
    common = ["--img-shape", "3", "32", "32", "--num-episode", "3", "--num-cpu",
              num_cpu, "--save-path", tmp_path / "data", "--no-progress"]
    bad = lineWorldRun("environments.dataset_generator", "--env", "BadSpace-v0", "--name", "bad", *common)
    assert bad.returncode == 0, bad.stderr
    assert [line for line in bad.stderr.splitlines() if "Warning" in line] == [
        "warning: ObservationSpaceWarning: BadSpace-v0: the observation of reset() does not fit its "
        "observation_space: float64 (32, 32, 3) in [0, 1], declared uint8 (32, 32, 3) in [0, 255]"]
    good = lineWorldRun("environments.dataset_generator", "--env", "LineWorldEnv-v0", "--name", "good", *common)
    assert good.returncode == 0 and "ObservationSpaceWarning" not in good.stderr, good.stderr


BROKEN_ENVS = textwrap.dedent('''
    from line_world.env import LineWorldEnv


    class FutureLineWorld(LineWorldEnv):
        API_VERSION = 2


    class NotAnEnv:
        pass
''')


def test_broken_env_plugins_are_reported_by_name_and_skipped(tmp_path):
    """Env plugins are loaded and reported like algorithms and SRL models: one warning each, a reason in
    environments.failed_env_plugins, and the good ones (the built-in envs, LineWorld) still registered."""
    site = _installPlugin(tmp_path / "site")
    (tmp_path / "site" / "line_world" / "broken.py").write_text(BROKEN_ENVS)
    dist_info = tmp_path / "site" / "broken_envs-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-envs\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text(
        "[srl_toolbox.environments]\nFutureLineWorld-v0 = line_world.broken:FutureLineWorld\n"
        "NotAnEnv-v0 = line_world.broken:NotAnEnv\nMissingEnv-v0 = line_world.missing:Anything\n"
        # a built-in id declared again by another package: whichever the metadata listed last was taken silently
        "MobileRobotGymEnv-v0 = line_world.env:LineWorldEnv\n")
    script = "import environments\nprint(sorted(environments.failed_env_plugins.items()), 'LineWorldEnv-v0' in " \
             "environments.registered_env, 'MobileRobotGymEnv-v0' in environments.registered_env)\n"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": site})
    assert result.returncode == 0, result.stderr
    failed = result.stdout
    assert "FutureLineWorld-v0" in failed and "API version 2" in failed
    assert "NotAnEnv-v0" in failed and "not a subclass of environments.srl_env.SRLGymEnv" in failed
    assert "MissingEnv-v0" in failed and "ModuleNotFoundError" in failed
    assert "declared by 2 entry points (" in failed and "line_world.env:LineWorldEnv" in failed
    assert failed.strip().endswith("True False")  # MobileRobotGymEnv-v0: neither package's, until one is uninstalled
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 4 and all(line.startswith("warning: EnvPluginLoadWarning: skipped environment plugin")
                                   for line in lines), result.stderr


NO_GROUND_TRUTH_ENVS = textwrap.dedent('''
    from environments.srl_env import SRLGymEnv
    from line_world.env import LineWorldEnv


    class ForgotGroundTruth(SRLGymEnv):
        """A pixel env written from scratch: it keeps SRLGymEnv's SRL_MODES, whose ground_truth it cannot compute."""

        def render(self):
            return None


    class PixelsOnly(ForgotGroundTruth):
        SRL_MODES = ("raw_pixels",)


    class OwnGroundTruth(LineWorldEnv):
        """getGroundTruth of its own: getRobotPos is then not needed."""

        def getGroundTruth(self):
            return super().getRobotPos()

        getRobotPos = SRLGymEnv.getRobotPos
''')


def test_env_plugin_with_ground_truth_mode_but_no_ground_truth_methods_is_skipped(tmp_path):
    """An env keeping SRLGymEnv's SRL_MODES (ground_truth included) without getGroundTruthDim, getRobotPos and
    getTargetPos loaded, then `train --srl-model ground_truth` ended in a NotImplementedError traceback after creating
    the run's folders: it is skipped with one warning naming the methods, and train refuses it in one line."""
    site = _installPlugin(tmp_path / "site")
    (tmp_path / "site" / "line_world" / "no_gt.py").write_text(NO_GROUND_TRUTH_ENVS)
    with open(tmp_path / "site" / "line_world-0.1.dist-info" / "entry_points.txt", "a") as handle:
        handle.write("Forgot-v0 = line_world.no_gt:ForgotGroundTruth\nPixelsOnly-v0 = line_world.no_gt:PixelsOnly\n"
                     "OwnGroundTruth-v0 = line_world.no_gt:OwnGroundTruth\n")
    script = "import environments\nprint(sorted(environments.failed_env_plugins), sorted(environments.registered_env))\n"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": site})
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("['Forgot-v0'] [")
    assert "'PixelsOnly-v0'" in result.stdout and "'OwnGroundTruth-v0'" in result.stdout
    reason = ("ForgotGroundTruth has ground_truth in its SRL_MODES (ground_truth, raw_pixels) but does not implement "
              "getGroundTruthDim, getRobotPos, getTargetPos: implement them, or leave ground_truth out of SRL_MODES")
    assert result.stderr.strip().splitlines() == [
        f"warning: EnvPluginLoadWarning: skipped environment plugin 'Forgot-v0' (line_world.no_gt:ForgotGroundTruth: "
        f"{reason})"]
    run = runModule("rl_baselines.train", "--algo", "ppo2", "--env", "Forgot-v0", "--srl-model", "ground_truth",
                    "--log-dir", tmp_path / "logs", "--no-vis", env={"PYTHONPATH": site}, warm=False)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert f"error: unknown --env 'Forgot-v0' (skipped: line_world.no_gt:ForgotGroundTruth: {reason})" in run.stderr
    assert not (tmp_path / "logs").exists()


def test_env_plugin_whose_module_is_imported_first_still_registers(tmp_path):
    """A plugin's own tests import its module first: that module imports environments.srl_env, whose package loads
    the plugins while the module is half-way through its import. The env is registered all the same, loaded when
    asked; a deferred plugin that does not fit is refused then, with the warning the others get. Three fresh processes
    (conftest.freshProcesses)."""
    site = _installPlugin(tmp_path / "site")
    (tmp_path / "site" / "line_world" / "bad.py").write_text(
        "from environments.srl_env import SRLGymEnv\n\n\nclass NotAnEnv:\n    pass\n")
    with open(tmp_path / "site" / "line_world-0.1.dist-info" / "entry_points.txt", "a") as handle:
        handle.write("NotAnEnv-v0 = line_world.bad:NotAnEnv\n")
    script = ("import line_world.env\n"
              "import environments, gymnasium\n"
              "print(environments.failed_env_plugins == {}, 'LineWorldEnv-v0' in environments.registered_env)\n"
              "print(environments.getEnvClass('LineWorldEnv-v0') is line_world.env.LineWorldEnv)\n"
              "env = gymnasium.make('LineWorldEnv-v0', srl_model='ground_truth')\n"
              "print(type(env.unwrapped).__name__, env.reset(seed=0)[0].shape)\n")
    refused = ("import line_world.bad\n"
               "import environments, gymnasium\n"
               "print('NotAnEnv-v0' in environments.registered_env, environments.failed_env_plugins)\n"
               # a listing of the envs that have something (an error message's) leaves it out, without a traceback
               "print('NotAnEnv-v0' in environments.envsWhere(lambda env_class: True))\n"
               "try:\n    environments.getEnvClass('NotAnEnv-v0')\nexcept KeyError:\n    print('refused')\n"
               "print('NotAnEnv-v0' in environments.registered_env, 'NotAnEnv-v0' in gymnasium.registry)\n")
    # the train command, started with the plugin's module imported first (as a plugin's own launcher may)
    launcher = tmp_path / "site" / "launch.py"
    # (guarded: ppo2's 4 envs step in worker processes, which import the main module again, as multiprocessing's do)
    launcher.write_text("import sys\nimport line_world.env\nfrom rl_baselines.train import main\n\n"
                        "if __name__ == '__main__':\n    sys.exit(main())\n")
    train_args = ["--algo", "ppo2", "--env", "LineWorldEnv-v0", "--srl-model", "ground_truth", "--num-timesteps", "128",
                  "--hyperparam", "n_steps:64", "--log-dir", tmp_path / "logs", "--no-vis", "--no-progress"]
    first, bad_first, run = freshProcesses({"PYTHONPATH": site}, ("-c", script, [], None), ("-c", refused, [], None),
                                           ("script", launcher, train_args, None))
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == ["False True", "True", "LineWorldEnv (1,)"]  # NotAnEnv refused on loading
    assert bad_first.returncode == 0, bad_first.stderr
    assert bad_first.stdout.splitlines() == ["True {}", "False", "refused", "False False"]
    assert bad_first.stderr.strip().splitlines() == [
        "warning: EnvPluginLoadWarning: skipped environment plugin 'NotAnEnv-v0' (line_world.bad:NotAnEnv: "
        "<class 'line_world.bad.NotAnEnv'> is not a subclass of environments.srl_env.SRLGymEnv)"]
    assert run.returncode == 0, run.stderr


def test_observation_problems_name_what_was_found_and_what_is_declared() -> None:
    image = gym.spaces.Box(0, 255, (4, 4, 3), np.uint8)
    state = gym.spaces.Box(-1, 1, (2,), np.float32)
    assert observationProblem(np.zeros((4, 4, 3), np.uint8), image) is None
    assert observationProblem(np.ones((4, 4, 3)), image) == (
        "float64 (4, 4, 3) in [1, 1], declared uint8 (4, 4, 3) in [0, 255]")
    assert observationProblem(np.zeros((3, 4, 4), np.uint8), image).startswith("uint8 (3, 4, 4) in [0, 0], declared")
    assert observationProblem(np.array([0.5, 3.0], np.float32), state) == (
        "float32 (2,) in [0.5, 3], outside the bounds: declared float32 (2,) in [-1, 1]")
    assert observationProblem([0.0, 0.0], state) == "a list, not a numpy array (declared float32 (2,) in [-1, 1])"
    goal = gym.spaces.Dict({"observation": state, "desired_goal": state})
    assert observationProblem({"observation": np.zeros(2, np.float32), "desired_goal": np.zeros(2)}, goal) == (
        "['desired_goal'] float64 (2,) in [0, 0], declared float32 (2,) in [-1, 1]")
    assert observationProblem(5, gym.spaces.Discrete(3)) == "5, not in Discrete(3)"

    class Constant(gym.Env):
        observation_space, action_space = state, gym.spaces.Discrete(2)

        def reset(self, *, seed=None, options=None):
            return np.zeros(2, np.float32), {}

        def step(self, action):
            return np.full(2, 2.0, np.float32), 0.0, False, False, {}

    inner = Constant()
    env = ObservationCheck(inner, "Constant-v0")
    env.reset()
    with pytest.warns(ObservationSpaceWarning, match=r"^Constant-v0: the observation of step\(\) does not fit"):
        env.step(0)
    # checked once: the later calls go straight to the env
    assert env.step == inner.step and env.reset == inner.reset
