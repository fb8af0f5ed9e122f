"""The SRL + RL benchmark's analysis (benchmarks.srl_rl) on synthetic run folders with fake evaluations.npz files:
tables, Welch's test, steps to the threshold, the area under the curve, the PNG, the marked docs block, partial
results, stale runs and the command line's refusals. Nothing is trained here: `python -m benchmarks.srl_rl --quick`
checks the real chain."""
from __future__ import annotations

import dataclasses
import json
import math
import os

import numpy as np
import pytest
from scipy import stats
from srl_rl_bench import CURVES, MOBILE, STEPS, writeModel, writeRun

from benchmarks.documents import replaceHeadingSection
from benchmarks.srl_rl import analysis, cli, env_plans, plans, running
from benchmarks.srl_rl import archive as bench_archive
from benchmarks.srl_rl import models as bench_models
from benchmarks.srl_rl import report as bench_report
from benchmarks.srl_rl import runs as bench_runs
from benchmarks.srl_table import SECTION as SRL_TABLE_SECTION
from replay.results import evaluationStepsToThreshold
from srl_toolbox.cli import UsageError


@pytest.fixture()
def runs(tmp_path) -> list[str]:
    """Synthetic finished runs of CURVES, plus a vae run without evaluations.npz."""
    folders = []
    for observation, curves in CURVES.items():
        for seed, curve in enumerate(curves):
            folders.append(writeRun(str(tmp_path / "runs" / f"{observation}_{seed}"), observation, seed, curve))
    folders.append(writeRun(str(tmp_path / "runs" / "vae_3"), "vae", 3, None))
    return folders


def test_curve_measures() -> None:
    steps, rewards = np.array([1000, 2000, 4000]), np.array([0.0, 10.0, 20.0])
    assert evaluationStepsToThreshold(steps, rewards, 10.0) == 2000  # the analysis' steps to the threshold
    # trapezoids: (0+10)/2*1000 + (10+20)/2*2000 = 35000 over 3000 steps
    assert analysis.normalisedArea(steps, rewards) == pytest.approx(35000 / 3000)
    assert analysis.normalisedArea(steps[:1], rewards[:1]) == 0.0
    assert math.isnan(analysis.normalisedArea(steps[:0], rewards[:0]))
    mean, error = analysis.meanStandardError([1.0, 2.0, 6.0])
    assert mean == pytest.approx(3.0) and error == pytest.approx(np.std([1, 2, 6], ddof=1) / math.sqrt(3))
    assert math.isnan(analysis.meanStandardError([4.0])[1])
    assert math.isnan(analysis.welchPValue([1.0], [1.0, 2.0]))


def test_loadRun_reads_the_evaluations(runs) -> None:
    record = bench_runs.loadRun(runs[0])
    assert (record.env, record.observation, record.seed, record.steps) == (MOBILE, "ground_truth", 0, 4000)
    np.testing.assert_array_equal(record.eval_steps, STEPS)
    np.testing.assert_allclose(record.eval_rewards, CURVES["ground_truth"][0])  # the mean of each row of results
    assert record.rate == pytest.approx(4000 / 40.0) and record.wall == 50.0
    without = bench_runs.loadRun(runs[-1])
    assert without.eval_steps.size == 0 and without.eval_rewards.size == 0


def test_a_run_continued_after_a_stop_has_a_wall_time_and_no_rate(tmp_path) -> None:
    folder = writeRun(str(tmp_path / "run"), "ground_truth", 0, CURVES["ground_truth"][0])
    with open(os.path.join(folder, "done.json"), "w") as handle:  # the pipeline's marker of a second attempt
        json.dump({"wall_time_s": 80.0, "attempts": 2}, handle)
    record = bench_runs.loadRun(folder)
    assert math.isnan(record.rate) and record.wall == 80.0  # its monitor clock counts the time between attempts


