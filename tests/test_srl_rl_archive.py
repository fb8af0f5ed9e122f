"""The SRL + RL benchmark's archive of finished runs (benchmarks/srl_rl_runs.json, benchmarks.srl_rl.archive) on
synthetic run folders: what a report archives, what an archived env skips, stale records, the key's train settings."""
from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import signal
import threading
from types import SimpleNamespace

import pytest
from srl_rl_bench import CURVES, MOBILE, STEPS, writeGrid, writeModel, writeRun

from benchmarks.srl_rl import analysis, cli, env_plans, plans, running
from benchmarks.srl_rl import archive as bench_archive
from benchmarks.srl_rl import models as bench_models
from benchmarks.srl_rl import report as bench_report
from benchmarks.srl_rl import runs as bench_runs
from environments.kuka.kuka_button_env import KukaButtonGymEnv
from environments.mobile_robot.mobile_robot_env import MobileRobotGymEnv
from environments.srl_env import REFERENCE_RENDERER
from rl_baselines.sweeps import pipeline, recorded, run_attempts, sweep
from rl_baselines.sweeps.sweep import expandGrid
from srl_toolbox.cli import UsageError

SMALL = ["--observations", "ground_truth", "raw_pixels", "vae", "--seeds", "2"]


def _settings(argv: list[str]) -> plans.Settings:
    """The settings main builds from ``argv`` (relative paths from the current directory)."""
    return cli.settingsFrom(cli.buildParser().parse_args(argv))


def _finishedBench(settings: plans.Settings, env: str, state_dim: int = 8,
                   finished_at: str = "2026-11-20T10:00:00") -> str:
    """Every run of the env's grid finished in the settings' bench folder (curves of CURVES), and the vae model they
    used registered there, in the config file of the renderer that draws the env (srl_models_sprites.yaml for
    MobileRobot's default); returns the model's hash."""
    bench = os.path.join(settings.base, settings.bench_dir)
    folder = writeModel(os.path.join(bench, "srl", f"vae_{env}"), "vae", 0.42, state_dim, env)
    with open(os.path.join(folder, "knn_mse.json"), "w") as handle:
        json.dump({"knn_mse": 0.125}, handle)
    with open(os.path.join(settings.base, settings.configFile(env)), "w") as handle:
        handle.write(f"{env}:\n  vae: srl/vae_{env}\n")
    digest = bench_models.modelFacts(folder)["hash"]
    writeGrid(settings, env, CURVES, finished_at, digest, state_dim)
    return digest


@pytest.fixture()
def archived_mobile(tmp_path, monkeypatch) -> tuple[str, str]:
    """A first session: MobileRobot's runs finished in <tmp>/first/logs/bench_srl_rl, archived by a report-only
    invocation from that folder (the default bench folder, relative to it) into <tmp>/runs.json; returns (archive,
    the vae model's hash)."""
    archive = str(tmp_path / "runs.json")
    first = tmp_path / "first"
    first.mkdir()
    monkeypatch.chdir(first)
    digest = _finishedBench(_settings(["--env", MOBILE, *SMALL]), MOBILE)
    assert cli.main(["--env", MOBILE, *SMALL, "--report-only", "--no-doc", "--runs-file", archive]) == 0
    second = tmp_path / "second"  # a later session: a fresh checkout, nothing in its logs/
    second.mkdir()
    monkeypatch.chdir(second)
    return archive, digest


@pytest.mark.usefixtures("groundTruthAsOthers")
def test_report_archives_the_finished_runs(archived_mobile, tmp_path, capsys) -> None:
    archive, digest = archived_mobile
    text = open(archive).read()
    records = json.loads(text)
    assert text == json.dumps(records, indent=2, sort_keys=True) + "\n"  # sorted keys, the files helper's layout
    assert sorted((r["observation"], r["seed"]) for r in records.values()) == [
        ("ground_truth", 0), ("ground_truth", 1), ("raw_pixels", 0), ("raw_pixels", 1), ("vae", 0), ("vae", 1)]
    settings = _settings(["--env", MOBILE, *SMALL])
    vae = next(r for r in records.values() if (r["observation"], r["seed"]) == ("vae", 1))
    assert vae["env"] == MOBILE and vae["run"] == {"algo": "ppo2", "steps": 50_000, "eval_freq": 5_000,
                                                   "eval_episodes": 5, "flags": []}
    assert vae["srl"] == {"seed": 0, "state_dim": 32, "epochs": 10, "episodes": 20, "img_size": 64}  # prepare's
    recipe = bench_models.modelFacts(str(tmp_path / "first" / "logs" / "bench_srl_rl" / "srl" / f"vae_{MOBILE}"))["recipe"]
    assert vae["model"] == {"hash": digest, "recipe": recipe, "state_dim": 8, "gtc": 0.42, "knn_mse": 0.125}
    assert vae["eval_timesteps"] == STEPS.tolist() and vae["eval_rewards"] == pytest.approx(CURVES["vae"][1])
    assert vae["rate"] == pytest.approx(100.0) and vae["wall"] == 50.0
    assert vae["date"] == "2026-11-20" and vae["machine"] and vae["fingerprint"] == settings.fingerprint()
    # the train settings of its command line, as args.json records them, without those that change no result
    assert vae["format"] == bench_archive.FORMAT and vae["train"]["srl_model"] == "vae" and vae["train"]["seed"] == 1
    assert vae["train"]["num_cpu"] == plans.RUN_ENVS == 4 and vae["train"]["num_timesteps"] == 50_000
    assert not set(vae["train"]) & recorded.NOT_A_RESULT and "hp_gamma" not in vae["train"]
    pixels = next(r for r in records.values() if (r["observation"], r["seed"]) == ("raw_pixels", 0))
    assert pixels["srl"] is None and pixels["model"] is None  # its runs do not depend on the SRL settings
    # the same runs seen again (another machine, another observation set): the file is left as it is
    os.chdir(tmp_path / "first")
    capsys.readouterr()
    assert cli.main(["--env", MOBILE, "--observations", "ground_truth", "vae", "--seeds", "2", "--report-only",
                        "--no-doc", "--runs-file", archive]) == 0
    assert open(archive).read() == text and "Archived" not in capsys.readouterr().out


