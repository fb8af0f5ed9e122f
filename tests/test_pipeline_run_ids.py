"""rl_baselines.pipeline's grid and run ids: expansion, what a run id counts and leaves out (renderer, paths,
hyperparameter files, settings idle for the observation), and finished runs made under another train default."""
from __future__ import annotations

import json
import os

import pytest
from srl_rl_bench import writeRun
from sweep_runs import ENVS, SRL_MODELS, TRAIN_FLAGS

from environments.mobile_robot.mobile_robot_env import MobileRobotGymEnv
from environments.srl_env import REFERENCE_RENDERER
from rl_baselines.sweeps import pipeline, recorded
from rl_baselines.sweeps.run_attempts import finishedFolder
from rl_baselines.sweeps.sweep import (
    RunSpec,
    canonicalArgs,
    canonicalPath,
    expandGrid,
    makeSpec,
    parseTrainArgs,
    runId,
    unknownTrainFlags,
)
from srl_toolbox.cli import UsageError


def test_grid_expansion_and_run_ids(tmp_path) -> None:
    specs = expandGrid(["ppo2"], ENVS, SRL_MODELS, [0, 1], TRAIN_FLAGS, str(tmp_path))
    assert len(specs) == 8 and len({spec.run_id for spec in specs}) == 8
    assert [spec.seed for spec in specs] == [0] * 4 + [1] * 4  # seeds outermost
    assert {(s.env, s.srl_model) for s in specs[:4]} == {(e, m) for e in ENVS for m in SRL_MODELS}
    assert all(spec.log_dir == str(tmp_path) and spec.train_args == tuple(TRAIN_FLAGS) for spec in specs)
    # Deterministic: the same grid gives the same ids; repeated names count once
    again = expandGrid(["ppo2", "ppo2"], ENVS + ENVS[:1], SRL_MODELS, [0, 1, 1], TRAIN_FLAGS, str(tmp_path / "other"))
    assert [spec.run_id for spec in again] == [spec.run_id for spec in specs]

    env = ENVS[0]
    base = makeSpec("ppo2", env, "ground_truth", 0, ["--num-timesteps", "300", "-c"], str(tmp_path))
    # Flag order, aliases, number spelling and explicit defaults do not change what a run computes, nor its id
    same = makeSpec("ppo2", env, "ground_truth", 0, ["--continuous-actions", "--num-timesteps", "3e2", "--num-cpu",
                                                     "4"], str(tmp_path))  # (ppo2's default envs)
    assert same.run_id == base.run_id
    others = [makeSpec("ppo2", env, "ground_truth", 1, ["--num-timesteps", "300", "-c"], str(tmp_path)),
              makeSpec("ppo2", env, "ground_truth", 0, ["--num-timesteps", "400", "-c"], str(tmp_path)),
              makeSpec("ppo2", env, "ground_truth", 0, ["--num-timesteps", "300"], str(tmp_path)),
              makeSpec("a2c", env, "ground_truth", 0, ["--num-timesteps", "300", "-c"], str(tmp_path)),
              makeSpec("ppo2", env, "raw_pixels", 0, ["--num-timesteps", "300", "-c"], str(tmp_path))]
    assert len({base.run_id, *(spec.run_id for spec in others)}) == 6
    # The run is train's command with its folder, no live plots and no progress bar
    argv = base.trainArgv("/x/run")
    assert argv[argv.index("--tag") + 1] == base.run_id and argv[argv.index("--run-folder") + 1] == "/x/run"
    assert "--no-vis" in argv and argv[-3:] == ["--num-timesteps", "300", "-c"]


def test_the_run_id_counts_the_renderer_as_train_resolves_it(tmp_path, monkeypatch) -> None:
    """--renderer left out is the env's default (the mobile robots': sprites); the id names the renderer unless it is
    tinyrenderer, so the tinyrenderer runs made while it was the default keep their ids."""
    def runId(*flags: str) -> str:
        return makeSpec("ppo2", ENVS[0], "ground_truth", 0, ["--num-timesteps", "300", *flags], str(tmp_path)).run_id

    plain, tiny, sprites = runId(), runId("--renderer", "tinyrenderer"), runId("--renderer", "sprites")
    assert plain == sprites != tiny
    named = [canonicalArgs("ppo2", parseTrainArgs("ppo2", ENVS[0], "ground_truth", 0, flags)).get("renderer")
             for flags in ([], ["--renderer", "tinyrenderer"], ["--renderer", "sprites"])]
    assert named == ["sprites", None, "sprites"]  # tinyrenderer's ids are those of the runs made before the setting
    monkeypatch.setattr(MobileRobotGymEnv, "DEFAULT_RENDERER", REFERENCE_RENDERER)
    assert (runId(), runId("--renderer", "tinyrenderer"), runId("--renderer", "sprites")) == (tiny, tiny, sprites)