def test_summary_threshold_welch_and_missing_rows(runs) -> None:
    records = [bench_runs.loadRun(folder) for folder in runs]
    observations = ["ground_truth", "raw_pixels", "vae", "autoencoder", "robotic_priors"]
    rows, threshold = analysis.summariseEnv(records, observations, 3, {"robotic_priors": "not prepared"})
    by_name = {row.observation: row for row in rows}
    gt_finals = [curve[-1] for curve in CURVES["ground_truth"]]
    assert threshold == pytest.approx(plans.THRESHOLD_FRACTION * np.mean(gt_finals))  # 0.9 x 230 = 207
    assert by_name["ground_truth"].final[0] == pytest.approx(230.0)
    assert by_name["ground_truth"].final[1] == pytest.approx(stats.sem(gt_finals))
    # first evaluation at or above 207: ground truth at 3000 for all; vae at 3000 for seed 1 only
    assert by_name["ground_truth"].reach == [3000, 3000, 3000]
    assert by_name["vae"].reach == [4000, 3000, 4000] and analysis.medianReach(by_name["vae"]) == 4000
    assert by_name["raw_pixels"].reach == [None, None, None] and analysis.medianReach(by_name["raw_pixels"]) is None
    pixel_finals = [curve[-1] for curve in CURVES["raw_pixels"]]
    expected_p = stats.ttest_ind([curve[-1] for curve in CURVES["vae"]], pixel_finals, equal_var=False).pvalue
    assert by_name["vae"].p_value == pytest.approx(expected_p)
    assert math.isnan(by_name["raw_pixels"].p_value)
    assert by_name["vae"].area[0] == pytest.approx(np.mean([analysis.normalisedArea(STEPS, np.asarray(c, float))
                                                            for c in CURVES["vae"]]))
    assert "without evaluations.npz" in by_name["vae"].note  # the 4th vae run
    assert len(by_name["autoencoder"].runs) == 2 and by_name["robotic_priors"].runs == []

    table = analysis.envTable(MOBILE, rows, threshold, {"vae": {"gtc": 0.42, "state_dim": 8, "hash": "h"}})
    lines = {line.split(" | ")[0][2:]: line for line in table.splitlines()[2:]}
    assert "| 3/3 | 230.0 +/- " in lines["ground_truth"] and "3,000 (3/3)" in lines["ground_truth"]
    assert "not reached (0/3)" in lines["raw_pixels"] and "baseline" in lines["raw_pixels"]
    assert "0.420 (8)" in lines["vae"] and f"{expected_p:.3g}" in lines["vae"]
    assert "| 2/3 |" in lines["autoencoder"] and "not prepared" in lines["autoencoder"]
    assert "missing: not prepared" in lines["robotic_priors"] and "6.2 +/- 3.1" in lines["robotic_priors"]
    # the paper's raw pixels reach 231.5 / 234.4 = 99% of their ground truth, ours 106.7 / 230 = 46%
    assert "lower here: 46% vs 99% of ground truth" in lines["raw_pixels"]
    assert "not in the paper" in lines["vae"]

    sentences = " ".join(analysis.verdicts(rows, threshold, ["vae", "autoencoder", "robotic_priors"]))
    assert f"or above ({230 - stats.sem(gt_finals):.2f}): none." in sentences  # the vae's 226.7 is below
    assert "raw pixels never reached it): vae." in sentences
    assert "(Welch): vae (better), autoencoder (worse)." in sentences
    # one ground-truth seed has no standard error: the sentence does not speak of one
    alone = [analysis.ObservationSummary("ground_truth", [None], 1, [230.0], (230.0, math.nan), (0.0, 0.0)),
             analysis.ObservationSummary("vae", [None], 1, [231.0], (231.0, math.nan), (0.0, 0.0))]
    assert analysis.verdicts(alone, None, ["vae"]) == [
        "Learned representations whose mean final reward is at or above ground truth's (one seed: no standard error) "
        "(230.00): vae."]


