"""Raw-pixel hyperparameter defaults (Hyperparam.pixel_default): ppo2 from raw pixels clips its value update
(clip_range_vf 0.2) unless told otherwise, records it as the flag in args.json, keeps every other observation,
augmented pixels and every other algorithm as SB3 has them, and the benchmarks key raw-pixel runs by it."""
from __future__ import annotations

import json
import os

import pytest
from conftest import interruptedRun, trainHere
from stable_baselines3 import PPO

from benchmarks.srl_rl.archive import settingsDigest
from rl_baselines.core.hyperparams import POSITIVE, Hyperparam, NoneOrPositive, asInterval, pixelDefaultFlags
from rl_baselines.core.registry import registered_rl
from rl_baselines.rl_algorithm.ppo2 import PPO2Model
from rl_baselines.runs import train
from rl_baselines.sweeps.recorded import specSettings
from rl_baselines.sweeps.sweep import RunSpec
from srl_toolbox.cli import CLIParser

ENV = ["--env", "MobileRobotGymEnv-v0"]
SHORT = ["--algo", "ppo2", *ENV, "--num-timesteps", "128", "--n-steps", "64"]


def _args(run_dir: str) -> dict:
    with open(os.path.join(run_dir, "args.json")) as stream:
        return json.load(stream)


def test_which_runs_get_the_pixel_default() -> None:
    assert pixelDefaultFlags(PPO2Model, "raw_pixels", {}) == {"hp_clip_range_vf": "0.2"}
    assert pixelDefaultFlags(PPO2Model, "ground_truth", {}) == {}  # other observations keep SB3's
    assert pixelDefaultFlags(PPO2Model, "vae", {}) == {}
    assert pixelDefaultFlags(PPO2Model, "raw_pixels", {"hp_clip_range_vf": "none"}) == {}  # the flag wins
    assert pixelDefaultFlags(PPO2Model, "raw_pixels", {}, {"clip_range_vf": "0.1"}) == {}  # and --hyperparam
    # measured on the images as rendered: a run whose losses see shifted views (RAD) keeps SB3's, DrAC's do not
    assert pixelDefaultFlags(PPO2Model, "raw_pixels", {"augment_loss": "rad"}, augment="shift") == {}
    assert pixelDefaultFlags(PPO2Model, "raw_pixels", {}, augment="shift") == {"hp_clip_range_vf": "0.2"}
    assert pixelDefaultFlags(PPO2Model, "raw_pixels", {}, augment="none") == {"hp_clip_range_vf": "0.2"}
    for algo in ("maskable_ppo", "ppo_lstm", "a2c", "gail"):  # measured for ppo2 only
        assert pixelDefaultFlags(registered_rl[algo][0], "raw_pixels", {}) == {}, algo
    help_text = PPO2Model.customArguments(CLIParser(prog="train")).format_help()
    assert "[none; raw_pixels: 0.2]" in " ".join(help_text.split())


def test_a_pixel_default_is_declared_like_the_default() -> None:
    with pytest.raises(ValueError, match="pixel default 'x' is not a float like the default 0.5$"):
        Hyperparam(0.5, pixel_default="x")
    with pytest.raises(ValueError) as refused:  # a float out of bounds: the bound, not the type, is the problem
        Hyperparam(0.5, bounds=POSITIVE, pixel_default=-1.0)
    assert str(refused.value) == f"Hyperparam pixel default -1.0 must be {asInterval(POSITIVE)}"
    assert Hyperparam(NoneOrPositive("none"), pixel_default=NoneOrPositive("0.1")).pixel_default == "0.1"


