"""The SRL + RL benchmark's analysis (benchmarks.srl_rl) on synthetic run folders with fake evaluations.npz files:
tables, Welch's test, steps to the threshold, the area under the curve, the PNG, the marked docs block, partial
results, stale runs and the command line's refusals. Nothing is trained here: `python -m benchmarks.srl_rl --quick`
checks the real chain."""
from __future__ import annotations

import json
import math
import os
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from benchmarks.documents import replaceHeadingSection
from benchmarks.srl_rl import analysis, cli, plans, running
from benchmarks.srl_rl import archive as bench_archive
from benchmarks.srl_rl import models as bench_models
from benchmarks.srl_rl import report as bench_report
from benchmarks.srl_rl import runs as bench_runs
from benchmarks.srl_table import SECTION as SRL_TABLE_SECTION
from replay.results import evaluationStepsToThreshold
from rl_baselines.sweeps import pipeline, sweep
from rl_baselines.sweeps.sweep import expandGrid
from srl_toolbox.cli import UsageError

MOBILE = plans.MOBILE
STEPS = np.array([1000, 2000, 3000, 4000])
# observation -> per seed, the mean evaluation reward at each of STEPS
CURVES = {
    "ground_truth": [[50, 180, 220, 230], [60, 190, 225, 232], [40, 170, 215, 228]],
    "raw_pixels": [[0, 20, 60, 100], [5, 30, 90, 140], [0, 10, 40, 80]],
    "vae": [[10, 100, 200, 226], [20, 150, 210, 229], [0, 80, 190, 225]],
    "autoencoder": [[0, 10, 20, 30], [0, 5, 10, 15]],  # one seed missing
}


def _writeRun(folder: str, observation: str, seed: int, curve: list[float] | None, env: str = MOBILE,
              finished_at: str | None = None, spec: object | None = None) -> str:
    """A finished run folder: args.json (the train settings of ``spec`` when given), a monitor CSV, done.json (with
    ``finished_at`` when given) and (unless ``curve`` is None) evaluations.npz whose episodes average to ``curve`` (3
    episodes per evaluation, spread around the mean)."""
    os.makedirs(os.path.join(folder, "monitor"))
    args = {"env": env, "srl_model": observation, "algo": "ppo2", "seed": seed, "num_timesteps": 4000}
    with open(os.path.join(folder, "args.json"), "w") as handle:
        json.dump(bench_runs.specSettings(spec) if spec is not None else args, handle)
    with open(os.path.join(folder, "monitor", "0.monitor.csv"), "w") as handle:
        handle.write('#{"t_start": 0}\nr,l,t\n' + "".join(f"{r},1000,{10.0 * (i + 1)}\n"
                                                         for i, r in enumerate(curve or [0, 0, 0, 0])))
    with open(os.path.join(folder, "done.json"), "w") as handle:
        json.dump({"wall_time_s": 50.0, **({"finished_at": finished_at} if finished_at else {})}, handle)
    if curve is not None:
        means = np.asarray(curve, dtype=np.float64)
        results = np.stack([means - 1.0, means, means + 1.0], axis=1)
        np.savez(os.path.join(folder, "evaluations.npz"), timesteps=STEPS, results=results,
                 ep_lengths=np.full(results.shape, 250))
    return folder


@pytest.fixture()
def runs(tmp_path) -> list[str]:
    """Synthetic finished runs of CURVES, plus a vae run without evaluations.npz."""
    folders = []
    for observation, curves in CURVES.items():
        for seed, curve in enumerate(curves):
            folders.append(_writeRun(str(tmp_path / "runs" / f"{observation}_{seed}"), observation, seed, curve))
    folders.append(_writeRun(str(tmp_path / "runs" / "vae_3"), "vae", 3, None))
    return folders