def test_agreement_with_the_paper() -> None:
    reference = analysis.ObservationSummary("ground_truth", [None], 3, [234.4], (234.4, 1.3), (0.0, 0.0))
    row = analysis.ObservationSummary("srl_splits", [None], 3, [230.0], (230.0, 3.0), (0.0, 0.0))
    assert analysis.anchorComparison(row, MOBILE, reference) == ("232.1 +/- 2.2", "agrees: 98% vs 99% of ground truth")
    row = analysis.ObservationSummary("srl_splits", [None], 3, [150.0], (150.0, 3.0), (0.0, 0.0))
    assert analysis.anchorComparison(row, MOBILE, reference)[1].startswith("lower here: 64% vs 99%")
    assert analysis.anchorComparison(row, MOBILE, None) == ("232.1 +/- 2.2", "n/a")


def test_marked_block_is_replaced_and_the_rest_kept(tmp_path) -> None:
    doc = tmp_path / "srl.md"
    doc.write_text("# SRL\n\n## Results\n\nintro\n")
    bench_report.writeMarked(str(doc), "first")
    text = doc.read_text()
    assert text == (f"# SRL\n\n## Results\n\nintro\n\n{plans.SECTION_TITLE}\n\n{plans.START_MARKER}\nfirst\n"
                    f"{plans.END_MARKER}\n")
    doc.write_text(text + "\n## Later section\n\nkept\n")
    bench_report.writeMarked(str(doc), "second")
    text = doc.read_text()
    assert "first" not in text and "second" in text and text.count(plans.START_MARKER) == 1
    assert text.startswith("# SRL\n\n## Results\n\nintro\n") and text.endswith("## Later section\n\nkept\n")
    # benchmarks/srl_table.py replaces the section before it up to the next level-2 heading: the markers survive
    text = replaceHeadingSection(text.replace("## Results", SRL_TABLE_SECTION), SRL_TABLE_SECTION,
                                 SRL_TABLE_SECTION + "\n\nnew\n")
    assert text.count(plans.START_MARKER) == 1 and "\nnew\n" in bench_report.replaceMarked(text, "third")
    assert bench_report.replaceMarked(text, "third").count(plans.SECTION_TITLE) == 1
    fresh = tmp_path / "new.md"
    bench_report.writeMarked(str(fresh), "block")
    assert fresh.read_text() == f"{plans.SECTION_TITLE}\n\n{plans.START_MARKER}\nblock\n{plans.END_MARKER}\n"
    assert sorted(os.listdir(tmp_path)) == ["new.md", "srl.md"]  # no temporary file left


def test_report_writes_the_section_and_the_figure_from_partial_results(runs, tmp_path, monkeypatch) -> None:
    bench = tmp_path / "bench"
    models = {"vae": writeModel(str(bench / "srl" / "vae_model"), "vae", 0.42),
              "autoencoder": writeModel(str(bench / "srl" / "ae_model"), "autoencoder", 0.40)}
    observations = ["ground_truth", "raw_pixels", "vae", "autoencoder", "robotic_priors"]
    plan = env_plans.PLANS[MOBILE]
    settings = plans.Settings([plan], observations, ["vae", "autoencoder", "robotic_priors"], 3,
                               bench_dir=str(bench))
    # registered where prepare registers them: the config file of the renderer that draws MobileRobot (its default)
    with open(os.path.join(settings.base, settings.configFile(MOBILE)), "w") as handle:
        handle.write(f"{MOBILE}:\n" + "".join(f"  {name}: srl/{os.path.basename(folder)}\n"
                                               for name, folder in models.items()))
    # the grid asks for 5 x 3 runs; 11 of them finished (2 autoencoder seeds, none of robotic_priors, 4 vae runs of
    # which one without evaluations)
    monkeypatch.setattr(plans.Settings, "specs", lambda self, env_plan: [object()] * 15)
    monkeypatch.setattr(bench_archive, "finishedRuns", lambda specs: bench_runs.loadRuns(runs))
    appended = []
    monkeypatch.setattr(bench_report, "appendReport", lambda *args, **kwargs: appended.append(args))
    doc, images = tmp_path / "srl.md", tmp_path / "images"
    doc.write_text("# SRL\n")
    code = bench_report.report(settings, "python -m benchmarks.srl_rl", "a machine", str(doc), str(images), append=True)
    assert code == 1 and appended == []  # runs are missing: no speed table yet
    text = doc.read_text()
    assert text.startswith("# SRL\n") and plans.SECTION_TITLE in text
    assert "0.420 (8)" in text and "0.400 (8)" in text and "missing: not prepared" in text
    assert f"threshold {0.9 * 230:.2f}" in text and "![ppo2 learning curves on" in text
    assert "images/srl_rl_MobileRobotGymEnv-v0.png" in text
    png = images / f"srl_rl_{MOBILE}.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    # over the tasks: the IQM table and the summary figure; the metric correlation over the 2 models with runs
    assert "### Over the tasks" in text and "| ground_truth | 1/1 | 3 | 1.00 [" in text
    assert f"images/{plans.SUMMARY_IMAGE}" in text and (images / plans.SUMMARY_IMAGE).stat().st_size > 10_000
    assert f"| {MOBILE} | GTC | 2 | n/a (fewer than 3 models, or no spread) |" in text

    # every run there: the speed table is appended, one row per observation with runs
    monkeypatch.setattr(plans.Settings, "specs", lambda self, env_plan: [object()] * len(runs))
    assert bench_report.report(settings, "cmd", "a machine", None, str(images), append=True) == 0
    (title, command, notes, table), = appended
    assert command == "cmd" and "Wall time of the whole benchmark" in notes
    assert f"Run time of the runs shown, from their own records: {MOBILE} {len(runs)} runs" in notes
    assert table.count(f"| {MOBILE} |") == 4 and "| vae | 4 | 4,000 | 100 | 0.8 min | a machine |" in table