@pytest.mark.slow
def test_a_raw_pixel_run_records_and_uses_it_and_the_flag_turns_it_off(tmp_path) -> None:
    run = trainHere(*SHORT, "--srl-model", "raw_pixels", "--log-dir", tmp_path / "default")
    assert _args(run)["hp_clip_range_vf"] == "0.2"  # recorded as the flag: resume and the benchmarks see it
    assert PPO.load(os.path.join(run, "ppo2_model.zip")).clip_range_vf(1.0) == 0.2
    run = trainHere(*SHORT, "--srl-model", "raw_pixels", "--clip-range-vf", "none", "--log-dir", tmp_path / "off")
    assert _args(run)["hp_clip_range_vf"] == "none"
    assert PPO.load(os.path.join(run, "ppo2_model.zip")).clip_range_vf is None
    for observation in (("--srl-model", "ground_truth"),
                        ("--srl-model", "raw_pixels", "--augment", "shift", "--augment-loss", "rad")):
        run = trainHere(*SHORT, *observation, "--log-dir", tmp_path / observation[-1])
        assert "hp_clip_range_vf" not in _args(run)
        assert PPO.load(os.path.join(run, "ppo2_model.zip")).clip_range_vf is None


@pytest.mark.slow
def test_a_raw_pixel_run_made_before_the_default_resumes_as_it_was(tmp_path, monkeypatch) -> None:
    # made unclipped, its args.json without the flag: as every raw-pixel run before the pixel default
    run_dir = interruptedRun(monkeypatch, str(tmp_path), ["--algo", "ppo2", *ENV, "--srl-model", "raw_pixels",
                                                          "--num-timesteps", "384", "--n-steps", "64",
                                                          "--checkpoint-freq", "64", "--clip-range-vf", "none",
                                                          "--num-cpu", "1"], 200)
    args = _args(run_dir)
    del args["hp_clip_range_vf"]
    with open(os.path.join(run_dir, "args.json"), "w") as stream:
        json.dump(args, stream)
    assert train.main(["--resume", run_dir, "--no-vis", "--no-progress"]) == 0
    model = PPO.load(os.path.join(run_dir, "ppo2_model.zip"))
    assert model.num_timesteps == 384 and model.clip_range_vf is None  # the checkpoint's own setting
    assert "hp_clip_range_vf" not in _args(run_dir)  # its record as it was


def test_the_benchmarks_key_raw_pixel_runs_by_it() -> None:
    raw = specSettings(RunSpec("ppo2", "MobileRobotGymEnv-v0", "raw_pixels", 0, (), "x", "."))
    assert raw["hp_clip_range_vf"] == "0.2"
    before = {name: value for name, value in raw.items() if name != "hp_clip_range_vf"}  # a run's made before
    assert settingsDigest(raw) != settingsDigest(before)  # so the benchmark runs it again
    state = specSettings(RunSpec("ppo2", "MobileRobotGymEnv-v0", "ground_truth", 0, (), "x", "."))
    assert "hp_clip_range_vf" not in state  # the other rows keep their keys
    given = specSettings(RunSpec("ppo2", "MobileRobotGymEnv-v0", "raw_pixels", 0,
                                 ("--hyperparam", "clip_range_vf:0.1"), "x", "."))
    assert "hp_clip_range_vf" not in given and given["hyperparam"] == ["clip_range_vf:0.1"]
    rad = specSettings(RunSpec("ppo2", "MobileRobotGymEnv-v0", "raw_pixels", 0,
                               ("--augment", "shift", "--augment-loss", "rad"), "x", "."))
    assert "hp_clip_range_vf" not in rad and rad["augment_loss"] == "rad"
    before = {name: value for name, value in rad.items() if name != "augment_loss"}  # recorded before the flag
    assert settingsDigest(rad) == settingsDigest(before)  # a RAD run keeps the key of the runs made before DrAC
    drac = specSettings(RunSpec("ppo2", "MobileRobotGymEnv-v0", "raw_pixels", 0, ("--augment", "shift"), "x", "."))
    assert drac["hp_clip_range_vf"] == "0.2" and drac["augment_loss"] == "drac"
    assert settingsDigest(drac) != settingsDigest(before)
    assert "augment_loss" not in raw  # (idle without --augment: the plain runs keep their keys)
