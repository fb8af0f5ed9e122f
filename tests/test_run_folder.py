"""RunFolder owns the names of a run folder's files: the train command writes them, the readers find them."""
from __future__ import annotations

import datetime
import fnmatch
import os
import re
import shutil

import pytest
from conftest import runFolder, runTrain

from replay.enjoy_baselines import insideRunFlag
from rl_baselines.core import run_folder
from rl_baselines.core.run_folder import MANIFEST_FILE, RunFolder, newStamp
from rl_baselines.envs import factory
from rl_baselines.envs.factory import NORMALISATION_FILE
from rl_baselines.runs import train
from rl_baselines.runs.resume import planResume
from rl_baselines.runs.run_policy import RunPolicy, readRunConfig
from srl_models import config as srl_config
from srl_models.config import RUN_RECORD_FILE
from srl_toolbox.cli import UsageError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_paths_and_stamp() -> None:
    run = RunFolder("/logs/env/gt/ppo2/run")
    assert run.args_file == "/logs/env/gt/ppo2/run/args.json"
    assert run.monitor_dir == "/logs/env/gt/ppo2/run/monitor"
    assert run.best_dir == "/logs/env/gt/ppo2/run/best"
    assert run.evaluations_file.endswith("/evaluations.npz") and run.srl_model_file.endswith("/srl_model.json")
    assert newStamp(datetime.datetime(2026, 11, 24, 1, 2, 3)) == "26-11-24_01h02_03"


def test_a_trained_run_is_a_run_folder(tmp_path) -> None:
    result = runTrain("--algo", "random_agent", "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth",
                      "--num-timesteps", "300", "--log-dir", tmp_path)
    run_dir = runFolder(result)
    run = RunFolder(run_dir)
    assert RunFolder.isRun(run_dir) and not RunFolder.isRun(os.path.dirname(run_dir))
    for path in (run.args_file, run.env_globals_file, run.learning_curve_file):
        assert os.path.isfile(path), path
    assert re.fullmatch(r"\d\d-\d\d-\d\d_\d\dh\d\d_\d\d_seed0", os.path.basename(run_dir))


def test_a_folder_above_runs_is_refused_naming_the_newest_run(tmp_path) -> None:
    """train's --log-dir is the root of its runs, enjoy's --log-dir (the dataset generator's --policy, train's
    --resume) one run: given the root, the refusal names the newest run below it, as rl_zoo3's enjoy finds the latest
    experiment itself."""
    algo_dir = tmp_path / "MobileRobotGymEnv-v0" / "ground_truth" / "ppo2"
    for index, name in enumerate(("26-12-01_10h00_00_seed0", "26-12-02_10h00_00_seed1")):
        run = algo_dir / name
        (run / "monitor").mkdir(parents=True)
        (run / "args.json").write_text("{}")
        (run / "checkpoints" / "256_steps").mkdir(parents=True)
        (run / "checkpoints" / "256_steps" / "args.json").write_text("{}")  # (a run's own subfolders: not runs)
        os.utime(run / "args.json", (1_000_000 * (2 - index),) * 2)  # the first written last: the newest
    (tmp_path / ".hidden" / "run").mkdir(parents=True)
    (tmp_path / ".hidden" / "run" / "args.json").write_text("{}")
    newest = str(algo_dir / "26-12-01_10h00_00_seed0")
    assert run_folder.newestRunBelow(str(tmp_path)) == (newest, 2)
    for refuse in (planResume, lambda folder: train.main(["--resume", folder])):  # (read and parse: both refuse)
        with pytest.raises(UsageError, match=rf"^--resume '{re.escape(str(tmp_path))}' is not a run folder \(no "
                                             rf"args.json\): the newest of the 2 below it is {re.escape(newest)}$"):
            refuse(str(tmp_path))
    with pytest.raises(ValueError, match=rf"^--log-dir '{re.escape(str(tmp_path))}' holds no run \(no args.json\); "
                       rf"pass a run folder written by rl_baselines.train: the newest of the 2 below it is "
                       rf"{re.escape(newest)}$"):
        readRunConfig(str(tmp_path), "--log-dir")
    lone = tmp_path / "MobileRobotGymEnv-v0" / "ground_truth"
    shutil.rmtree(algo_dir / "26-12-02_10h00_00_seed1")
    with pytest.raises(ValueError, match=rf"train: the one below it is {re.escape(newest)}$"):
        readRunConfig(str(lone), "--policy")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run_folder.newestRunBelow(str(empty)) == (None, 0)
    with pytest.raises(ValueError, match=r"holds no run \(no args.json\); pass a run folder written by "
                                         r"rl_baselines.train$"):
        readRunConfig(str(empty), "--log-dir")