def test_run_time_counts_archived_runs_by_their_own_walls() -> None:
    def record(wall: float, machine: str = "", archived: bool = False) -> bench_runs.RunRecord:
        return bench_runs.RunRecord(None, np.array([]), np.array([]), wall=wall, archived=archived, machine=machine)

    records = {"A-v0": [record(3000.0, "AMD EPYC, nproc 2", True), record(1800.0, "AMD EPYC, nproc 2", True)],
               "B-v0": [record(600.0), record(math.nan)], "C-v0": [record(math.nan)]}
    note = bench_report.runTimeNote(records, 2, "Intel Xeon, nproc 2")
    assert note == ("A-v0 2 runs, 1 h 20 min of train commands (about 40 min with 2 runs at a time, AMD EPYC); "
                    "B-v0 1 run, 10 min of train commands (Intel Xeon)")  # one run: no "at a time"
    assert bench_report.runTimeNote({"B-v0": [record(600.0), record(300.0)]}, 1, "") == (
        "B-v0 2 runs, 15 min of train commands")
    assert bench_report.runTimeNote({"C-v0": [record(math.nan)]}, 2, "here") == ""


def test_speed_rows_follow_the_observations_order() -> None:
    def record(env: str, observation: str) -> bench_runs.RunRecord:
        run = type("Run", (), {"args": {"env": env, "srl_model": observation, "num_timesteps": 100}})()
        return bench_runs.RunRecord(run, np.array([100]), np.array([1.0]), rate=10.0, wall=20.0)

    records = [record("B-v0", "srl_splits"), record("B-v0", "mine"), record("A-v0", "vae"), record("B-v0", "vae"),
               record("B-v0", "ground_truth"), record("B-v0", "srl_splits")]
    rows = bench_report.speedRows(records, "Intel Xeon, nproc 2")
    assert [(row["env"], row["observation"], row["runs"]) for row in rows] == [
        ("B-v0", "ground_truth", 1), ("B-v0", "vae", 1), ("B-v0", "srl_splits", 2), ("B-v0", "mine", 1),
        ("A-v0", "vae", 1)]


def test_figure_panels_group_the_learned_models() -> None:
    assert analysis.panelGroups(plans.OBSERVATIONS) == [list(panel) for panel in analysis.PANELS]
    assert analysis.panelGroups(["ground_truth", "raw_pixels", "vae", "mine"]) == [["vae"], ["mine"]]
    assert analysis.panelGroups(["ground_truth", "raw_pixels"]) == [[]]


