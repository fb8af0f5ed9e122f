"""--vec-env: several envs step in worker processes (subproc) or one after another in the training process (dummy),
with the same results either way; auto chooses by the env class (``stepsInWorkers``: the mobile robots' states and
sprite frames in this process, TinyRenderer's images in workers), and args.json records what ran."""
from __future__ import annotations

import csv
import glob
import json
import os
import warnings
from argparse import Namespace

import pytest
from conftest import trainHere
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecNormalize

from environments.srl_env import SRLGymEnv
from rl_baselines.core.registry import registered_rl
from rl_baselines.envs import factory
from rl_baselines.envs.factory import VecEnvSettings, createEnvs, resolveVecEnv
from rl_baselines.runs import train, train_checks
from rl_baselines.runs.args_format import withAddedSettings
from rl_baselines.sweeps import pipeline
from rl_baselines.sweeps.recorded import trainSettings
from rl_baselines.sweeps.sweep import RunSpec
from srl_toolbox.errors import UsageWarning

MOBILE = "MobileRobotGymEnv-v0"
KUKA = "KukaButtonGymEnv-v0"


def test_auto_chooses_by_the_env_class(monkeypatch) -> None:
    # one env steps in this process, whatever is asked
    assert resolveVecEnv("subproc", 1, MOBILE, "tinyrenderer", "raw_pixels") == "dummy"
    # the mobile robots: a state or a sprite frame costs less than a worker's round trip, TinyRenderer's image more
    for env_id in (MOBILE, "MobileRobot1DGymEnv-v0"):
        assert resolveVecEnv("auto", 2, env_id, "sprites", "ground_truth") == "dummy"
        assert resolveVecEnv("auto", 2, env_id, "tinyrenderer", "ground_truth") == "dummy"  # no image drawn
        assert resolveVecEnv("auto", 2, env_id, "sprites", "raw_pixels") == "dummy"
        assert resolveVecEnv("auto", 4, env_id, "sprites", "vae") == "dummy"
        assert resolveVecEnv("auto", 2, env_id, "tinyrenderer", "raw_pixels") == "subproc"
        assert resolveVecEnv("auto", 2, env_id, "tinyrenderer", "vae") == "subproc"
    assert resolveVecEnv("auto", 2, KUKA, "lowpoly", "ground_truth") == "subproc"
    # what is asked is kept
    assert resolveVecEnv("dummy", 2, MOBILE, "tinyrenderer", "raw_pixels") == "dummy"
    assert resolveVecEnv("subproc", 2, MOBILE, "sprites", "ground_truth") == "subproc"
    # an env plugin's class that says nothing: workers, as before --vec-env
    monkeypatch.setattr(factory, "getEnvClass", lambda env_id: type("PluginEnv", (SRLGymEnv,), {}))
    assert resolveVecEnv("auto", 2, "CartPole-v1", "tinyrenderer", "ground_truth") == "subproc"


@pytest.mark.parametrize("vec_env, expected", [("auto", DummyVecEnv), ("dummy", DummyVecEnv),
                                               ("subproc", SubprocVecEnv)])
def test_create_envs_builds_what_it_resolves(vec_env, expected) -> None:
    env = createEnvs(VecEnvSettings(MOBILE, 2, 0, "ground_truth", vec_env=vec_env))
    try:
        assert isinstance(env, VecNormalize) and type(env.venv) is expected
        assert env.reset().shape == (2, env.observation_space.shape[0])
    finally:
        env.close()


def _monitorRows(run_dir: str) -> list[list[str]]:
    """:return: every monitor file's episodes (reward, length), without their wall-clock column"""
    rows = []
    for path in sorted(glob.glob(os.path.join(run_dir, "monitor", "*.csv"))):
        with open(path, encoding="utf-8") as handle:
            rows.append([row[:2] for row in csv.reader(handle) if row and not row[0].startswith("#")])
    return rows