def test_a_folder_inside_a_run_is_refused_naming_the_run(tmp_path) -> None:
    """train --resume given a run's checkpoints/, one checkpoint's folder or monitor/ (the dataset generator's
    --policy too) said only "is not a run folder (no args.json)"; the refusal names the run and the command for it,
    and says that --resume continues from the newest intact checkpoint, not the one given."""
    run = tmp_path / "MobileRobotGymEnv-v0" / "ground_truth" / "ppo2" / "26-12-01_10h00_00_seed0"
    for below in ("monitor", "checkpoints/512_steps/training_state", "best"):
        (run / below).mkdir(parents=True)
    (run / "args.json").write_text("{}")
    newest = " (it continues from the run's newest intact checkpoint; it cannot start from a chosen one)"
    for below, note in (("checkpoints", newest), ("checkpoints/512_steps", newest), ("monitor", "")):
        folder = str(run / below)
        for refuse in (planResume, lambda folder: train.main(["--resume", folder])):
            with pytest.raises(UsageError, match=rf"^--resume '{re.escape(folder)}' is {below}/ inside the run "
                                                 rf"{re.escape(str(run))}, not a run folder: give --resume "
                                                 rf"{re.escape(str(run))}{re.escape(note)}$"):
                refuse(folder)
    played = " (it plays the run's latest model, not a checkpoint's nor best/'s)"
    for below, note in (("checkpoints/512_steps", played), ("best", played), ("monitor", "")):
        folder = str(run / below)
        with pytest.raises(ValueError, match=rf"^--policy '{re.escape(folder)}' is {below}/ inside the run "
                                             rf"{re.escape(str(run))}, not a run folder: give --policy "
                                             rf"{re.escape(str(run))}{re.escape(note)}$"):
            RunPolicy(folder)


def test_a_file_of_a_run_is_refused_naming_the_run(tmp_path) -> None:
    """--resume RUN/args.json (enjoy's --log-dir too) said only "is not a folder"; it names the run, as for a folder
    inside it."""
    run = tmp_path / "MobileRobotGymEnv-v0" / "ground_truth" / "ppo2" / "26-12-01_10h00_00_seed0"
    run.mkdir(parents=True)
    (run / "args.json").write_text("{}")
    given = str(run / "args.json")
    named = re.escape(str(run))
    with pytest.raises(UsageError, match=rf"^--resume '{re.escape(given)}' is args.json inside the run {named}, "
                                         rf"not a run folder: give --resume {named}$"):
        train.main(["--resume", given])
    with pytest.raises(ValueError, match=rf"^--log-dir '{re.escape(given)}' is args.json inside the run {named}, "
                                         rf"not a run folder: give --log-dir {named}$"):
        readRunConfig(given, "--log-dir")
    model = run / "checkpoints" / "512_steps" / "ppo2_model.zip"  # enjoy's hint from the folder holding the file
    model.parent.mkdir(parents=True)
    model.write_text("")
    with pytest.raises(ValueError, match=rf"is checkpoints/512_steps/ppo2_model.zip inside the run {named}, not a run "
                                         rf"folder: give --log-dir {named} --load-checkpoint 512$"):
        readRunConfig(str(model), "--log-dir", insideRunFlag)
    (tmp_path / "notes.txt").write_text("")  # a file in no run: as before
    with pytest.raises(UsageError, match="is not a folder$"):
        train.main(["--resume", str(tmp_path / "notes.txt")])