@pytest.mark.usefixtures("groundTruthAsOthers")
def test_report_covers_the_archived_env_beside_the_one_run(archived_mobile, tmp_path, capsys) -> None:
    archive, _ = archived_mobile
    _finishedBench(_settings(["--env", env_plans.KUKA, *SMALL]), env_plans.KUKA, finished_at="2026-11-22T08:00:00")
    doc, images = tmp_path / "srl.md", tmp_path / "images"
    doc.write_text("# SRL\n")
    capsys.readouterr()
    code = cli.main(["--env", env_plans.KUKA, *SMALL, "--report-only", "--runs-file", archive, "--doc", str(doc),
                        "--image-dir", str(images)])
    assert code == 0
    # a document outside the repository by its absolute path, as the figures are (it was ../../tmp/...)
    out = capsys.readouterr().out
    assert f"Wrote the section 'Does SRL help?' of {doc}\n" in out
    text = doc.read_text()
    mobile, kuka = text.index(f"### {MOBILE}"), text.index(f"### {env_plans.KUKA}")
    assert mobile < kuka  # the plan set's order
    mobile_part, kuka_part = text[mobile:kuka], text[kuka:]
    assert "The 6 runs shown come from the archive of finished runs" in mobile_part and "2026-11-20" in mobile_part
    assert "| ground_truth | 2/2 (2 archived) |" in mobile_part and "| vae | 2/2 (2 archived) |" in mobile_part
    assert "0.420 (8)" in mobile_part  # the GTC column from the archived model facts (no model registered here)
    assert "archived" not in kuka_part and "| vae | 2/2 | " in kuka_part and "0.420 (8)" in kuka_part
    # the machine line says it is the one that wrote the report, not necessarily the one each run finished on
    assert "- Machine of this invocation (archived runs: their own machines, in each task's line): " in text
    for env in (MOBILE, env_plans.KUKA):
        assert (images / f"srl_rl_{env}.png").read_bytes()[:4] == b"\x89PNG"
    assert len(json.loads(open(archive).read())) == 12  # Kuka's runs archived beside MobileRobot's
    assert "Archived 6 run(s)" in out


@pytest.mark.usefixtures("groundTruthAsOthers")
def test_a_fully_archived_env_is_neither_prepared_nor_run(archived_mobile, monkeypatch, capsys) -> None:
    archive, _ = archived_mobile
    calls = []
    monkeypatch.setattr(running, "runStage", lambda command, nice, cwd=plans.ROOT: calls.append(command) or 0)
    settings = _settings(["--env", MOBILE, *SMALL, "--runs-file", archive])
    assert running.runEverything(settings) == (False, 0)
    out = capsys.readouterr().out
    assert calls == [] and "all 6 runs are archived" in out and f"--rerun {MOBILE} runs it again" in out
    # --rerun: prepared and run as if nothing were archived
    running.runEverything(settings, rerun=[MOBILE])
    assert [command[1] for command in calls] == ["srl_models.prepare", "rl_baselines.pipeline"]
    # a partial archive: only the runs it lacks go to the pipeline (here seed 1), after prepare
    records = json.loads(open(archive).read())
    with open(archive, "w") as handle:
        json.dump({key: record for key, record in records.items() if record["seed"] == 0}, handle)
    writeModel(os.path.join(settings.base, settings.bench_dir, "srl", f"vae_{MOBILE}"), "vae", 0.42)  # the same model
    with open(os.path.join(settings.base, settings.configFile(MOBILE)), "w") as handle:
        handle.write(f"{MOBILE}:\n  vae: srl/vae_{MOBILE}\n")
    calls.clear()
    running.runEverything(settings)
    (prepare, pipeline) = calls
    assert prepare[1] == "srl_models.prepare"
    assert pipeline[pipeline.index("--srl-model") + 1:pipeline.index("--num-iteration") + 4] == [
        "ground_truth", "raw_pixels", "vae", "--num-iteration", "1", "--seed", "1"]
    assert len(json.loads(open(archive).read())) == 3  # the same model hash: nothing dropped


@pytest.mark.usefixtures("groundTruthAsOthers")
def test_a_model_trained_again_drops_its_archived_records(archived_mobile, monkeypatch, capsys) -> None:
    archive, digest = archived_mobile
    records = json.loads(open(archive).read())
    # a record of other settings (another budget) with the old model: not this configuration's, kept
    other = {**records[next(key for key in records if " vae seed0 " in key)]}
    other["run"] = {**other["run"], "steps": 99}
    records["another budget"] = other
    with open(archive, "w") as handle:
        json.dump(records, handle)
    settings = _settings(["--env", MOBILE, *SMALL, "--runs-file", archive])
    # this session's prepare registers a vae whose files differ (another hash)
    bench = os.path.join(settings.base, settings.bench_dir)
    new_model = writeModel(os.path.join(bench, "srl", "vae_new"), "vae", 0.5, state_dim=16)
    assert bench_models.modelFacts(new_model)["hash"] != digest
    with open(os.path.join(settings.base, settings.configFile(MOBILE)), "w") as handle:
        handle.write(f"{MOBILE}:\n  vae: srl/vae_new\n")
    calls = []
    monkeypatch.setattr(running, "runStage", lambda command, nice, cwd=plans.ROOT: calls.append(command) or 0)
    running.runEverything(settings)
    left = json.loads(open(archive).read())
    assert sorted(key for key in left if " vae " in key) == [] and "another budget" in left and len(left) == 5
    assert "dropped the archived run" in capsys.readouterr().out
    prepare, pipeline = calls
    assert pipeline[pipeline.index("--srl-model") + 1:pipeline.index("--num-iteration") + 4] == [
        "vae", "--num-iteration", "2", "--seed", "0"]