def test_stale_runs_are_dropped(tmp_path) -> None:
    kept = writeRun(str(tmp_path / "kept"), "vae", 0, [1, 2, 3, 4])
    stale = writeRun(str(tmp_path / "stale"), "vae", 1, [1, 2, 3, 4])
    other = writeRun(str(tmp_path / "pixels"), "raw_pixels", 0, [1, 2, 3, 4])
    for folder, digest in ((kept, "new"), (stale, "old")):
        with open(os.path.join(folder, "srl_model.json"), "w") as handle:
            json.dump({"name": "vae", "hash": digest}, handle)
    assert bench_models.dropStaleRuns([kept, stale, other], {"vae": {"hash": "new"}}) == [stale]
    assert os.path.isdir(kept) and not os.path.exists(stale) and os.path.isdir(other)


def test_commands_keep_every_model_on_one_dataset_and_the_config_in_the_bench_folder() -> None:
    kuka = env_plans.PLANS[env_plans.KUKA]
    settings = plans.Settings([kuka], ["ground_truth", "raw_pixels", "vae", "pca"], ["vae", "pca"], 3,
                               bench_dir=os.path.join("logs", "b"), prepare_extra=["--state-dim", "16"])
    prepare = settings.prepareCommand(kuka)
    assert prepare[:2] == ["-m", "srl_models.prepare"] and prepare.count("--env") == 1
    assert prepare[prepare.index("--srl-model") + 1:prepare.index("--srl-model") + 3] == ["vae", "pca"]
    assert "--random-target" in prepare and prepare[prepare.index("--state-dim") + 1] == "16"
    # the arms' datasets are drawn by lowpoly (their default): its models have a config file of their own
    assert prepare[prepare.index("--srl-config-file") + 1] == os.path.join("logs", "b", "srl_models_lowpoly.yaml")
    pipeline = settings.pipelineCommand(kuka)
    assert pipeline[:2] == ["-m", "rl_baselines.pipeline"] and "--random-target" in pipeline
    # the arm moves as in its dataset (the generator records it with force_down): a train flag, not a prepare one
    assert "--force-down" in pipeline and "--force-down" not in prepare
    assert "--force-down" in bench_archive.archiveKey(env_plans.KUKA, "vae", 0, settings.runSettings(kuka), None, {})
    assert pipeline[pipeline.index("--num-iteration") + 1] == "3"
    assert pipeline[pipeline.index("--eval-freq") + 1] == str(kuka.eval_freq)
    assert pipeline[pipeline.index("--srl-config-file") + 1] == os.path.join("logs", "b", "srl_models_lowpoly.yaml")
    assert plans.shown(pipeline, 10).startswith("nice -n 10 python -m rl_baselines.pipeline --algo ppo2")
    assert "--data-folder" not in prepare  # prepare's own data folder: other prepare commands reuse the dataset
    quick = cli.settingsFrom(cli.buildParser().parse_args(["--quick", "--bench-dir", os.path.join("logs", "q")]))
    assert quick.observations == list(plans.QUICK_OBSERVATIONS) and quick.seeds == 2 and quick.learned == ["vae"]
    prepare = quick.prepareCommand(quick.plans[0])
    assert prepare[prepare.index("--data-folder") + 1] == os.path.join("logs", "q", "data")


