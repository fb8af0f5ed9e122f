"""The old toolbox's guide commands run as written, in a fresh folder, with only a small ``--num-timesteps`` and
``--n-steps`` appended (one PPO rollout and its update; the pipeline's ``--num-iteration`` is lowered too: see its
test). They rely on the default env being KukaButtonGymEnv-v0, an arm, as it was in the old toolbox
(``-c -joints``)."""
from __future__ import annotations

import glob
import os

import pytest
import yaml
from conftest import runFolder, runModule

from environments.dataset_generator import main as generateDataset
from srl_models.train import trainFromArgs

pytestmark = pytest.mark.slow

STEPS = ["--num-timesteps", "64", "--n-steps", "64"]
# --num-cpu 2: 2 envs x 32 steps make the same single 64-step rollout
PIPELINE_STEPS = ["--num-timesteps", "64", "--n-steps", "32"]
DEFAULT_ENV = "KukaButtonGymEnv-v0"


@pytest.fixture(scope="module")
def guideFolder(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The folder the guide's commands run in (their ``logs/`` is relative to it)."""
    return str(tmp_path_factory.mktemp("guide"))


@pytest.fixture(scope="module")
def firstRun(guideFolder: str) -> str:
    """``python -m rl_baselines.train --algo ppo2 --log-dir logs/ --no-vis``: the run folder it made."""
    result = runModule("rl_baselines.train", "--algo", "ppo2", "--log-dir", "logs/", "--no-vis", *STEPS,
                       cwd=guideFolder)
    assert result.returncode == 0, result.stderr
    return os.path.join(guideFolder, runFolder(result))


def test_train_no_vis(firstRun: str) -> None:
    assert os.path.basename(os.path.dirname(os.path.dirname(os.path.dirname(firstRun)))) == DEFAULT_ENV
    assert os.path.isfile(os.path.join(firstRun, "ppo2_model.zip"))


@pytest.mark.parametrize("flags", [["-c"], ["-c", "-joints"]], ids=["continuous", "continuous-joints"])
def test_train_continuous(guideFolder: str, flags: list[str]) -> None:
    # As written, without --no-vis: no visdom server answers here, which costs one warning and not the run.
    result = runModule("rl_baselines.train", "--algo", "ppo2", "--log-dir", "logs/", *flags, *STEPS, cwd=guideFolder)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    run_dir = os.path.join(guideFolder, runFolder(result))
    assert f"{os.sep}{DEFAULT_ENV}{os.sep}" in run_dir
    assert os.path.isfile(os.path.join(run_dir, "ppo2_model.zip"))


def test_enjoy_render_headless(firstRun: str) -> None:
    """``python -m replay.enjoy_baselines --log-dir RUN --render`` without a display: one line saying so."""
    env = {"DISPLAY": "", "WAYLAND_DISPLAY": ""}
    result = runModule("replay.enjoy_baselines", "--log-dir", firstRun, "--render", env=env)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --render") and "DISPLAY" in lines[0], result.stderr


def test_pipeline_with_a_registered_vae(guideFolder: str, tmp_path: str) -> None:
    """``python -m rl_baselines.pipeline --algo ppo2 --log-dir logs/ --srl-model vae ground_truth --random-target
    --num-cpu 4 --num-iteration 15``, the vae being a tiny one registered for the default env in an SRL config
    file. --num-iteration 15 means 30 pixel runs (10+ minutes on two cores) and is lowered to 1 here: the iteration
    count only repeats the same runs with other seeds, which the pipeline's own tests cover; --num-cpu 4 is lowered
    to 2 (env subprocesses on two cores: the count is the pipeline's own tests' concern too). The dataset and the vae
    are made in this process (their commands have their own tests)."""
    assert generateDataset(["--env", DEFAULT_ENV, "--name", "kuka_tiny", "--save-path", str(tmp_path),
                            "--num-episode", "2", "--max-steps", "12", "--no-progress"]) == 0
    model_folder = trainFromArgs(["--data-folder", os.path.join(tmp_path, "kuka_tiny"), "--srl-model", "vae",
                                  "--state-dim", "4", "--epochs", "1", "--batch-size", "8", "--no-eval",
                                  "--no-progress", "--log-folder", os.path.join(tmp_path, "srl")])
    config = os.path.join(tmp_path, "srl_models.yaml")
    with open(config, "w", encoding="utf-8") as handle:
        yaml.safe_dump({DEFAULT_ENV: {"vae": model_folder}}, handle)

    result = runModule("rl_baselines.pipeline", "--algo", "ppo2", "--log-dir", "logs/", "--srl-model", "vae",
                       "ground_truth", "--random-target", "--num-cpu", "2", "--num-iteration", "1",
                       "--srl-config-file", config, *PIPELINE_STEPS, cwd=guideFolder, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    for srl_model in ("vae", "ground_truth"):
        models = glob.glob(os.path.join(guideFolder, "logs", DEFAULT_ENV, srl_model, "ppo2", "*", "ppo2_model.zip"))
        assert len(models) == 1, (srl_model, result.stdout)