def test_the_run_id_counts_a_path_as_the_place_it_names(tmp_path) -> None:
    """A file given relative, absolute or roundabout is one run id (the run starts in ``cwd``); a relative spelling
    keeps the id it had before paths were normalised; a place outside ``cwd`` counts absolute."""
    cwd, outside = tmp_path / "repo", tmp_path / "elsewhere"
    cwd.mkdir()

    def spec(*flags: str):
        return makeSpec("ppo2", ENVS[0], "ground_truth", 0, ["--num-timesteps", "300", *flags], str(cwd / "logs"),
                        cwd=str(cwd))

    config = os.path.join("bench", "srl_models.yaml")
    spellings = [config, str(cwd / config), os.path.join(".", "bench", "x", "..", "srl_models.yaml")]
    assert len({spec("--srl-config-file", path).run_id for path in spellings}) == 1
    flags = ["--num-timesteps", "300", "--srl-config-file", config]
    settings = canonicalArgs("ppo2", parseTrainArgs("ppo2", ENVS[0], "ground_truth", 0, flags), str(cwd))
    assert settings["srl_config_file"] == config
    assert spec("--srl-config-file", config).run_id == runId("ppo2", ENVS[0], "ground_truth", 0, settings)
    away = [str(outside / "m.yaml"), os.path.join("..", "elsewhere", "m.yaml")]
    assert len({spec("--srl-config-file", path).run_id for path in away}) == 1
    assert spec("--srl-config-file", away[0]).run_id != spec("--srl-config-file", config).run_id
    assert canonicalPath(os.path.join("..", "elsewhere", "m.yaml"), str(cwd)) == str(outside / "m.yaml")
    # every path setting, and a default given explicitly in another spelling, leaves no trace in the id
    assert spec("--srl-log-folder", str(cwd / "logs" / "srl")).run_id == spec().run_id
    assert (spec("--load-rl-model-path", "m.zip").run_id == spec("--load-rl-model-path", str(cwd / "m.zip")).run_id
            != spec().run_id)


def test_the_run_id_counts_what_a_hyperparam_file_gives(tmp_path) -> None:
    """Editing a --hyperparam-file and running the sweep again makes new runs (they were taken as done, made with
    the old values); the same values in another spelling or layout keep the id."""
    path = tmp_path / "hp.yml"

    def runIdWith(text: str) -> str:
        path.write_text(text)
        return makeSpec("ppo2", ENVS[0], "ground_truth", 0, ["--hyperparam-file", str(path)], str(tmp_path / "logs"),
                        cwd=str(tmp_path)).run_id

    first = runIdWith("n_steps: 64\ngamma: 0.95\n")
    assert runIdWith("gamma: 0.95\nn_steps: 64  # the same values\n") == first
    assert runIdWith(f"{ENVS[0]}:\n  n_steps: 64\n  gamma: 0.95\n") == first  # rl_zoo3's layout
    assert runIdWith("n_steps: 32\ngamma: 0.9\n") != first
    # a file train refuses still has an id (its path's): train refuses it with its own message
    assert runIdWith("n_envs: 8\n")


def test_a_setting_that_does_nothing_for_the_observation_leaves_the_run_id(tmp_path, capsys) -> None:
    """--img-shape does nothing for ground truth (nor --srl-state-scale without a learned model): a sweep's
    ground-truth runs have one id whatever it gives, so sweeps differing only in --img-shape share them; a run
    finished while the id held it is still found by its command, and raw pixels keep one id per image size."""
    log_dir, flags = str(tmp_path / "logs"), ["--num-timesteps", "300"]

    def spec(srl_model: str, *extra: str) -> RunSpec:
        return makeSpec("ppo2", ENVS[0], srl_model, 0, [*flags, *extra], log_dir)

    plain, small, large = (spec("ground_truth", *extra) for extra in
                           ([], ["--img-shape", "3", "32", "32"], ["--img-shape", "3", "64", "64"]))
    scaled = spec("ground_truth", "--srl-state-scale", "participation")
    assert plain.run_id == small.run_id == large.run_id == scaled.run_id and plain.earlier_id is None
    assert len({plain.run_id, small.earlier_id, large.earlier_id, scaled.earlier_id}) == 4  # the ids made before
    assert "earlier_id" not in plain.toDict() and small.toDict()["earlier_id"] == small.earlier_id
    assert spec("raw_pixels").run_id != spec("raw_pixels", "--img-shape", "3", "36", "36").run_id
    # an algorithm's flag that does nothing for the run (train warns of it) counts at what the run applies
    rad = spec("raw_pixels", "--augment-loss", "rad")  # no --augment: ppo2's update is the plain one
    assert rad.run_id == spec("raw_pixels").run_id and rad.earlier_id is not None
    assert spec("raw_pixels", "--augment", "shift", "--augment-loss", "rad").run_id != spec(
        "raw_pixels", "--augment", "shift").run_id
    assert spec("ground_truth", "--features-extractor", "small").run_id == plain.run_id  # the pixel policy's CNN
    assert recorded.trainSettings({"srl_model": "ground_truth", "img_shape": [3, 32, 32]})["img_shape"] is None
    assert recorded.trainSettings({"srl_model": "raw_pixels", "img_shape": [3, 32, 32]})["img_shape"] == [3, 32, 32]

    def sweep(*extra: str) -> str:
        command = ["--algo", "ppo2", "--env", ENVS[0], "--srl-model", "ground_truth", "--num-iteration", "1",
                   "--log-dir", log_dir, "--no-vis", *flags, *extra]
        assert pipeline.main(command) == 0
        return capsys.readouterr().out

    old = writeRun(os.path.join(small.parent, f"26-11-20_10h00_00_{small.earlier_id}"), "ground_truth", 0, None,
                   spec=small)
    assert finishedFolder(small) == old and finishedFolder(large) is None
    assert "1 already done, 0 to run" in sweep("--img-shape", "3", "32", "32")
    new = writeRun(os.path.join(plain.parent, f"26-11-21_10h00_00_{plain.run_id}"), "ground_truth", 0, None,
                   spec=plain)  # made since by any of them: every one finds it
    assert finishedFolder(small) == finishedFolder(large) == finishedFolder(plain) == new
    assert "1 already done, 0 to run" in sweep("--img-shape", "3", "64", "64")


