"""--vec-env: several envs step in worker processes (subproc) or one after another in the training process (dummy),
with the same results either way; auto chooses by the env class (``stepsInWorkers``: the mobile robots' states and
sprite frames in this process, TinyRenderer's images in workers), and args.json records what ran."""
from __future__ import annotations

import csv
import dataclasses
import glob
import json
import os
import warnings
from argparse import Namespace

import numpy as np
import pytest
import torch
from conftest import trainHere
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecNormalize

from environments.srl_env import SRLGymEnv
from rl_baselines.core.registry import registered_rl
from rl_baselines.envs import factory
from rl_baselines.envs.factory import VecEnvSettings, createEnvs, findVecNormalize, resolveVecEnv
from rl_baselines.envs.srl_encoder import EncodedInWorkers, SRLEncoderVecEnv
from rl_baselines.runs import train, train_checks
from rl_baselines.runs.args_format import withAddedSettings
from rl_baselines.sweeps import hyperparam_search, pipeline
from rl_baselines.sweeps.recorded import trainSettings
from rl_baselines.sweeps.search_trials import TrialObjective
from rl_baselines.sweeps.sweep import RunSpec
from srl_models.models import VAEModel
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


def _losses(run_dir: str) -> list[dict[str, str]]:
    """:return: the run's learning, progress.csv's ``train/`` columns, row by row"""
    with open(os.path.join(run_dir, "progress.csv"), encoding="utf-8") as handle:
        return [{name: value for name, value in row.items() if name.startswith("train/")}
                for row in csv.DictReader(handle)]


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

    assert _losses(runs["subproc"]) == _losses(runs["dummy"]) and _losses(runs["dummy"])
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
                                      pipeline.runCores([spec(MOBILE)], shared(2)), [spec(MOBILE)] * 6)
    assert executor.workers == 4 and not executor.envs_in_process


def test_a_sweep_gives_each_run_a_core_where_its_envs_outnumber_the_cores(monkeypatch) -> None:
    """(runs at a time, whether a run left one core steps its envs in the training process) by --workers, the cores
    a run's envs ask for and the runs to do"""
    monkeypatch.setattr(pipeline, "usableCores", lambda: 2)
    assert pipeline.localLayout(None, 4, 26) == (2, True)  # ppo2's 4 envs on the arm, 2 cores: a run per core
    assert pipeline.localLayout(2, 4, 26) == (2, True)
    assert pipeline.localLayout(None, 4, 1) == (1, False)  # one run: its envs in workers, on both cores
    assert pipeline.localLayout(None, 2, 10) == (1, False)  # its envs fit the cores
    assert pipeline.localLayout(None, 1, 10) == (2, False)  # its envs in the training process already
    assert pipeline.localLayout(3, 2, 10) == (3, True)
    monkeypatch.setattr(pipeline, "usableCores", lambda: 8)
    assert pipeline.localLayout(None, 4, 20) == (2, False)
    assert pipeline.localLayout(4, 4, 20) == (4, False)  # 2 cores a run: its envs in workers
    assert pipeline.localLayout(8, 4, 20) == (8, True)

    def spec(env_id: str, srl_model: str = "ground_truth", *flags: str) -> RunSpec:
        return RunSpec("ppo2", env_id, srl_model, 0, flags, "x", "/tmp")

    assert pipeline.stepsInWorkers(spec(KUKA))
    assert pipeline.stepsInWorkers(spec(KUKA, "ground_truth", "--vec-env", "auto"))
    assert not pipeline.stepsInWorkers(spec(KUKA, "ground_truth", "--vec-env", "subproc"))  # named: kept
    assert not pipeline.stepsInWorkers(spec(KUKA, "ground_truth", "--num-cpu", "1"))
    assert not pipeline.stepsInWorkers(spec(MOBILE))
    assert pipeline.stepsInWorkers(spec(MOBILE, "raw_pixels", "--renderer", "tinyrenderer"))


def test_a_sweep_run_left_one_core_steps_its_envs_here_with_the_same_result(tmp_path, monkeypatch, capsys) -> None:
    """Two runs at a time on 2 cores whose envs would step in workers: each steps them in its training process (--vec-env
    dummy on its command line and in args.json), learns what the same train command learns alone (its envs in
    workers), and the same sweep again finds both done (the run ids do not name it)."""
    monkeypatch.setattr(pipeline, "usableCores", lambda: 2)
    flags = ["--renderer", "tinyrenderer", "--img-shape", "3", "36", "36", "--num-cpu", "2", "--num-timesteps", "512",
             "--hyperparam", "n_steps:64", "batch_size:64", "--checkpoint-freq", "-1"]
    command = ["--algo", "ppo2", "--env", MOBILE, "--srl-model", "raw_pixels", "--num-iteration", "2", "--workers", "2",
               "--log-dir", str(tmp_path / "sweep"), "--no-vis", "--no-progress", *flags]
    assert pipeline.main(command) == 0
    assert "2 to run on 2 local workers; 2 step their envs in the training process" in capsys.readouterr().out
    runs = sorted(glob.glob(str(tmp_path / "sweep" / MOBILE / "raw_pixels" / "ppo2" / "*")))
    assert len(runs) == 2
    for run in runs:
        assert open(os.path.join(run, "train.log"), encoding="utf-8").readline().rstrip().endswith("--vec-env dummy")
        assert json.load(open(os.path.join(run, "args.json")))["vec_env"] == "dummy"
    alone = trainHere("--algo", "ppo2", "--env", MOBILE, "--srl-model", "raw_pixels", "--seed", 0, "--log-dir",
                      tmp_path / "alone", *flags)
    assert json.load(open(os.path.join(alone, "args.json")))["vec_env"] == "subproc"
    seed0 = next(run for run in runs if json.load(open(os.path.join(run, "args.json")))["seed"] == 0)
    assert _monitorRows(seed0) == _monitorRows(alone) and len(_monitorRows(alone)) == 2
    losses = [_losses(seed0), _losses(alone)]
    assert losses[0] == losses[1] and losses[0]
    assert pipeline.main(command) == 0
    assert "2 already done, 0 to run" in capsys.readouterr().out