def test_no_module_spells_the_file_names_itself() -> None:
    """A name changes in one line: the RL, replay and benchmark modules ask RunFolder (or the constant of the module
    that defines a name: NORMALISATION_FILE, RUN_RECORD_FILE) for every path."""
    defined_in = {run_folder.__file__: [run_folder.ARGS_FILE, run_folder.ENV_GLOBALS_FILE, run_folder.PROGRESS_FILE,
                                        run_folder.EVALUATIONS_FILE, run_folder.HYPERPARAMS_FILE,
                                        run_folder.LEARNING_CURVE_FILE, run_folder.STAMP_FORMAT,
                                        run_folder.DAMAGED_CHECKPOINTS_DIR, run_folder.MONITOR_SUFFIX,
                                        MANIFEST_FILE],
                  factory.__file__: [NORMALISATION_FILE],
                  srl_config.__file__: [RUN_RECORD_FILE]}
    # folder names that are also words of the commands (--model best, a run state's "monitor" sizes): as a path part
    folders = [run_folder.BEST_DIR, run_folder.MONITOR_DIR, run_folder.CHECKPOINTS_DIR]
    offenders = []
    for package in ("rl_baselines", "replay", "benchmarks"):
        for folder, _, files in os.walk(os.path.join(ROOT, package)):
            for name in files:
                path = os.path.join(folder, name)
                if not name.endswith(".py"):
                    continue
                text = open(path, encoding="utf-8").read()
                # a name is spelled when a string is it or ends with it ("*.monitor.csv", f"{folder}/args.json"; not
                # another name ending so, best_hyperparams.yaml, nor a possessive, args.json's)
                offenders += [f"{os.path.relpath(path, ROOT)}: {spelled}"
                              for definer, names in defined_in.items() if path != definer for spelled in names
                              if re.search(rf"(?<![A-Za-z_]){re.escape(spelled)}[\"'](?!s\b)", text)]
                offenders += [f"{os.path.relpath(path, ROOT)}: {spelled}/" for spelled in folders
                              if path != run_folder.__file__
                              and re.search(rf"""os\.path\.join\([^()]*["']{spelled}["']""", text)]
    assert not offenders, offenders


def _layout(doc: str, header: str) -> tuple[str, set[str]]:
    """:return: the run-folder listing of a doc (the code block after ``header``), and the names its entries begin
    with (``<algo>`` as ppo2, a folder's name without its sub folders)"""
    with open(os.path.join(ROOT, doc), encoding="utf-8") as file:
        block = file.read().split(header, 1)[1].split("```", 1)[0]
    return block, {line.split()[0].replace("<algo>", "ppo2").split("/")[0] for line in block.splitlines()
                   if re.match(r"  \S", line)}


def test_the_run_folder_layouts_name_every_file_a_run_writes(tmp_path) -> None:
    """README's and docs/architecture.md's run-folder listings named no `.train.lock`, which every run folder holds;
    each file and folder a run with evaluations writes at its top level is named there (README: as an entry;
    architecture.md: an entry, or a file named in one, as its manifest.json beside the model), and README says best/'s
    condition (none before --min-episodes-save episodes)."""
    block, listed = _layout("README.md", "logs/<env-id>/<srl-model>/<algo>/<YY-MM-DD_HHhMM_SS>_<tag>/\n")
    assert "once --min-episodes-save (100) episodes finished" in " ".join(block.split())
    result = runTrain("--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth",
                      "--num-timesteps", "256", "--hyperparam", "n_steps:64", "--eval-freq", "128",
                      "--eval-episodes", "1", "--log-dir", tmp_path)
    run_dir = runFolder(result)
    written = set(os.listdir(run_dir))
    assert {"best", "evaluations.npz", "checkpoints", ".train.lock"} <= written
    assert written <= listed, sorted(written - listed)
    block, entries = _layout(os.path.join("docs", "architecture.md"),
                             "<log-dir>/<env-id>/<srl-model>/<algo>/<YY-MM-DD_HHhMM_SS>_<tag>/\n")
    unnamed = {name for name in written if not any(fnmatch.fnmatchcase(name, entry) for entry in entries)
               and name not in block.split()}
    assert not unnamed, sorted(unnamed)
