"""rl_baselines.core.buffer_memory: the estimate of an algorithm's buffer and the refusal of one beyond the machine's
memory (the machine's memory is monkeypatched: nothing here depends on the machine running the tests)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from rl_baselines.core import buffer_memory
from rl_baselines.core.buffer_memory import REPLAY, ROLLOUT, bufferMemoryRefusal, humanBytes, machineMemory
from rl_baselines.core.registry import registered_rl
from rl_baselines.rl_algorithm.deepq import DQNModel
from rl_baselines.rl_algorithm.ppo2 import PPO2Model
from rl_baselines.rl_algorithm.sac import SACModel
from rl_baselines.rl_algorithm.td3 import TD3Model
from rl_baselines.runs import train, train_checks
from srl_toolbox.cli import UsageError

GIB = 1024 ** 3


def _args(**changes) -> SimpleNamespace:
    """A ppo2 raw-pixel run's settings, as validate gives them to the check."""
    values = dict(env="MobileRobotGymEnv-v0", srl_model="raw_pixels", srl_model_path=None, img_shape=None, fpv=False,
                  multi_view=False, num_stack=1, num_cpu=1, hyperparam=(), extra={}, hyperparam_file=None, algo="ppo2")
    return SimpleNamespace(**{**values, **changes})


@pytest.fixture
def memory(monkeypatch):
    """The machine's memory and swap: 23.5 GiB."""
    monkeypatch.setattr(buffer_memory, "machineMemory", lambda: int(23.5 * GIB))


def test_a_rollout_buffer_beyond_memory_is_refused_naming_value_size_and_memory(memory):
    refusal = bufferMemoryRefusal(PPO2Model, _args(hyperparam=("n_steps:100000000",)), {"n_steps": 100_000_000})
    assert refusal is not None and "\n" not in refusal
    assert refusal.startswith("--hyperparam n_steps:100000000: ppo2's rollout buffer would take 1.1 TiB (100000000 "
                              "steps x 1 env x 12,288-byte observations), more than this machine's 23.5 GiB of "
                              "memory and swap; valid: n_steps up to ")
    fits = int(refusal.rsplit("up to ", 1)[1].split()[0].replace(",", ""))
    assert bufferMemoryRefusal(PPO2Model, _args(), {"n_steps": fits}) is None
    assert bufferMemoryRefusal(PPO2Model, _args(), {"n_steps": fits + 1}) is not None


def test_the_estimate_counts_the_arrays_sb3_allocates():
    # RolloutBuffer: n_steps x n_envs observations, actions and 6 float32 arrays
    assert ROLLOUT.slots(100, 4) * ROLLOUT.slotBytes(12288) == 100 * 4 * (12288 + 4 + 6 * 4)
    # ReplayBuffer: buffer_size // n_envs per env, observations and next_observations, actions, 3 float32 arrays
    assert REPLAY.slots(1000, 3) * REPLAY.slotBytes(12288) == 333 * 3 * (2 * 12288 + 4 + 3 * 4)
    # frame stacking, a second camera and the image size multiply the uint8 observation; states are float32
    assert buffer_memory.observationBytes(_args(num_stack=4, fpv=True, img_shape=(3, 32, 48))) == 4 * 6 * 32 * 48
    assert buffer_memory.observationBytes(_args(srl_model="ground_truth")) % 4 == 0


@pytest.mark.parametrize("source,args,text", [
    ("flag", _args(algo="sac", extra={"hp_buffer_size": 10**9}), "--buffer-size 1000000000: sac's replay buffer"),
    ("file", _args(algo="td3", hyperparam_file="zoo.yml"), "--hyperparam-file zoo.yml: buffer_size 1000000000: td3's"),
    ("default", _args(algo="deepq"), "buffer_size 1000000000 (--algo deepq's default): deepq's replay buffer"),
])
def test_an_off_policy_replay_buffer_names_where_its_size_came_from(memory, source, args, text):
    algo_class = {"sac": SACModel, "td3": TD3Model, "deepq": DQNModel}[args.algo]
    refusal = bufferMemoryRefusal(algo_class, args, {"buffer_size": 10**9})
    assert refusal is not None and refusal.startswith(text), refusal
    assert "1000000000 transitions of 2 x 12,288-byte observations" in refusal


@pytest.mark.parametrize("algo_class", [SACModel, TD3Model, DQNModel, PPO2Model])
def test_the_defaults_with_raw_pixels_fit_a_small_machine(monkeypatch, algo_class):
    monkeypatch.setattr(buffer_memory, "machineMemory", lambda: 4 * GIB)
    assert bufferMemoryRefusal(algo_class, _args(algo=algo_class.NAME), algo_class.DEFAULT_HYPERPARAMS) is None


def test_no_meminfo_no_check(monkeypatch, tmp_path):
    monkeypatch.setattr(buffer_memory, "MEMINFO", str(tmp_path / "missing"))
    assert machineMemory() is None
    assert bufferMemoryRefusal(PPO2Model, _args(), {"n_steps": 10**14}) is None


def test_machine_memory_is_memory_plus_swap(monkeypatch, tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       1000 kB\nMemFree:         10 kB\nSwapTotal:       24 kB\n")
    monkeypatch.setattr(buffer_memory, "MEMINFO", str(meminfo))
    assert machineMemory() == 1024 * 1024
    assert humanBytes(1.12 * 1024 ** 4) == "1.1 TiB" and humanBytes(23.5 * GIB) == "23.5 GiB"
    assert humanBytes(512) == "512 bytes"


def test_a_buffer_size_given_to_a_continued_model_or_a_version_1_plugin_is_checked(tmp_path, monkeypatch):
    """The estimate was skipped with --load-rl-model-path (``--hyperparam buffer_size:2000000000`` on a continued sac
    model trained, filling the machine) and for algorithms of plugin API version 1: a size given on the command line
    is known before anything is written, and is refused there; a continued model's saved size is not checked (it fit
    when loading it), nor a version 1 plugin's own default."""
    common = ["--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth", "--no-vis",
              "--no-progress", "--num-timesteps", "64", "--log-dir", str(tmp_path / "logs")]
    assert train.main([*common, "--hyperparam", "n_steps:32", "batch_size:32"]) == 0
    model = next(str(path) for path in (tmp_path / "logs").rglob("ppo2_model.zip") if "checkpoints" not in str(path))
    monkeypatch.setattr(buffer_memory, "machineMemory", lambda: 2 ** 20)  # 1 MiB
    runs = sorted((tmp_path / "logs").rglob("args.json"))
    continued = [*common, "--load-rl-model-path", model]
    with pytest.raises(UsageError, match=r"^--hyperparam n_steps:100000: ppo2's rollout buffer would take 13\.7 MiB "
                                         r"\(100000 steps x 4 envs"):
        train_checks.validate(train.parseCommand([*continued, "--hyperparam", "n_steps:100000"])[0], registered_rl)
    train_checks.validate(train.parseCommand(continued)[0], registered_rl)  # its saved n_steps
    assert sorted((tmp_path / "logs").rglob("args.json")) == runs  # nothing written

    class VersionOnePPO2(PPO2Model):
        API_VERSION = 1

    monkeypatch.setitem(registered_rl, "ppo2", (VersionOnePPO2, *registered_rl["ppo2"][1:]))
    with pytest.raises(UsageError, match=r"^--hyperparam n_steps:100000: ppo2's rollout buffer would take"):
        train_checks.validate(train.parseCommand([*common, "--hyperparam", "n_steps:100000"])[0], registered_rl)
    train_checks.validate(train.parseCommand(common)[0], registered_rl)  # its own default: unknown before its train