def test_a_finished_run_of_another_train_default_is_kept_with_one_warning(tmp_path, capsys) -> None:
    """The run id names only the settings given, so a run finished before a train default changed (here ppo2's
    raw-pixel clip_range_vf) has the id of today's: the pipeline keeps it as done and says so once, naming the
    setting; runs of today's settings say nothing."""
    log_dir, flags = str(tmp_path / "logs"), ["--num-timesteps", "300"]
    specs = expandGrid(["ppo2"], ENVS[:1], ["ground_truth", "raw_pixels"], [0, 1], flags, log_dir)
    for spec in specs:  # finished, with the args.json train records for its command today
        writeRun(os.path.join(spec.parent, f"26-11-20_10h00_00_{spec.run_id}"), spec.srl_model, spec.seed, None,
                 spec=spec)
    command = ["--algo", "ppo2", "--env", ENVS[0], "--srl-model", "ground_truth", "raw_pixels", "--num-iteration", "2",
               "--log-dir", log_dir, "--no-vis", *flags]
    assert pipeline.main(command) == 0
    captured = capsys.readouterr()
    assert "4 already done, 0 to run" in captured.out and captured.err == ""
    for spec in specs[1::2]:  # the raw-pixel runs, made before the default
        path = os.path.join(finishedFolder(spec), "args.json")
        with open(path) as handle:
            args = json.load(handle)
        with open(path, "w") as handle:
            json.dump({name: value for name, value in args.items() if name != "hp_clip_range_vf"}, handle)
    assert pipeline.main(command) == 0
    captured = capsys.readouterr()
    assert "4 already done, 0 to run" in captured.out and captured.err.count("\n") == 1
    assert captured.err.startswith("warning: 2 finished run(s) were made with other train settings than this "
                                   "command's (hp_clip_range_vf; a train default changed since), e.g. ")
    assert all(finishedFolder(spec) is not None for spec in specs)
    with open(os.path.join(finishedFolder(specs[0]), "env_globals.json"), "w") as handle:
        handle.write("{damaged")  # unreadable: physics version 1, MobileRobot's own, so nothing more to say
    assert pipeline.main(command) == 0
    assert capsys.readouterr().err.count("\n") == 1


def test_a_flag_neither_the_sweep_nor_train_takes_is_refused_as_a_flag_with_the_one_meant() -> None:
    """--algos given to pipeline is not blamed on a combination of the default grid: it names the flag meant."""
    message = unknownTrainFlags(["ppo2"], ["--algos", "ppo2", "--num-timesteps", "64"], ["--algo", "--env"])
    assert message == ("unrecognized arguments: --algos ppo2 (neither the sweep's flags nor train's; did you mean "
                       "--algo?)")
    assert unknownTrainFlags(["ppo2"], ["--nonsense"]) == ("unrecognized arguments: --nonsense (neither the sweep's "
                                                           "flags nor train's)")
    # a flag one of the sweep's algorithms takes is the combinations' matter (checkGrid names those it is bad for)
    assert unknownTrainFlags(["ppo2", "deepq"], ["--n-steps", "16"]) is None
    assert unknownTrainFlags(["ppo2", "nope"], ["--num-timesteps", "64"]) is None  # an unknown algo is refused by name
    assert unknownTrainFlags(["ppo2"], []) is None


def test_pipeline_refuses_an_unknown_flag_before_anything_is_written(tmp_path) -> None:
    with pytest.raises(UsageError,
                       match=r"^unrecognized arguments: --envs MobileRobotGymEnv-v0 .*did you mean --env\?"):
        pipeline.main(["--envs", "MobileRobotGymEnv-v0", "--log-dir", str(tmp_path / "logs")])
    assert not os.listdir(tmp_path)