def _model(folder: str, name: str, gtc: float, state_dim: int = 8, env: str = MOBILE) -> str:
    """A fake prepared model folder (exp_config.json, gt_correlation.json); its hash follows ``state_dim``."""
    os.makedirs(folder)
    with open(os.path.join(folder, "exp_config.json"), "w") as handle:
        json.dump({"srl_model": name, "state_dim": state_dim, "env": env, "img_shape": [3, 64, 64], "weights": []},
                  handle)
    with open(os.path.join(folder, "gt_correlation.json"), "w") as handle:
        json.dump({"mean": gtc, "per_dimension": [gtc, gtc]}, handle)
    return folder


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
    models = {"vae": _model(str(bench / "srl" / "vae_model"), "vae", 0.42),
              "autoencoder": _model(str(bench / "srl" / "ae_model"), "autoencoder", 0.40)}
    with open(bench / "srl_models.yaml", "w") as handle:
        handle.write(f"{MOBILE}:\n" + "".join(f"  {name}: srl/{os.path.basename(folder)}\n"
                                               for name, folder in models.items()))
    observations = ["ground_truth", "raw_pixels", "vae", "autoencoder", "robotic_priors"]
    plan = plans.PLANS[MOBILE]
    settings = plans.Settings([plan], observations, ["vae", "autoencoder", "robotic_priors"], 3,
                               bench_dir=str(bench))
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
                    "B-v0 1 run, 10 min of train commands (about 5 min with 2 runs at a time, Intel Xeon)")
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
    kept = _writeRun(str(tmp_path / "kept"), "vae", 0, [1, 2, 3, 4])
    stale = _writeRun(str(tmp_path / "stale"), "vae", 1, [1, 2, 3, 4])
    other = _writeRun(str(tmp_path / "pixels"), "raw_pixels", 0, [1, 2, 3, 4])
    for folder, digest in ((kept, "new"), (stale, "old")):
        with open(os.path.join(folder, "srl_model.json"), "w") as handle:
            json.dump({"name": "vae", "hash": digest}, handle)
    assert bench_models.dropStaleRuns([kept, stale, other], {"vae": {"hash": "new"}}) == [stale]
    assert os.path.isdir(kept) and not os.path.exists(stale) and os.path.isdir(other)


def test_commands_keep_every_model_on_one_dataset_and_the_config_in_the_bench_folder() -> None:
    kuka = plans.PLANS[plans.KUKA]
    settings = plans.Settings([kuka], ["ground_truth", "raw_pixels", "vae", "pca"], ["vae", "pca"], 3,
                               bench_dir=os.path.join("logs", "b"), prepare_extra=["--state-dim", "16"])
    prepare = settings.prepareCommand(kuka)
    assert prepare[:2] == ["-m", "srl_models.prepare"] and prepare.count("--env") == 1
    assert prepare[prepare.index("--srl-model") + 1:prepare.index("--srl-model") + 3] == ["vae", "pca"]
    assert "--random-target" in prepare and prepare[prepare.index("--state-dim") + 1] == "16"
    assert prepare[prepare.index("--srl-config-file") + 1] == os.path.join("logs", "b", "srl_models.yaml")
    pipeline = settings.pipelineCommand(kuka)
    assert pipeline[:2] == ["-m", "rl_baselines.pipeline"] and "--random-target" in pipeline
    # the arm moves as in its dataset (the generator records it with force_down): a train flag, not a prepare one
    assert "--force-down" in pipeline and "--force-down" not in prepare
    assert "--force-down" in bench_archive.archiveKey(plans.KUKA, "vae", 0, settings.runSettings(kuka), None, {})
    assert pipeline[pipeline.index("--num-iteration") + 1] == "3"
    assert pipeline[pipeline.index("--eval-freq") + 1] == str(kuka.eval_freq)
    assert pipeline[pipeline.index("--srl-config-file") + 1] == os.path.join("logs", "b", "srl_models.yaml")
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
])
def test_bad_inputs_are_refused_before_anything_is_written(tmp_path, argv, message) -> None:
    bench = tmp_path / "bench"
    with pytest.raises(UsageError, match=message):
        cli.main([*argv, "--bench-dir", str(bench), "--env", MOBILE])
    assert not bench.exists()


def test_report_only_without_finished_runs_writes_nothing(tmp_path, capsys) -> None:
    doc, images = tmp_path / "srl.md", tmp_path / "images"
    doc.write_text("# SRL\n")
    code = cli.main(["--report-only", "--env", MOBILE, "--bench-dir", str(tmp_path / "bench"), "--doc", str(doc),
                        "--image-dir", str(images), "--runs-file", str(tmp_path / "runs.json")])
    assert code == 1 and "nothing written" in capsys.readouterr().out
    assert doc.read_text() == "# SRL\n" and not images.exists() and not (tmp_path / "bench").exists()
    assert not (tmp_path / "runs.json").exists()


# --- the archive of finished runs (benchmarks/srl_rl_runs.json) -----------------------------------------------------

SMALL = ["--observations", "ground_truth", "raw_pixels", "vae", "--seeds", "2"]


def _settings(argv: list[str]) -> plans.Settings:
    """The settings main builds from ``argv`` (relative paths from the current directory)."""
    return cli.settingsFrom(cli.buildParser().parse_args(argv))