@pytest.mark.parametrize("argv, message", [
    (["--budget", "Nope-v0=100"], "unknown env 'Nope-v0'"),
    (["--budget", f"{MOBILE}=-5"], "is not a positive number of steps"),
    (["--observations", "pixels"], "invalid choice: 'pixels'"),
    (["--seeds", "0"], "must be a positive integer"),
    (["--eval-freq", "5000", "--budget", f"{MOBILE}=1000"], "--eval-freq 5000 is more than the 1000 steps"),
    (["--budget", f"{MOBILE}=12000"], "the 12000 steps of a MobileRobotGymEnv-v0 run are not a multiple of --eval-freq "
     "5000: its last evaluation, the final reward, would be at step 10000; valid budgets: 10000, 15000"),
    (["--state-dim", "100000000"], r"--state-dim: '100000000' is out of range \(1..4096\)"),
    # an empty path meant the committed archive, docs/srl.md or docs/images
    (["--runs-file", ""], "argument --runs-file: '' is empty"),
    (["--image-dir", " "], "argument --image-dir: ' ' is empty"),
    # prepare's own refusal, made before the bench folder (and named with this command's flags)
    (["--quick", "--observations", "pca", "--state-dim", "4000"],
     "--state-dim 4000: PCA cannot find more components than training images, and --srl-episodes 2 give"),
])
def test_bad_inputs_are_refused_before_anything_is_written(tmp_path, argv, message) -> None:
    bench = tmp_path / "bench"
    with pytest.raises(UsageError, match=message):
        cli.main([*argv, "--bench-dir", str(bench), "--env", MOBILE])
    assert not bench.exists()


@pytest.mark.parametrize("argv, processes", [(["--quick", "--srl-episodes", "1", "--workers", "2"], "1"),
                                             (["--workers", "50"], "20"), (["--workers", "3"], "3")])
def test_prepare_records_with_no_more_processes_than_episodes(argv, processes) -> None:
    """prepare refuses more recording processes than episodes: --workers is capped at the episodes recorded (MOBILE's
    default is 20)."""
    settings = cli.settingsFrom(cli.buildParser().parse_args([*argv, "--env", MOBILE]))
    prepare = settings.prepareCommand(settings.plans[0])
    assert prepare[prepare.index("--num-cpu") + 1] == processes


def test_report_only_without_finished_runs_writes_nothing(tmp_path, capsys) -> None:
    doc, images = tmp_path / "srl.md", tmp_path / "images"
    doc.write_text("# SRL\n")
    code = cli.main(["--report-only", "--env", MOBILE, "--bench-dir", str(tmp_path / "bench"), "--doc", str(doc),
                        "--image-dir", str(images), "--runs-file", str(tmp_path / "runs.json")])
    assert code == 1 and "nothing written" in capsys.readouterr().out
    assert doc.read_text() == "# SRL\n" and not images.exists() and not (tmp_path / "bench").exists()
    assert not (tmp_path / "runs.json").exists()