@pytest.mark.usefixtures("groundTruthAsOthers")
def test_another_training_of_the_same_recipe_keeps_the_archived_runs(archived_mobile, tmp_path, monkeypatch,
                                                                      capsys) -> None:
    """The next session (another machine) trains the vae again with the same settings: its weights differ in the last
    bits (another hash) but its recipe is the same, so the archived runs stay and only the missing seed runs."""
    archive, digest = archived_mobile
    records = json.loads(open(archive).read())
    with open(archive, "w") as handle:  # the first session was cut off after seed 0
        json.dump({key: record for key, record in records.items() if record["seed"] == 0}, handle)
    settings = _settings(["--env", MOBILE, *SMALL, "--runs-file", archive])
    bench = os.path.join(settings.base, settings.bench_dir)
    folder = writeModel(os.path.join(bench, "srl", "vae_again"), "vae", 0.5)
    with open(os.path.join(folder, "exp_config.json")) as handle:
        config = json.load(handle)
    with open(os.path.join(folder, "exp_config.json"), "w") as handle:  # what this training produced differs
        json.dump({**config, "train_loss": 0.25, "best_epoch": 7}, handle)
    again = bench_models.modelFacts(folder)
    first = next(record["model"] for record in records.values() if record["observation"] == "vae")
    assert again["hash"] != digest == first["hash"] and bench_models.sameModel(again, first)
    with open(os.path.join(settings.base, settings.configFile(MOBILE)), "w") as handle:
        handle.write(f"{MOBILE}:\n  vae: srl/vae_again\n")
    calls = []
    monkeypatch.setattr(running, "runStage", lambda command, nice, cwd=plans.ROOT: calls.append(command) or 0)
    running.runEverything(settings)
    assert len(json.loads(open(archive).read())) == 3 and "dropped" not in capsys.readouterr().out
    prepare, pipeline = calls
    assert pipeline[pipeline.index("--srl-model") + 1:pipeline.index("--num-iteration") + 4] == [
        "ground_truth", "raw_pixels", "vae", "--num-iteration", "1", "--seed", "1"]
    # seed 1 finishes in this bench folder with the new training; the table says the GTC is a mean over two
    plan = next(plan for plan in settings.reportPlans() if plan.env == MOBILE)
    for spec in settings.specs(plan):
        if int(spec.seed) == 1:
            run = writeRun(os.path.join(spec.parent, f"26-11-25_10h00_00_{spec.run_id}"), spec.srl_model, 1,
                            CURVES[spec.srl_model][1], MOBILE, "2026-11-25T10:00:00", spec)
            if spec.srl_model == "vae":
                with open(os.path.join(run, "srl_model.json"), "w") as handle:
                    json.dump({"name": "vae", "hash": again["hash"], "recipe": again["recipe"], "state_dim": 8},
                              handle)
    doc = tmp_path / "srl.md"
    doc.write_text("# SRL\n")
    assert cli.main(["--env", MOBILE, *SMALL, "--report-only", "--runs-file", archive, "--doc", str(doc),
                        "--image-dir", str(tmp_path / "images")]) == 0
    text = doc.read_text()
    assert "| vae | 2/2 (1 archived) |" in text and "0.460 (8; mean of 2 trainings)" in text
    # the invocation that finishes the last run lists every run's speed, the archived ones with their machine
    appended = []
    monkeypatch.setattr(bench_report, "appendReport", lambda *args, **kwargs: appended.append(args))
    assert bench_report.report(settings, "cmd", "Other CPU, nproc 2", None, str(tmp_path / "images"), append=True) == 0
    (_, _, notes, table), = appended
    row = next(line for line in table.splitlines() if "| vae |" in line)
    assert row.startswith(f"| {MOBILE} | vae | 2 |") and "Other CPU" in row and ", " in row.split("|")[-2]
    assert "archived by earlier invocations" in notes
    kept = json.loads(open(archive).read())
    assert sorted(r["model"]["hash"] for r in kept.values() if r["observation"] == "vae") == sorted([digest,
                                                                                                    again["hash"]])
    # a training with other settings (another recipe) still drops them
    with open(os.path.join(folder, "exp_config.json"), "w") as handle:
        json.dump({**config, "beta": 4.0}, handle)
    calls.clear()
    running.runEverything(settings)
    assert not [key for key, r in json.loads(open(archive).read()).items() if r["observation"] == "vae"]
    assert "dropped the archived run" in capsys.readouterr().out


def test_a_report_after_another_training_keeps_what_the_archive_measured(archived_mobile, tmp_path, capsys) -> None:
    """The first session's bench folder, its vae trained again (another hash, the same recipe): reported again, its
    finished runs, which used the first training, keep the GTC, KNN-MSE and recipe the archive holds for that model."""
    archive, digest = archived_mobile
    text = open(archive).read()
    os.chdir(tmp_path / "first")
    settings = _settings(["--env", MOBILE, *SMALL, "--runs-file", archive])
    folder = writeModel(os.path.join(settings.base, settings.bench_dir, "srl", "vae_again"), "vae", 0.5)
    with open(os.path.join(folder, "exp_config.json")) as handle:
        config = json.load(handle)
    with open(os.path.join(folder, "exp_config.json"), "w") as handle:
        json.dump({**config, "train_loss": 0.25}, handle)
    assert bench_models.modelFacts(folder)["hash"] != digest
    with open(os.path.join(settings.base, settings.configFile(MOBILE)), "w") as handle:
        handle.write(f"{MOBILE}:\n  vae: srl/vae_again\n")
    capsys.readouterr()
    assert cli.main(["--env", MOBILE, *SMALL, "--report-only", "--no-doc", "--runs-file", archive]) == 0
    vae = [record["model"] for record in json.loads(open(archive).read()).values() if record["observation"] == "vae"]
    assert len(vae) == 2 and all(model["gtc"] == 0.42 and model["knn_mse"] == 0.125 and model["recipe"]
                                 and model["hash"] == digest for model in vae)
    assert open(archive).read() == text and "Archived" not in capsys.readouterr().out