def _finishedBench(settings: plans.Settings, env: str, state_dim: int = 8,
                   finished_at: str = "2026-11-20T10:00:00") -> str:
    """Every run of the env's grid finished in the settings' bench folder (curves of CURVES), and the vae model they
    used registered there; returns the model's hash."""
    bench = os.path.join(settings.base, settings.bench_dir)
    folder = _model(os.path.join(bench, "srl", f"vae_{env}"), "vae", 0.42, state_dim, env)
    with open(os.path.join(folder, "knn_mse.json"), "w") as handle:
        json.dump({"knn_mse": 0.125}, handle)
    with open(os.path.join(bench, "srl_models.yaml"), "w") as handle:
        handle.write(f"{env}:\n  vae: srl/vae_{env}\n")
    digest = bench_models.modelFacts(folder)["hash"]
    plan = next(plan for plan in settings.reportPlans() if plan.env == env)
    for spec in settings.specs(plan):
        run = _writeRun(os.path.join(spec.parent, f"26-11-20_10h00_00_{spec.run_id}"), spec.srl_model, spec.seed,
                        CURVES[spec.srl_model][spec.seed], env, finished_at, spec)
        if spec.srl_model == "vae":
            with open(os.path.join(run, "srl_model.json"), "w") as handle:
                json.dump({"name": "vae", "hash": digest, "state_dim": state_dim}, handle)
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
    assert vae["train"]["num_cpu"] == 1 and vae["train"]["num_timesteps"] == 50_000
    assert not set(vae["train"]) & bench_runs.NOT_A_RESULT and "hp_gamma" not in vae["train"]
    pixels = next(r for r in records.values() if (r["observation"], r["seed"]) == ("raw_pixels", 0))
    assert pixels["srl"] is None and pixels["model"] is None  # its runs do not depend on the SRL settings
    # the same runs seen again (another machine, another observation set): the file is left as it is
    os.chdir(tmp_path / "first")
    capsys.readouterr()
    assert cli.main(["--env", MOBILE, "--observations", "ground_truth", "vae", "--seeds", "2", "--report-only",
                        "--no-doc", "--runs-file", archive]) == 0
    assert open(archive).read() == text and "Archived" not in capsys.readouterr().out