@pytest.mark.usefixtures("groundTruthAsOthers")
def test_the_time_estimate_reads_the_measured_runs_whole_commands() -> None:
    settings = cli.settingsFrom(cli.buildParser().parse_args(["--env", MOBILE]))
    plan = settings.plans[0]
    guess = running.expectedRunSeconds(plan, "vae", {})
    # nothing measured: the kind's expected rate, the evaluations counted at full length on top of the training
    rate = env_plans.EXPECTED_RATE[MOBILE]["learned"]
    evaluation = (plan.steps // plan.eval_freq) * plan.eval_episodes * plan.episode_length
    assert guess == pytest.approx(env_plans.EXPECTED_START_S + plan.steps / rate + evaluation / (1.25 * rate))
    # a measured observation: the mean of its runs' whole train commands (their evaluations are in them already)
    measured = {(MOBILE, "vae"): 120.0, (MOBILE, "pca"): 80.0, (MOBILE, "raw_pixels"): 500.0,
                ("KukaButtonGymEnv-v0", "atc"): 900.0}
    assert running.expectedRunSeconds(plan, "vae", measured) == 120.0
    # one not measured yet: the mean of the env's measured observations of its kind (not another env's)
    assert running.expectedRunSeconds(plan, "atc", measured) == pytest.approx(100.0)
    assert running.expectedRunSeconds(plan, plans.RAW_PIXELS_SHIFT, measured) == 500.0
    # measured on another env beside its kind: its ratio to the kind there carries over (DrAC's slower updates)
    kuka = "KukaButtonGymEnv-v0"
    other = {**measured, (kuka, "raw_pixels"): 600.0, (kuka, plans.RAW_PIXELS_SHIFT): 900.0}
    assert running.expectedRunSeconds(plan, plans.RAW_PIXELS_SHIFT, other) == pytest.approx(500.0 * 900.0 / 600.0)
    assert running.expectedRunSeconds(plan, "atc", other) == pytest.approx(100.0)  # 900 s on Kuka, no learned row there
    # the env's own two are measured (from the archive) even when only a variant is benchmarked: its first runs on
    # an env are estimated from raw pixels' there
    alone = cli.settingsFrom(cli.buildParser().parse_args(["--observations", plans.RAW_PIXELS_SHIFT]))
    archived = running.measuredSeconds(alone, bench_archive.loadArchive(plans.RUNS_FILE))
    assert {(plan.env, name) for plan in alone.plans for name in ("ground_truth", "raw_pixels")} <= set(archived)
    assert {name for _, name in archived} == {"ground_truth", "raw_pixels", plans.RAW_PIXELS_SHIFT}
    assert running.expectedRunSeconds(plan, "ground_truth", measured) == running.expectedRunSeconds(
        plan, "ground_truth", {})
    # the whole estimate: the missing runs' seconds over the workers
    whole = running.estimateSeconds(settings, plan, measured, from_scratch=True)
    runs = sum(settings.seeds * running.expectedRunSeconds(plan, name, measured) for name in settings.observations)
    stages = len(settings.gridCommands(plan)) * env_plans.EXPECTED_STAGE_START_S  # each pipeline command's own start
    prepare = len(settings.models) * env_plans.EXPECTED_PREPARE_S
    assert whole == pytest.approx(prepare + stages + runs / settings.workers)


def test_the_time_estimate_of_an_env_without_a_plan_counts_its_robot_and_the_start_ups() -> None:
    line = "MobileRobotLineTargetGymEnv-v0"
    settings = cli.settingsFrom(cli.buildParser().parse_args(
        ["--env", line, "--observations", "ground_truth", "raw_pixels", "--seeds", "2", "--budget", f"{line}=1000",
         "--eval-freq", "500", "--eval-episodes", "1"]))
    plan = settings.plans[0]
    mobile = dataclasses.replace(plan, env=MOBILE)
    # the mobile robot's rates (its class descends from MobileRobotGymEnv), not a flat guess
    for name in ("ground_truth", "raw_pixels", "vae"):
        assert running.expectedRunSeconds(plan, name, {}) == running.expectedRunSeconds(mobile, name, {})
    assert env_plans.expectedRate(line, "raw_pixels") == env_plans.EXPECTED_RATE[MOBILE]["raw_pixels"]
    # an env of no planned robot: the slowest planned rate of the kind
    assert env_plans.expectedRate("CarRacingGymEnv-v0", "raw_pixels") == min(
        rates["raw_pixels"] for rates in env_plans.EXPECTED_RATE.values())
    # 4 short runs, 2 at a time: each run's start-up and the pipeline command's start counted (measured: 34-67 s a
    # run, 1 min or more in all on a loaded machine)
    guess = running.estimateSeconds(settings, plan, {}, from_scratch=True)
    assert guess >= 30.0
    assert running.expectedRunSeconds(plan, "raw_pixels", {}) > running.expectedRunSeconds(plan, "ground_truth", {})
    # one run, 2 workers: its whole wall (it said half of it: "24 s" for a 56 s run); 2 runs of unequal lengths: the
    # longer one's at least
    alone = dataclasses.replace(settings, observations=["raw_pixels"], seeds=1)
    stages = len(alone.gridCommands(plan)) * env_plans.EXPECTED_STAGE_START_S
    assert running.estimateSeconds(alone, plan, {}, from_scratch=True) == pytest.approx(
        stages + running.expectedRunSeconds(plan, "raw_pixels", {}))
    pair = dataclasses.replace(alone, observations=["ground_truth", "raw_pixels"])
    stages = len(pair.gridCommands(plan)) * env_plans.EXPECTED_STAGE_START_S
    assert running.estimateSeconds(pair, plan, {}, from_scratch=True) == pytest.approx(
        stages + running.expectedRunSeconds(plan, "raw_pixels", {}))