def test_the_gtc_column_of_runs_made_with_models_no_longer_registered_comes_from_the_archive() -> None:
    """Runs of two earlier trainings (A, B), the registered model a third (C) used by none: the column shows what the
    archive measured for A (B's metrics are unknown), not n/a, and the archive's facts fill a record that lacks them."""
    records = [SimpleNamespace(observation="vae", model={"hash": digest, "state_dim": 32}) for digest in "AAB"]
    registered = {"vae": {"hash": "C", "gtc": 0.7, "knn_mse": 0.1, "state_dim": 32}}
    archived = {"k1": {"model": {"hash": "A", "gtc": 0.5, "knn_mse": 0.2, "state_dim": 32, "recipe": "r"}},
                "k2": {"model": {"hash": "B", "gtc": None, "knn_mse": None, "state_dim": 32}}, "k3": {"model": None}}
    measured = bench_archive.measuredModels(archived)
    assert set(measured) == {"A"}
    facts = analysis.reportedModels(records, registered, measured)["vae"]
    assert facts["trainings"] == 2 and facts["gtc"] == 0.5 and facts["knn_mse"] == 0.2
    assert math.isnan(analysis.reportedModels(records, registered)["vae"]["gtc"])
    entry = {"observation": "vae", "model": {"hash": "A", "recipe": None, "state_dim": 32, "gtc": None,
                                             "knn_mse": None}}
    assert bench_archive.withArchivedModel(entry, measured)["model"] == archived["k1"]["model"]
    for other in ({**entry, "model": {**entry["model"], "hash": "B"}}, {**entry, "model": None},
                  {**entry, "model": {**entry["model"], "gtc": 0.9}}):
        assert bench_archive.withArchivedModel(other, measured) == other