def test_subproc_with_one_env_is_one_warning(tmp_path) -> None:
    base = ["--algo", "ppo2", "--env", KUKA, "--srl-model", "ground_truth", "--log-dir", str(tmp_path), "--no-vis"]
    with pytest.warns(UsageWarning, match=r"^--vec-env subproc does nothing with one env \(--num-cpu 1\)"):
        config = train_checks.validate(train.parseCommand([*base, "--vec-env", "subproc", "--num-cpu", "1"])[0],
                                       registered_rl)
    assert config.vec_env == "dummy"
    with warnings.catch_warnings():
        warnings.simplefilter("error", UsageWarning)  # two envs: it is what runs
        train_checks.validate(train.parseCommand([*base, "--vec-env", "subproc", "--num-cpu", "2"])[0], registered_rl)


def test_a_learned_state_is_the_same_float_wherever_the_envs_step(tmp_path) -> None:
    """TinyRenderer's frames of 2 envs on the CPU: encoded in the workers (subproc), or one by one in this process
    (dummy), as a sweep whose runs have one core each steps them: the same states and terminal states, bit for bit,
    at one torch thread (a worker's). Encoded in one batch, their last bits would differ."""
    torch.manual_seed(0)
    folder = str(tmp_path / "vae")
    VAEModel(4, (3, 32, 32), {"env": MOBILE}).save(folder)
    settings = VecEnvSettings(MOBILE, 2, 3, "vae", srl_model_path=folder)
    kwargs = {"srl_model": "vae", "img_shape": (3, 32, 32), "max_steps": 4, "renderer": "tinyrenderer"}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    envs = {vec_env: createEnvs(dataclasses.replace(settings, vec_env=vec_env), env_kwargs=kwargs)
            for vec_env in ("subproc", "dummy")}
    try:
        workers, here = (findVecNormalize(envs[vec_env]).venv for vec_env in ("subproc", "dummy"))
        assert isinstance(workers, EncodedInWorkers) and isinstance(workers.venv, SubprocVecEnv)
        assert isinstance(here, SRLEncoderVecEnv) and here.one_by_one and isinstance(here.venv, DummyVecEnv)
        np.testing.assert_array_equal(workers.reset(), here.reset())
        ended = 0
        for _ in range(9):
            for venv in (workers, here):
                venv.step_async(np.array([1, 2]))
            (states, _, dones, infos), (expected, _, expected_dones, expected_infos) = workers.step_wait(), \
                here.step_wait()
            np.testing.assert_array_equal(states, expected)
            np.testing.assert_array_equal(dones, expected_dones)
            for index in np.flatnonzero(dones):
                ended += 1
                np.testing.assert_array_equal(infos[index]["terminal_observation"],
                                              expected_infos[index]["terminal_observation"])
        assert ended == 4
    finally:
        torch.set_num_threads(threads)
        for env in envs.values():
            env.close()


@pytest.mark.parametrize("workers, n_trials, flags, in_process", [
    (2, 10, [], True),  # 2 trials at a time on 2 cores, ppo2's 4 envs on the arm: one core each
    (1, 10, [], False),  # one trial: its envs in workers, on both cores
    (2, 1, [], False),  # one trial to run
    (2, 10, ["--vec-env", "subproc"], False),  # named: kept
    (2, 10, ["--num-cpu", "1"], False),
])
def test_a_search_trial_left_one_core_steps_its_envs_here(tmp_path, monkeypatch, workers, n_trials, flags,
                                                          in_process) -> None:
    """hyperparam_search --workers K: a trial steps its envs as a sweep's run left the same share of the cores would,
    --vec-env dummy on its train command (not in the study's settings: the same floats)"""
    monkeypatch.setattr(hyperparam_search, "usableCores", lambda: 2)
    args, train_argv = hyperparam_search.searchParser().parse_known_args(
        ["--algo", "ppo2", "--env", KUKA, "--srl-model", "ground_truth", "--workers", str(workers), "--n-trials",
         str(n_trials), "--log-dir", str(tmp_path), *flags])
    config, _ = hyperparam_search.prepare(vars(args), train_argv)
    assert config.envs_in_process is in_process
    command = TrialObjective(config).trainCommand(str(tmp_path), 0, {})
    assert (command[-2:] == ["--vec-env", "dummy"]) is in_process
    assert "vec_env" not in config.train_settings
