"""The envs a run steps together when --num-cpu is left out: the algorithm's DEFAULT_ENVS (ppo2 4, the others 1),
resolved before anything reads it and recorded, in train, the Python API, the sweeps' run ids and cores, the recorded
settings the benchmarks compare, and the learning benchmark's keys."""
from __future__ import annotations

import json
import os

import pytest
from conftest import runFolder, runModule

from benchmarks import learning
from rl_baselines.core.registry import _refusal, defaultEnvs, defaultEnvsText, registered_rl
from rl_baselines.rl_algorithm.a2c import A2CModel
from rl_baselines.rl_algorithm.ppo2 import PPO2Model
from rl_baselines.runs import train_checks
from rl_baselines.runs.train_config import TrainConfig
from rl_baselines.sweeps.pipeline import runCores
from rl_baselines.sweeps.recorded import otherSettings, specSettings
from rl_baselines.sweeps.sweep import makeSpec

GT = ["--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth"]
KUKA = ["--random-target", "--force-down"]


def test_each_algorithm_declares_its_default_and_a_bad_one_is_refused_at_load() -> None:
    assert PPO2Model.DEFAULT_ENVS == 4 and A2CModel.DEFAULT_ENVS == 1
    assert {name for name, (algo_class, _, _) in registered_rl.items() if algo_class.DEFAULT_ENVS != 1} == {"ppo2"}
    assert defaultEnvs("ppo2") == 4 and defaultEnvs("ppo2", 1) == 1 and defaultEnvs("sac") == 1
    assert defaultEnvsText(list(registered_rl)) == "ppo2 4, the others 1"
    assert defaultEnvsText(["sac", "td3"]) == "1"
    for value in (0, 257, True, "4", 2.0):
        bad = type("BadEnvs", (A2CModel,), {"DEFAULT_ENVS": value})
        assert _refusal(bad) == f"DEFAULT_ENVS {value!r} is not a number of envs, 1..256"
    assert _refusal(type("Fine", (A2CModel,), {"DEFAULT_ENVS": 8})) is None


def test_the_parser_and_validation_resolve_the_algorithms_default(tmp_path) -> None:
    parsed = train_checks.algorithmParser(PPO2Model).parse_args(["--algo", "ppo2", *GT])
    assert parsed.num_cpu == 4  # what the algorithm's own parser checks read (her's read it before validation)
    assert train_checks.algorithmParser(A2CModel).parse_args(["--algo", "a2c", *GT]).num_cpu == 1
    assert "[the algorithm's default: ppo2 4, the others 1]" in " ".join(
        train_checks.algorithmParser(PPO2Model).format_help().split())
    given = {"env": "MobileRobotGymEnv-v0", "srl_model": "ground_truth", "log_dir": str(tmp_path), "no_vis": True}
    assert TrainConfig(algo="ppo2", **given).num_cpu is None  # left out: resolved by validation
    assert train_checks.validate(TrainConfig(algo="ppo2", **given), registered_rl).num_cpu == 4
    assert train_checks.validate(TrainConfig(algo="a2c", **given), registered_rl).num_cpu == 1
    assert train_checks.validate(TrainConfig(algo="ppo2", num_cpu=1, **given), registered_rl).num_cpu == 1
    assert TrainConfig(algo="ppo2", **given).runSettings().num_cpu == 4  # a config not validated yet
    assert not os.listdir(tmp_path)


def test_a_ppo2_run_steps_four_envs_and_records_them(tmp_path) -> None:
    result = runModule("rl_baselines.train", "--algo", "ppo2", *GT, "--num-timesteps", "512", "--no-vis",
                       "--log-dir", str(tmp_path), "--seed", "5")
    assert result.returncode == 0, result.stderr
    run_dir = runFolder(result)
    assert json.load(open(os.path.join(run_dir, "args.json")))["num_cpu"] == 4
    assert sorted(os.listdir(os.path.join(run_dir, "monitor"))) == [f"{rank}.monitor.csv" for rank in range(4)]


def test_sweeps_name_and_size_runs_by_the_resolved_count(tmp_path) -> None:
    def spec(algo: str, env: str, *flags: str):
        return makeSpec(algo, env, "ground_truth", 0, list(flags), str(tmp_path))

    # given or left out, the algorithm's default is the same run; another count is another run
    assert spec("ppo2", "MobileRobotGymEnv-v0").run_id == spec("ppo2", "MobileRobotGymEnv-v0", "--num-cpu", "4").run_id
    assert spec("ppo2", "MobileRobotGymEnv-v0").run_id != spec("ppo2", "MobileRobotGymEnv-v0", "--num-cpu", "1").run_id
    shared = train_checks.baseParser(add_help=False).parse_known_args([])[0]
    assert shared.num_cpu is None
    assert runCores([spec("ppo2", "KukaButtonGymEnv-v0", *KUKA)], shared) == 4  # its 4 envs step in workers
    assert runCores([spec("ppo2", "MobileRobotGymEnv-v0")], shared) == 1  # in the training process
    assert runCores([spec("a2c", "KukaButtonGymEnv-v0", *KUKA)], shared) == 1
    # a run recorded before the default (one env) was made with other settings than the spec's
    settings = specSettings(spec("ppo2", "MobileRobotGymEnv-v0"))
    assert settings["num_cpu"] == 4
    assert otherSettings(settings, {**settings, "num_cpu": 1}) == ["num_cpu"]


@pytest.mark.parametrize("case, tag", [
    (learning.Case("ppo2", learning.MOBILE, False, 40_000), " envs4"),
    (learning.Case("ppo2", learning.CARTPOLE, False, 50_000, ("--num-cpu", "1")), ""),
    (learning.Case("a2c", learning.MOBILE, False, 40_000), ""),
])
def test_the_learning_benchmark_keys_a_default_of_several_envs(case, tag) -> None:
    key = learning.runKey(case, case.steps, 0, 20)
    assert key.endswith(f"last20{''.join(' ' + word for word in case.extra)}{tag}")