@pytest.mark.parametrize("stop, received", [(signal.SIGINT, "SIGINT"), (signal.SIGTERM, "SIGTERM")])
def test_a_stop_reaches_the_stage_once_whoever_got_it(tmp_path, stop, received) -> None:
    """The stage (the pipeline) runs in its own session: a SIGINT or SIGTERM to the benchmark's process alone is passed
    on, once, as the same signal (it used to be left running on a SIGINT that only the benchmark got)."""
    got, ready = tmp_path / "got", tmp_path / "ready"
    script = ("import signal, sys, time\n"
              "def stop(signum, frame):\n"
              f"    open({str(got)!r}, 'a').write(signal.Signals(signum).name + '\\n'); sys.exit(0)\n"
              "signal.signal(signal.SIGINT, stop); signal.signal(signal.SIGTERM, stop)\n"
              f"open({str(ready)!r}, 'w').close()\n"
              "time.sleep(60)\n")

    def stopThisProcess():
        while not ready.exists():
            threading.Event().wait(0.05)
        os.kill(os.getpid(), stop)

    threading.Thread(target=stopThisProcess, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        running.runStage(["-c", script], nice=0, cwd=str(tmp_path))
    assert got.read_text() == f"{received}\n"


def test_an_interrupted_runs_stage_still_counts_its_time(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    settings = _settings(["--env", MOBILE, *SMALL, "--runs-file", str(tmp_path / "runs.json")])

    def stage(command, nice, cwd=plans.ROOT):
        if command[1] == "rl_baselines.pipeline":
            raise KeyboardInterrupt
        return 0

    monkeypatch.setattr(running, "runStage", stage)
    with pytest.raises(KeyboardInterrupt):
        running.runEverything(settings)
    with open(settings.timing_file) as handle:
        stages = json.load(handle)[settings.fingerprint()]
    assert set(stages) == {f"prepare {MOBILE}", f"runs {MOBILE}"}


def test_quick_mode_keeps_its_own_archive(tmp_path, monkeypatch) -> None:
    committed = open(plans.RUNS_FILE, "rb").read() if os.path.exists(plans.RUNS_FILE) else None
    monkeypatch.chdir(tmp_path)
    assert _settings([]).archive_file == plans.RUNS_FILE
    settings = _settings(["--quick", "--env", MOBILE])
    assert settings.archive_file == str(tmp_path / plans.QUICK_BENCH_DIR / plans.ARCHIVE_NAME)
    _finishedBench(settings, MOBILE)
    assert cli.main(["--quick", "--env", MOBILE, "--report-only"]) == 0
    assert len(json.loads(open(settings.archive_file).read())) == 6  # gt, raw_pixels, vae x 2 seeds
    assert (open(plans.RUNS_FILE, "rb").read() if os.path.exists(plans.RUNS_FILE) else None) == committed
    assert (tmp_path / plans.QUICK_BENCH_DIR / "srl_rl.md").is_file()


def test_the_bench_folder_of_another_checkout_keeps_its_relative_paths(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    settings = _settings(["--env", MOBILE])
    assert (settings.base, settings.bench_dir, settings.archive_file) == (str(tmp_path), plans.DEFAULT_BENCH_DIR,
                                                                          plans.RUNS_FILE)
    spec = settings.specs(settings.plans[0])[0]
    assert spec.log_dir == str(tmp_path / plans.DEFAULT_BENCH_DIR / "runs")
    # as that checkout ran it: relative, the config file of MobileRobot's default renderer (sprites)
    assert os.path.join(plans.DEFAULT_BENCH_DIR, "srl_models_sprites.yaml") in spec.train_args
    environment = running.stageEnvironment(str(tmp_path))
    assert environment["PYTHONSAFEPATH"] == "1" and environment["PYTHONPATH"].split(os.pathsep)[0] == plans.ROOT
    assert running.stageEnvironment(plans.ROOT) is None
    inside = _settings(["--env", MOBILE, "--bench-dir", os.path.join(plans.ROOT, "logs", "b")])
    assert (inside.base, inside.bench_dir) == (plans.ROOT, os.path.join("logs", "b"))


@pytest.mark.usefixtures("groundTruthAsOthers")
def test_pipeline_commands_cover_exactly_the_runs_given() -> None:
    settings = plans.Settings([env_plans.PLANS[MOBILE]], ["ground_truth", "raw_pixels", "vae"], ["vae"], 3)
    runs = [("ground_truth", 0), ("ground_truth", 1), ("ground_truth", 2), ("raw_pixels", 0), ("raw_pixels", 2),
            ("vae", 2)]
    commands = settings.pipelineCommands(settings.plans[0], [SimpleNamespace(srl_model=name, seed=seed, train_args=())
                                                             for name, seed in runs])

    def grid(command: list[str]) -> tuple:
        names = command[command.index("--srl-model") + 1:command.index("--num-iteration")]
        return tuple(names), int(command[command.index("--seed") + 1]), int(command[command.index("--num-iteration")
                                                                                    + 1])

    assert [grid(command) for command in commands] == [(("ground_truth",), 0, 3), (("raw_pixels",), 0, 1),
                                                        (("raw_pixels",), 2, 1), (("vae",), 2, 1)]
    full = settings.pipelineCommands(settings.plans[0], [SimpleNamespace(srl_model=name, seed=seed, train_args=())
                                                         for name in settings.observations for seed in range(3)])
    assert full == [settings.pipelineCommand(settings.plans[0])]  # nothing archived: the one command as before


def test_no_doc_links_no_figure_unless_one_is_drawn(archived_mobile, tmp_path, monkeypatch, capsys) -> None:
    """--no-doc draws no figure: the printed section links none (it linked docs/images/srl_rl_<env>.png); with
    --image-dir it links the figure drawn there."""
    archive, _ = archived_mobile
    monkeypatch.chdir(tmp_path / "first")
    capsys.readouterr()
    assert cli.main(["--env", MOBILE, *SMALL, "--report-only", "--no-doc", "--no-append", "--runs-file", archive]) == 0
    out = capsys.readouterr().out
    assert "### " + MOBILE in out and "![" not in out and ".png" not in out
    images = tmp_path / "img"
    assert cli.main(["--env", MOBILE, *SMALL, "--report-only", "--no-doc", "--no-append", "--runs-file", archive,
                     "--image-dir", str(images)]) == 0
    out = capsys.readouterr().out
    assert (images / f"srl_rl_{MOBILE}.png").is_file() and f"srl_rl_{MOBILE}.png)" in out


@pytest.mark.usefixtures("groundTruthAsOthers")
def test_a_resumed_benchmark_runs_the_missing_runs_in_one_command(archived_mobile, tmp_path, monkeypatch) -> None:
    """Ground truth's seed 0 is archived and finished in the bench folder, the other runs are missing: one pipeline
    command runs them all, 2 at a time, rather than one command per set of seeds one after the other."""
    archive, _ = archived_mobile
    records = json.loads(open(archive).read())
    with open(archive, "w") as handle:
        json.dump({key: record for key, record in records.items()
                   if (record["observation"], record["seed"]) == ("ground_truth", 0)}, handle)
    monkeypatch.chdir(tmp_path / "first")
    settings = _settings(["--env", MOBILE, *SMALL, "--runs-file", archive])
    for spec in settings.specs(settings.plans[0]):
        if (plans.specObservation(spec), spec.seed) != ("ground_truth", 0):
            shutil.rmtree(run_attempts.finishedFolder(spec))
    calls = []
    monkeypatch.setattr(running, "runStage", lambda command, nice, cwd=plans.ROOT: calls.append(command) or 0)
    running.runEverything(settings)
    assert [command for command in calls if command[1] == "rl_baselines.pipeline"] == [
        settings.pipelineCommand(settings.plans[0])]


def test_a_broken_archive_is_refused_before_anything_is_written(tmp_path) -> None:
    archive = tmp_path / "runs.json"
    archive.write_text('{"a run": {"env": "x"}}')
    with pytest.raises(UsageError, match="lacks format, observation"):
        cli.main(["--env", MOBILE, "--bench-dir", str(tmp_path / "bench"), "--runs-file", str(archive)])
    assert not (tmp_path / "bench").exists()
    with pytest.raises(UsageError, match="--rerun .*not among the envs run"):
        cli.main(["--env", MOBILE, "--rerun", env_plans.KUKA, "--bench-dir", str(tmp_path / "bench")])


@pytest.mark.usefixtures("groundTruthAsOthers")
def test_a_variant_has_its_own_runs_and_row_on_the_model_prepared_once(tmp_path) -> None:
    variant = plans.GT_SCALE
    settings = _settings(["--env", MOBILE, "--observations", "ground_truth", "srl_splits", variant, "--seeds", "2"])
    plan = settings.plans[0]
    assert settings.learned == ["srl_splits", variant] and settings.models == ["srl_splits"]
    prepare = settings.prepareCommand(plan)
    assert prepare[prepare.index("--srl-model") + 1:prepare.index("--seed")] == ["srl_splits"]  # trained once
    specs = settings.specs(plan)
    rows = sorted((plans.specObservation(spec), spec.seed) for spec in specs)
    assert rows == sorted((name, seed) for name in ("ground_truth", "srl_splits", variant) for seed in (0, 1))
    plain = {spec.run_id for spec in specs if plans.specObservation(spec) == "srl_splits"}
    scaled = [spec for spec in specs if plans.specObservation(spec) == variant]
    assert all(spec.srl_model == "srl_splits" and "--srl-ground-truth-scale" in spec.train_args for spec in scaled)
    assert plain.isdisjoint(spec.run_id for spec in scaled)  # its own run folders
    # one pipeline command per set of train flags; the pipeline names the benchmark's runs from it
    plain_command, scaled_command = settings.gridCommands(plan)
    assert "--srl-ground-truth-scale" not in plain_command and scaled_command[-1] == "--srl-ground-truth-scale"
    assert scaled_command[scaled_command.index("--srl-model") + 1:scaled_command.index("--num-iteration")] == [
        "srl_splits"]
    args, train_args = pipeline.buildParser().parse_known_args(scaled_command[2:])
    named = expandGrid(args.algo, args.env, args.srl_model, [0, 1], train_args, str(tmp_path), plans.ROOT)
    assert sorted(spec.run_id for spec in named) == sorted(spec.run_id for spec in scaled)
    assert settings.pipelineCommands(plan, [spec for spec in specs if spec.seed == 1 and spec.srl_model == "srl_splits"
                                            ]) == [settings.pipelineCommand(plan, ["srl_splits"], [1]),
                                                   settings.pipelineCommand(plan, [variant], [1])]
    # a finished run belongs to the variant's row by its args.json; its archive key is its own
    record = bench_runs.loadRun(writeRun(str(tmp_path / "run"), "srl_splits", 0, [1, 2, 3, 4]))
    assert record.observation == "srl_splits"
    record.run.args["srl_ground_truth_scale"] = True
    assert record.observation == variant
    run = settings.runSettings(plan)
    assert (bench_archive.archiveKey(MOBILE, variant, 0, run, None, {})
            != bench_archive.archiveKey(MOBILE, "srl_splits", 0, run, None, {}))
    # its row: its own runs, the GTC of the model it uses
    truth = bench_runs.loadRun(writeRun(str(tmp_path / "truth"), "ground_truth", 0, CURVES["ground_truth"][0]))
    rows, threshold = analysis.summariseEnv([truth, record], ["ground_truth", "srl_splits", variant], 1)
    table = analysis.envTable(MOBILE, rows, threshold, {"srl_splits": {"gtc": 0.8, "state_dim": 32}})
    assert f"| {variant} | 1/1 | 4.00 " in table and "| srl_splits | 0/1 | missing | | | 0.800 (32) |" in table
    assert table.count("0.800 (32)") == 2
    analysis.plotEnv(str(tmp_path / "curves.png"), plan, rows, threshold)
    assert (tmp_path / "curves.png").read_bytes()[:4] == b"\x89PNG"


def test_a_changed_train_default_changes_the_archive_key(tmp_path, monkeypatch) -> None:
    settings = _settings([])
    plan = settings.plans[0]
    specs = settings.specs(plan)
    before = recorded.specSettings(specs[0])
    run = settings.runSettings(plan)
    # where the runs are written and how they are shown change no result: the same key from another bench folder
    elsewhere = _settings(["--bench-dir", str(tmp_path / "bench")])
    assert recorded.specSettings(elsewhere.specs(plan)[0]) == before
    # the runs' envs, given to every run (--envs: ppo2's default of 4; 1 finds the runs made before it was the default;
    # that the archive holds each grid's runs, and only its own: test_srl_rl_default_plan)
    one = _settings(["--envs", "1"])
    assert (before["num_cpu"], recorded.specSettings(one.specs(plan)[0])["num_cpu"]) == (4, 1)
    # a later default of train (here the action repeat): every key changes, the committed records are not reused
    original = sweep.trainParser.__wrapped__  # train's parser, not the cached one

    def changed(algo: str):
        parser = original(algo)
        parser.set_defaults(action_repeat=2)
        return parser

    monkeypatch.setattr(sweep, "trainParser", changed)
    after = recorded.specSettings(specs[0])
    assert (before["action_repeat"], after["action_repeat"]) == (1, 2)
    assert (bench_archive.archiveKey(plan.env, "ground_truth", 0, run, None, before)
            != bench_archive.archiveKey(plan.env, "ground_truth", 0, run, None, after))
    archive = bench_archive.loadArchive(plans.RUNS_FILE)
    assert bench_archive.archivedMatches(archive, settings, plan, settings.specs(plan), {}) == {}


def test_the_renderer_is_in_the_archive_key(monkeypatch) -> None:
    """The archived runs (recorded before --renderer existed) read as tinyrenderer runs, through args.json's upgrade
    rule, and keep their keys, which --renderer tinyrenderer gives; a run with --renderer sprites, or drawn by sprites as
    MobileRobot's default, gets another key; so does every run under a later default of train's --renderer. (With one
    env per run, ppo2's default when the TinyRenderer runs were made.)"""
    settings = _settings(["--envs", "1"])
    plan = settings.plans[0]
    assert plan.env == MOBILE
    spec = settings.specs(plan)[0]
    run = settings.runSettings(plan)
    tiny = recorded.specSettings(dataclasses.replace(spec, train_args=[*spec.train_args, "--renderer",
                                                                         "tinyrenderer"]))
    assert tiny["renderer"] == "tinyrenderer"
    recorded_before = {name: value for name, value in tiny.items() if name != "renderer"}
    assert recorded.trainSettings(recorded_before) == tiny
    key = bench_archive.archiveKey(plan.env, "ground_truth", 0, run, None, tiny)
    assert key == bench_archive.archiveKey(plan.env, "ground_truth", 0, run, None, recorded_before)
    archive = bench_archive.loadArchive(plans.RUNS_FILE)
    # the committed records: TinyRenderer's, MobileRobot's grid drawn by the sprites and Kuka's drawn by lowpoly
    assert {record["train"]["renderer"] for record in archive.values()} == {"tinyrenderer", "sprites", "lowpoly"}
    sprites = recorded.specSettings(dataclasses.replace(spec, train_args=[*spec.train_args, "--renderer",
                                                                            "sprites"]))
    assert sprites["renderer"] == "sprites"
    assert bench_archive.archiveKey(plan.env, "ground_truth", 0, run, None, sprites) != key
    # MobileRobot's default: its runs record the sprites by name, the key of --renderer sprites, not the archived
    # tinyrenderer records'
    default = recorded.specSettings(spec)
    assert default == sprites
    assert bench_archive.archiveKey(plan.env, "ground_truth", 0, run, None, default) != key
    reused = bench_archive.archivedMatches(archive, settings, plan, settings.specs(plan), {})
    assert reused and all(record["train"]["renderer"] == "sprites" for record in reused.values())
    # a later default of train's --renderer (here tinyrenderer): every planned run has another key, the records of the
    # sprites are not reused, those of tinyrenderer are
    original = sweep.trainParser.__wrapped__

    def changed(algo: str):
        parser = original(algo)
        parser.set_defaults(renderer="tinyrenderer")
        return parser

    monkeypatch.setattr(sweep, "trainParser", changed)
    assert bench_archive.archiveKey(plan.env, "ground_truth", 0, run, None, recorded.specSettings(spec)) == key
    later = bench_archive.archivedMatches(archive, settings, plan, settings.specs(plan), {})
    assert later and all(record["train"]["renderer"] == "tinyrenderer" for record in later.values())


def test_an_env_default_renderer_draws_the_benchmarks_runs_and_keys_them(monkeypatch) -> None:
    """An env's own default renderer (one line in its class: sprites on MobileRobot, lowpoly on the Kuka arms) draws
    the benchmark's datasets and runs of it without --renderer, keyed apart from the archived tinyrenderer records,
    which the default before (tinyrenderer) found; --renderer tinyrenderer finds those records again."""
    archive = bench_archive.loadArchive(plans.RUNS_FILE)

    def plansOf(settings: plans.Settings) -> tuple[env_plans.EnvPlan, env_plans.EnvPlan]:
        envs = [plan.env for plan in settings.plans]
        return tuple(settings.plans[envs.index(env)] for env in (MOBILE, env_plans.KUKA))

    def keys(settings: plans.Settings, plan: env_plans.EnvPlan) -> list[str]:
        run, srl = settings.runSettings(plan), settings.srlSettings(plan)
        return [bench_archive.archiveKey(plan.env, bench_runs.specObservation(spec), spec.seed, run,
                                         srl if bench_runs.specObservation(spec) in settings.learned else None,
                                         recorded.specSettings(spec), recorded.envPhysics(plan.env))
                for spec in settings.specs(plan)]

    def matches(settings: plans.Settings, plan: env_plans.EnvPlan) -> dict:
        return bench_archive.archivedMatches(archive, settings, plan, settings.specs(plan), {})

    with monkeypatch.context() as before:  # both defaults before: the reference, tinyrenderer
        before.setattr(MobileRobotGymEnv, "DEFAULT_RENDERER", REFERENCE_RENDERER)
        before.setattr(KukaButtonGymEnv, "DEFAULT_RENDERER", REFERENCE_RENDERER)
        reference = _settings(["--envs", "1"])  # the TinyRenderer runs had one env, ppo2's default then
        mobile, kuka = plansOf(reference)
        assert reference.drawnBy(MOBILE) == reference.drawnBy(env_plans.KUKA) == "tinyrenderer"
        tiny_keys = {plan.env: keys(reference, plan) for plan in (mobile, kuka)}
        # TinyRenderer's runs: MobileRobot's 3 seeds (5 for ground truth, srl_splits and its variant), Kuka's 5, but
        # raw pixels: made unclipped, they are not the runs of ppo2's raw-pixel default (clip_range_vf 0.2); but
        # curl's, made before curl trained on two views of each frame (dropped from the archive); and but those of
        # --augment shift, made with RAD's update (DrAC's is the default now)
        tiny_runs = {MOBILE: 45 + 3 * 2 - 3 - 3 - 3, env_plans.KUKA: 75 - 5 - 5 - 5}
        for plan in (mobile, kuka):
            found = matches(reference, plan)
            assert len(found) == tiny_runs[plan.env]
            assert all(record["train"]["renderer"] == "tinyrenderer" for record in found.values())

    assert (MobileRobotGymEnv.DEFAULT_RENDERER, KukaButtonGymEnv.DEFAULT_RENDERER) == ("sprites", "lowpoly")
    after = _settings([])
    mobile, kuka = plansOf(after)
    for plan, renderer in ((mobile, "sprites"), (kuka, "lowpoly")):
        assert after.drawnBy(plan.env) == renderer and after.configFile(plan.env).endswith(f"srl_models_{renderer}.yaml")
        assert all(recorded.specSettings(spec)["renderer"] == renderer for spec in after.specs(plan))
        assert "--renderer" not in after.prepareCommand(plan)  # prepare resolves it to the same default
        assert keys(after, plan) == keys(_settings(["--renderer", renderer]), plan)
        assert not set(keys(after, plan)) & set(tiny_keys[plan.env])
        assert all(record["train"]["renderer"] == renderer for record in matches(after, plan).values())
    assert (len(matches(after, mobile)), len(matches(after, kuka))) == (90, 75)  # ground truth's 20 seeds on Nav 2D
    explicit = _settings(["--envs", "1", "--renderer", "tinyrenderer"])
    for plan in plansOf(explicit):
        assert explicit.drawnBy(plan.env) == "tinyrenderer" and keys(explicit, plan) == tiny_keys[plan.env]
        assert len(matches(explicit, plan)) == tiny_runs[plan.env]


@pytest.mark.usefixtures("groundTruthAsOthers")
def test_a_run_made_with_other_train_settings_is_not_this_configurations(tmp_path, monkeypatch, capsys) -> None:
    """The pipeline finds a run folder by its run id, which names only the settings that differ from train's defaults:
    after a default changed, a finished run of the old default has the run id of the new one. Its args.json tells."""
    monkeypatch.chdir(tmp_path)
    settings = _settings(["--env", MOBILE, "--observations", "ground_truth", "--seeds", "2", "--runs-file",
                          str(tmp_path / "runs.json")])
    plan = settings.plans[0]
    first, second = settings.specs(plan)
    kept = writeRun(os.path.join(first.parent, f"26-11-20_10h00_00_{first.run_id}"), "ground_truth", 0,
                     CURVES["ground_truth"][0], spec=first)
    other = writeRun(os.path.join(second.parent, f"26-11-20_10h00_00_{second.run_id}"), "ground_truth", 1,
                      CURVES["ground_truth"][1], spec=second)
    with open(os.path.join(other, "args.json")) as handle:
        args = json.load(handle)
    with open(os.path.join(other, "args.json"), "w") as handle:  # made when train's default was 2 envs
        json.dump({**args, "num_cpu": 2, "device": "cpu", "img_shape": [3, 64, 64], "resolved_hyperparams": {}}, handle)
    assert recorded.otherSettings(recorded.specSettings(second), {**args, "img_shape": [3, 64, 64]}) == []
    assert [record.seed for record in bench_runs.finishedRuns([first, second])] == [0]
    assert f"skipping {other}: made with other train settings (num_cpu)" in capsys.readouterr().err
    calls = []
    monkeypatch.setattr(running, "runStage", lambda command, nice, cwd=plans.ROOT: calls.append(command) or 0)
    running.runEverything(settings)
    out = capsys.readouterr().out
    assert os.path.isdir(kept) and not os.path.exists(other) and "made with other train settings" in out
    assert "; 1 run to do;" in out and [command[1] for command in calls] == ["rl_baselines.pipeline"]


def test_the_state_scale_is_in_the_key_of_a_learned_run_only() -> None:
    """A learned state handed over scaled is another run than the same model's unscaled one; the setting changes
    nothing for ground truth, raw pixels or a run at ground truth's size, whose keys stay as the archive has them."""
    def digest(srl_model: str, scale: str, **other) -> str:
        args = {"algo": "ppo2", "env": MOBILE, "srl_model": srl_model, "seed": 0, "srl_state_scale": scale, **other}
        return bench_archive.settingsDigest(recorded.trainSettings(args))

    assert digest("vae", "participation") != digest("vae", "none")
    for observation in ("ground_truth", "raw_pixels"):
        assert digest(observation, "participation") == digest(observation, "none")
    assert (digest("srl_splits", "participation", srl_ground_truth_scale=True)
            == digest("srl_splits", "none", srl_ground_truth_scale=True))
    # an args.json of format 5 or earlier has no such setting: it reads as unscaled
    assert digest("vae", "none") == bench_archive.settingsDigest(recorded.trainSettings(
        {"algo": "ppo2", "env": MOBILE, "srl_model": "vae", "seed": 0}))


@pytest.mark.usefixtures("groundTruthAsOthers")
def test_a_run_continued_after_a_stop_is_marked_in_the_table_and_the_archive(tmp_path, monkeypatch) -> None:
    """A run whose train process took two attempts (stopped, then resumed from a checkpoint: done.json's attempts) is
    a valid continuation, not necessarily the seed's uninterrupted run: its row counts it and the line above the table
    names it, from the bench folder and from the archive alike."""
    archive = str(tmp_path / "runs.json")
    monkeypatch.chdir(tmp_path)
    settings = _settings(["--env", MOBILE, *SMALL])
    _finishedBench(settings, MOBILE)
    bench = os.path.join(settings.base, settings.bench_dir)
    plan = next(plan for plan in settings.reportPlans() if plan.env == MOBILE)
    spec = next(spec for spec in settings.specs(plan) if (spec.srl_model, int(spec.seed)) == ("raw_pixels", 1))
    marker = os.path.join(run_attempts.finishedFolder(spec), "done.json")
    with open(marker) as handle:
        done = json.load(handle)
    with open(marker, "w") as handle:
        json.dump({**done, "attempts": 2}, handle)
    doc = tmp_path / "srl.md"
    assert cli.main(["--env", MOBILE, *SMALL, "--report-only", "--runs-file", archive, "--doc", str(doc),
                     "--image-dir", str(tmp_path / "images")]) == 0
    text = doc.read_text()
    assert "| raw_pixels | 2/2 (1 continued) |" in text and "| ground_truth | 2/2 |" in text
    assert ("1 of these 6 runs was continued after a stop (raw_pixels seed 1): such a run is a valid continuation of "
            "its seed's run, not necessarily the run never interrupted") in text
    records = json.loads(open(archive).read())
    assert [(r["observation"], r["seed"]) for r in records.values() if r.get("continued")] == [("raw_pixels", 1)]
    shutil.rmtree(bench)  # a later session: the archive alone
    assert cli.main(["--env", MOBILE, *SMALL, "--report-only", "--runs-file", archive, "--doc", str(doc),
                     "--image-dir", str(tmp_path / "images")]) == 0
    text = doc.read_text()
    assert "| raw_pixels | 2/2 (2 archived, 1 continued) |" in text and "(raw_pixels seed 1)" in text