def test_the_same_seed_gives_the_same_run_either_way(tmp_path) -> None:
    """The envs compute the same in a worker or here: the same episodes and the same learning (progress.csv's losses);
    args.json records the value that ran (auto resolved), and a run recorded before --vec-env reads as subproc."""
    runs = {}
    for vec_env in ("subproc", "dummy", "auto"):
        runs[vec_env] = trainHere("--algo", "ppo2", "--env", MOBILE, "--srl-model", "ground_truth", "--num-cpu", 2,
                                  "--num-timesteps", 512, "--seed", 5, "--vec-env", vec_env, "--checkpoint-freq", -1,
                                  "--log-dir", tmp_path / vec_env)
    recorded = {vec_env: json.load(open(os.path.join(run, "args.json")))["vec_env"] for vec_env, run in runs.items()}
    assert recorded == {"subproc": "subproc", "dummy": "dummy", "auto": "dummy"}
    assert _monitorRows(runs["subproc"]) == _monitorRows(runs["dummy"]) and len(_monitorRows(runs["dummy"])) == 2

    def losses(run_dir: str) -> list[dict[str, str]]:
        with open(os.path.join(run_dir, "progress.csv"), encoding="utf-8") as handle:
            return [{name: value for name, value in row.items() if name.startswith("train/")}
                    for row in csv.DictReader(handle)]

    assert losses(runs["subproc"]) == losses(runs["dummy"]) and losses(runs["dummy"])
    # not a setting of the result: a sweep finds either run as the other's
    assert "vec_env" not in trainSettings(json.load(open(os.path.join(runs["dummy"], "args.json"))))
    assert withAddedSettings({"args_format": 8})["vec_env"] == "subproc"
    # a resume steps its envs where the run did, or where --vec-env says now (the same floats either way)
    assert train.parseCommand(["--resume", runs["subproc"]])[0].vec_env == "subproc"
    assert train.parseCommand(["--resume", runs["subproc"], "--vec-env", "dummy"])[0].vec_env == "dummy"


def test_a_sweep_of_in_process_envs_counts_one_core_per_run(monkeypatch) -> None:
    # the pipeline's default --workers: usable cores // the cores its most demanding run uses
    def spec(env_id: str, srl_model: str = "ground_truth") -> RunSpec:
        return RunSpec("ppo2", env_id, srl_model, 0, (), "x", "/tmp")

    def shared(num_cpu: int, vec_env: str = "auto", renderer: str | None = None) -> Namespace:
        return Namespace(num_cpu=num_cpu, vec_env=vec_env, renderer=renderer)

    assert pipeline.runCores([spec(MOBILE), spec(MOBILE, "raw_pixels")], shared(2)) == 1
    assert pipeline.runCores([spec(MOBILE)], shared(2, "subproc")) == 2
    assert pipeline.runCores([spec(MOBILE, "raw_pixels")], shared(2, renderer="tinyrenderer")) == 2
    assert pipeline.runCores([spec(MOBILE), spec(KUKA)], shared(4)) == 4  # the arm's envs step in workers
    assert pipeline.runCores([spec(KUKA)], shared(1)) == 1
    monkeypatch.setattr(pipeline, "usableCores", lambda: 4)
    executor = pipeline._makeExecutor(Namespace(executor="local", workers=None, force=False),
                                      pipeline.runCores([spec(MOBILE)], shared(2)))
    assert executor.workers == 4


def test_subproc_with_one_env_is_one_warning(tmp_path) -> None:
    base = ["--algo", "ppo2", "--env", KUKA, "--srl-model", "ground_truth", "--log-dir", str(tmp_path), "--no-vis"]
    with pytest.warns(UsageWarning, match=r"^--vec-env subproc does nothing with one env \(--num-cpu 1\)"):
        config = train_checks.validate(train.parseCommand([*base, "--vec-env", "subproc", "--num-cpu", "1"])[0],
                                       registered_rl)
    assert config.vec_env == "dummy"
    with warnings.catch_warnings():
        warnings.simplefilter("error", UsageWarning)  # two envs: it is what runs
        train_checks.validate(train.parseCommand([*base, "--vec-env", "subproc", "--num-cpu", "2"])[0], registered_rl)