def test_report_covers_the_archived_env_beside_the_one_run(archived_mobile, tmp_path, capsys) -> None:
    archive, _ = archived_mobile
    _finishedBench(_settings(["--env", plans.KUKA, *SMALL]), plans.KUKA, finished_at="2026-11-22T08:00:00")
    doc, images = tmp_path / "srl.md", tmp_path / "images"
    doc.write_text("# SRL\n")
    code = cli.main(["--env", plans.KUKA, *SMALL, "--report-only", "--runs-file", archive, "--doc", str(doc),
                        "--image-dir", str(images)])
    assert code == 0
    text = doc.read_text()
    mobile, kuka = text.index(f"### {MOBILE}"), text.index(f"### {plans.KUKA}")
    assert mobile < kuka  # the plan set's order
    mobile_part, kuka_part = text[mobile:kuka], text[kuka:]
    assert "The 6 runs shown come from the archive of finished runs" in mobile_part and "2026-11-20" in mobile_part
    assert "| ground_truth | 2/2 (2 archived) |" in mobile_part and "| vae | 2/2 (2 archived) |" in mobile_part
    assert "0.420 (8)" in mobile_part  # the GTC column from the archived model facts (no model registered here)
    assert "archived" not in kuka_part and "| vae | 2/2 | " in kuka_part and "0.420 (8)" in kuka_part
    for env in (MOBILE, plans.KUKA):
        assert (images / f"srl_rl_{env}.png").read_bytes()[:4] == b"\x89PNG"
    assert len(json.loads(open(archive).read())) == 12  # Kuka's runs archived beside MobileRobot's
    assert "Archived 6 run(s)" in capsys.readouterr().out


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
    _model(os.path.join(settings.base, settings.bench_dir, "srl", f"vae_{MOBILE}"), "vae", 0.42)  # the same model
    with open(os.path.join(settings.base, settings.config_file), "w") as handle:
        handle.write(f"{MOBILE}:\n  vae: srl/vae_{MOBILE}\n")
    calls.clear()
    running.runEverything(settings)
    (prepare, pipeline) = calls
    assert prepare[1] == "srl_models.prepare"
    assert pipeline[pipeline.index("--srl-model") + 1:pipeline.index("--num-iteration") + 4] == [
        "ground_truth", "raw_pixels", "vae", "--num-iteration", "1", "--seed", "1"]
    assert len(json.loads(open(archive).read())) == 3  # the same model hash: nothing dropped


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
    assert bench_models.modelFacts(_model(os.path.join(bench, "srl", "vae_new"), "vae", 0.5, state_dim=16))["hash"] != digest
    with open(os.path.join(bench, "srl_models.yaml"), "w") as handle:
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
    folder = _model(os.path.join(bench, "srl", "vae_again"), "vae", 0.5)
    with open(os.path.join(folder, "exp_config.json")) as handle:
        config = json.load(handle)
    with open(os.path.join(folder, "exp_config.json"), "w") as handle:  # what this training produced differs
        json.dump({**config, "train_loss": 0.25, "best_epoch": 7}, handle)
    again = bench_models.modelFacts(folder)
    first = next(record["model"] for record in records.values() if record["observation"] == "vae")
    assert again["hash"] != digest == first["hash"] and bench_models.sameModel(again, first)
    with open(os.path.join(bench, "srl_models.yaml"), "w") as handle:
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
            run = _writeRun(os.path.join(spec.parent, f"26-11-25_10h00_00_{spec.run_id}"), spec.srl_model, 1,
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
    assert os.path.join(plans.DEFAULT_BENCH_DIR, "srl_models.yaml") in spec.train_args  # as that checkout ran it
    environment = running.stageEnvironment(str(tmp_path))
    assert environment["PYTHONSAFEPATH"] == "1" and environment["PYTHONPATH"].split(os.pathsep)[0] == plans.ROOT
    assert running.stageEnvironment(plans.ROOT) is None
    inside = _settings(["--env", MOBILE, "--bench-dir", os.path.join(plans.ROOT, "logs", "b")])
    assert (inside.base, inside.bench_dir) == (plans.ROOT, os.path.join("logs", "b"))


def test_pipeline_commands_cover_exactly_the_runs_given() -> None:
    settings = plans.Settings([plans.PLANS[MOBILE]], ["ground_truth", "raw_pixels", "vae"], ["vae"], 3)
    runs = [("ground_truth", 0), ("ground_truth", 1), ("ground_truth", 2), ("raw_pixels", 0), ("raw_pixels", 2),
            ("vae", 2)]
    commands = settings.pipelineCommands(settings.plans[0], [SimpleNamespace(srl_model=name, seed=seed)
                                                             for name, seed in runs])

    def grid(command: list[str]) -> tuple:
        names = command[command.index("--srl-model") + 1:command.index("--num-iteration")]
        return tuple(names), int(command[command.index("--seed") + 1]), int(command[command.index("--num-iteration")
                                                                                    + 1])

    assert [grid(command) for command in commands] == [(("ground_truth",), 0, 3), (("raw_pixels",), 0, 1),
                                                        (("raw_pixels",), 2, 1), (("vae",), 2, 1)]
    full = settings.pipelineCommands(settings.plans[0], [SimpleNamespace(srl_model=name, seed=seed)
                                                         for name in settings.observations for seed in range(3)])
    assert full == [settings.pipelineCommand(settings.plans[0])]  # nothing archived: the one command as before


def test_a_broken_archive_is_refused_before_anything_is_written(tmp_path) -> None:
    archive = tmp_path / "runs.json"
    archive.write_text('{"a run": {"env": "x"}}')
    with pytest.raises(UsageError, match="lacks format, observation"):
        cli.main(["--env", MOBILE, "--bench-dir", str(tmp_path / "bench"), "--runs-file", str(archive)])
    assert not (tmp_path / "bench").exists()
    with pytest.raises(UsageError, match="--rerun .*not among the envs run"):
        cli.main(["--env", MOBILE, "--rerun", plans.KUKA, "--bench-dir", str(tmp_path / "bench")])


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
    record = bench_runs.loadRun(_writeRun(str(tmp_path / "run"), "srl_splits", 0, [1, 2, 3, 4]))
    assert record.observation == "srl_splits"
    record.run.args["srl_ground_truth_scale"] = True
    assert record.observation == variant
    run = settings.runSettings(plan)
    assert (bench_archive.archiveKey(MOBILE, variant, 0, run, None, {})
            != bench_archive.archiveKey(MOBILE, "srl_splits", 0, run, None, {}))
    # its row: its own runs, the GTC of the model it uses
    truth = bench_runs.loadRun(_writeRun(str(tmp_path / "truth"), "ground_truth", 0, CURVES["ground_truth"][0]))
    rows, threshold = analysis.summariseEnv([truth, record], ["ground_truth", "srl_splits", variant], 1)
    table = analysis.envTable(MOBILE, rows, threshold, {"srl_splits": {"gtc": 0.8, "state_dim": 32}})
    assert f"| {variant} | 1/1 | 4.00 " in table and "| srl_splits | 0/1 | missing | | | 0.800 (32) |" in table
    assert table.count("0.800 (32)") == 2
    analysis.plotEnv(str(tmp_path / "curves.png"), plan, rows, threshold)
    assert (tmp_path / "curves.png").read_bytes()[:4] == b"\x89PNG"


def test_the_committed_archive_holds_every_run_of_the_default_plan() -> None:
    """A fresh clone's `python -m benchmarks.srl_rl` has nothing to run: every run of the default configuration is in
    benchmarks/srl_rl_runs.json under the key the current settings make."""
    settings = _settings([])
    assert settings.archive_file == plans.RUNS_FILE
    archive = bench_archive.loadArchive(plans.RUNS_FILE)
    found = 0
    for plan in settings.plans:
        specs = settings.specs(plan)
        matches = bench_archive.archivedMatches(archive, settings, plan, specs, {})
        assert len(matches) == len(specs), sorted({(bench_runs.specObservation(spec), spec.seed) for spec in specs}
                                                  - set(matches))
        found += len(matches)
    assert found == 72


def test_a_changed_train_default_changes_the_archive_key(tmp_path, monkeypatch) -> None:
    settings = _settings([])
    plan = settings.plans[0]
    specs = settings.specs(plan)
    before = bench_runs.specSettings(specs[0])
    run = settings.runSettings(plan)
    # where the runs are written and how they are shown change no result: the same key from another bench folder
    elsewhere = _settings(["--bench-dir", str(tmp_path / "bench")])
    assert bench_runs.specSettings(elsewhere.specs(plan)[0]) == before
    # a later default of train (here the number of envs): every key changes, the committed records are not reused
    original = sweep.trainParser.__wrapped__  # train's parser, not the cached one

    def changed(algo: str):
        parser = original(algo)
        parser.set_defaults(num_cpu=4)
        return parser

    monkeypatch.setattr(sweep, "trainParser", changed)
    after = bench_runs.specSettings(specs[0])
    assert (before["num_cpu"], after["num_cpu"]) == (1, 4)
    assert (bench_archive.archiveKey(plan.env, "ground_truth", 0, run, None, before)
            != bench_archive.archiveKey(plan.env, "ground_truth", 0, run, None, after))
    archive = bench_archive.loadArchive(plans.RUNS_FILE)
    assert bench_archive.archivedMatches(archive, settings, plan, settings.specs(plan), {}) == {}


def test_a_run_made_with_other_train_settings_is_not_this_configurations(tmp_path, monkeypatch, capsys) -> None:
    """The pipeline finds a run folder by its run id, which names only the settings that differ from train's defaults:
    after a default changed, a finished run of the old default has the run id of the new one. Its args.json tells."""
    monkeypatch.chdir(tmp_path)
    settings = _settings(["--env", MOBILE, "--observations", "ground_truth", "--seeds", "2", "--runs-file",
                          str(tmp_path / "runs.json")])
    plan = settings.plans[0]
    first, second = settings.specs(plan)
    kept = _writeRun(os.path.join(first.parent, f"26-11-20_10h00_00_{first.run_id}"), "ground_truth", 0,
                     CURVES["ground_truth"][0], spec=first)
    other = _writeRun(os.path.join(second.parent, f"26-11-20_10h00_00_{second.run_id}"), "ground_truth", 1,
                      CURVES["ground_truth"][1], spec=second)
    with open(os.path.join(other, "args.json")) as handle:
        args = json.load(handle)
    with open(os.path.join(other, "args.json"), "w") as handle:  # made when train's default was 2 envs
        json.dump({**args, "num_cpu": 2, "device": "cpu", "img_shape": [3, 64, 64], "resolved_hyperparams": {}}, handle)
    assert bench_runs.otherSettings(bench_runs.specSettings(second), {**args, "img_shape": [3, 64, 64]}) == []
    assert [record.seed for record in bench_runs.finishedRuns([first, second])] == [0]
    assert f"skipping {other}: made with other train settings (num_cpu)" in capsys.readouterr().err
    calls = []
    monkeypatch.setattr(running, "runStage", lambda command, nice, cwd=plans.ROOT: calls.append(command) or 0)
    running.runEverything(settings)
    out = capsys.readouterr().out
    assert os.path.isdir(kept) and not os.path.exists(other) and "made with other train settings" in out
    assert "; 1 runs to do;" in out and [command[1] for command in calls] == ["rl_baselines.pipeline"]
