"""The SRL + RL benchmark's default plan: ground truth on its own seeds where the plan asks for more (Nav 2D), and the
committed archive (benchmarks/srl_rl_runs.json) holding every run of the default configuration."""
from __future__ import annotations

import shutil

from srl_rl_bench import CURVES, MOBILE, writeGrid

from benchmarks.srl_rl import analysis, cli, env_plans, plans
from benchmarks.srl_rl import archive as bench_archive
from benchmarks.srl_rl import runs as bench_runs
from rl_baselines.core.registry import defaultEnvs
from rl_baselines.rl_algorithm.image_features import resolvedPrecision
from rl_baselines.rl_algorithm.ppo2 import PPO2Model
from rl_baselines.runs.train_checks import runDeviceFor
from rl_baselines.sweeps.recorded import specSettings

# what ppo2's default --precision gives the benchmark's raw-pixel runs on this machine
DEFAULT_PRECISION = resolvedPrecision(PPO2Model.DEFAULT_PRECISION, runDeviceFor(PPO2Model, None, "raw_pixels"))


def _settings(argv: list[str]) -> plans.Settings:
    """The settings main builds from ``argv`` (relative paths from the current directory)."""
    return cli.settingsFrom(cli.buildParser().parse_args(argv))


def _commandSeeds(command: list[str]) -> tuple[list[str], int, int]:
    """:return: a pipeline command's SRL models, number of seeds and first seed"""
    models = command[command.index("--srl-model") + 1:command.index("--num-iteration")]
    return models, int(command[command.index("--num-iteration") + 1]), int(command[command.index("--seed") + 1])


def test_ground_truth_runs_twenty_seeds_on_nav_2d_and_the_others_the_benchmarks() -> None:
    settings = _settings(["--observations", "ground_truth", "raw_pixels", "vae", "srl_splits_gt_scale"])
    mobile, kuka = env_plans.PLANS[MOBILE], env_plans.PLANS[env_plans.KUKA]
    assert (mobile.ground_truth_seeds, kuka.ground_truth_seeds) == (20, 0)
    assert [len(settings.seedRange(mobile, name)) for name in settings.observations] == [20, 5, 5, 5]
    assert len(settings.seedRange(kuka, "ground_truth")) == 5
    seeds = {}
    for spec in settings.specs(mobile):
        seeds.setdefault(bench_runs.specObservation(spec), []).append(int(spec.seed))
    assert seeds == {"ground_truth": list(range(20)), "raw_pixels": list(range(5)), "vae": list(range(5)),
                     "srl_splits_gt_scale": list(range(5))}
    # one pipeline command per set of flags and seeds: ground truth's own, the plain rows', the variant's
    assert [_commandSeeds(command) for command in settings.gridCommands(mobile)] == [
        (["ground_truth"], 20, 0), (["raw_pixels", "vae"], 5, 0), (["srl_splits"], 5, 0)]
    assert [_commandSeeds(command) for command in settings.gridCommands(kuka)][0] == (
        ["ground_truth", "raw_pixels", "vae"], 5, 0)
    assert settings.groundTruthSeeds([mobile, kuka]) == {mobile: 20}
    # the first five archived or finished: the other fifteen run in one command
    missing = [spec for spec in settings.specs(mobile) if bench_runs.specObservation(spec) == "ground_truth"
               and spec.seed >= 5]
    assert [_commandSeeds(command) for command in settings.pipelineCommands(mobile, missing)] == [
        (["ground_truth"], 15, 5)]
    # more seeds than the plan's for every row: ground truth has as many; from another first seed, from there
    more = _settings(["--observations", "ground_truth", "vae", "--seeds", "30", "--first-seed", "7"])
    assert [more.seedRange(mobile, name) for name in more.observations] == [range(7, 37), range(7, 37)]
    assert more.groundTruthSeeds([mobile]) == {}
    # without ground truth among the rows, nothing of it
    assert _settings(["--observations", "raw_pixels", "vae"]).groundTruthSeeds([mobile]) == {}


def test_the_report_counts_ground_truths_seeds_and_its_threshold_reads_them_all(tmp_path, monkeypatch,
                                                                                  capsys) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ["--env", MOBILE, "--observations", "ground_truth", "raw_pixels", "--seeds", "3"]
    settings = _settings(argv)
    curves = {"ground_truth": [*CURVES["ground_truth"], [0, 0, 0, 0]], "raw_pixels": CURVES["raw_pixels"]}
    writeGrid(settings, MOBILE, curves, "2026-11-20T10:00:00", "unused")  # seeds 3, 7, 11, 15, 19 of it end at 0
    assert cli.main([*argv, "--report-only", "--no-doc", "--no-append", "--runs-file", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    finals = [230, 232, 228, 0] * 5
    threshold = analysis.THRESHOLD_FRACTION * sum(finals) / 20
    assert f"threshold {threshold:.2f}" in out and "| ground_truth | 20/20 |" in out and "| raw_pixels | 3/3 |" in out
    assert "3 seeds each (ground truth 20 on Nav 2D, where some of its own seeds never learn the task" in out
    assert "have not finished" not in out


def test_the_committed_archive_holds_every_run_of_the_default_plan() -> None:
    """A fresh clone's `python -m benchmarks.srl_rl` runs nothing: every run of the default configuration (the rows
    of issue 29 included, ground truth's 20 seeds on Nav 2D) on MobileRobot (sprites), Kuka (physics version 2,
    lowpoly), Nav 1D and the moving target (lowpoly) is in benchmarks/srl_rl_runs.json under the key the current
    settings make; Kuka's records of physics version 1 or of TinyRenderer are not taken for runs of its default, and
    raw pixels' records are not taken for the runs of raw pixels with --augment shift. So do the runs of NatureCNN
    (`--features-extractor nature`), ppo2's default until 2026-12-06, those of one env per run (`--envs 1`), ppo2's
    default until 2026-12-05, with NatureCNN, and those of MediumCNN in float32 and in bfloat16 (`--precision`, with
    Adam fused); the other rows' runs are the same for each."""
    archive = bench_archive.loadArchive(plans.RUNS_FILE)
    nature = ["--features-extractor", "nature", "--precision", "float32"]
    for argv, envs, extractor, precision in (([], 4, "medium", DEFAULT_PRECISION),
                                             (["--precision", "float32"], 4, "medium", "float32"),
                                             (nature, 4, "nature", "float32"),
                                             (["--envs", "1", *nature], 1, "nature", "float32"),
                                             (["--precision", "bfloat16"], 4, "medium", "bfloat16")):
        settings = _settings(argv)
        assert settings.archive_file == plans.RUNS_FILE and settings.envs == envs
        found = {}
        for plan in settings.plans:
            specs = settings.specs(plan)
            matches = bench_archive.archivedMatches(archive, settings, plan, specs, {})
            planned = {(bench_runs.specObservation(spec), spec.seed) for spec in specs}
            assert set(matches) == planned, (argv, plan.env, sorted(planned ^ set(matches)))
            assert {record["train"]["num_cpu"] for record in matches.values()} == {settings.envs}
            cnns = {(record["train"]["features_extractor"], record["train"]["precision"])
                    for (name, _), record in matches.items() if plans.modelName(name) == env_plans.RAW_PIXELS}
            assert cnns == {(extractor, precision)}, (argv, plan.env)
            found[plan.env] = len(matches)
        # every run of each grid (the default 5 seeds; ground truth 20 on Nav 2D), Kuka's and the moving target's
        # drawn by lowpoly (their TinyRenderer runs not taken)
        assert found == {env_plans.MOBILE: 90, env_plans.KUKA: 75, env_plans.MOBILE_1D: 75,
                         env_plans.KUKA_MOVING: 75}, argv
    assert sum(record["env"] == env_plans.KUKA and record.get("physics", 1) == 1 for record in archive.values()) == 36
    assert sum(record["env"] == env_plans.KUKA and record.get("physics", 1) == 2 and record["train"]["renderer"] ==
               "tinyrenderer" for record in archive.values()) == 70  # (curl's 5 dropped: made on frames t, t+1)


def test_every_archived_record_is_under_the_key_it_has_now() -> None:
    """A change in how train settings are read (an upgrade rule of args.json, the value a run records for a flag that
    does nothing for it, such as an algorithm's --features-extractor on a state) changes the key of the records it
    touches: the committed archive must then be re-keyed, or the benchmark would not find those runs."""
    archive = bench_archive.loadArchive(plans.RUNS_FILE)
    stale = [key for key, record in archive.items() if bench_archive.entryKey(record) != key]
    assert not stale, stale[:3]


def test_every_run_gets_ppo2s_default_envs_by_name() -> None:
    """The runs take ppo2's default number of envs, given on each command line (its archive key holds it, so a later
    default of train finds the archived runs still); --envs N gives N."""
    assert plans.RUN_ENVS == defaultEnvs(plans.ALGO) == 4
    for argv, envs in (([], "4"), (["--envs", "1"], "1")):
        settings = _settings(argv)
        for plan in settings.plans:
            for command in settings.gridCommands(plan):
                assert command[command.index("--num-cpu") + 1] == envs


def test_the_pixel_flags_reach_every_run_and_a_states_key_stays() -> None:
    """--features-extractor and --precision go to every run's train command (they do nothing for a state, whose
    settings, so its archive key, stay those of the default plan); without them, none."""
    default, low = _settings([]), _settings(["--features-extractor", "nature", "--precision", "bfloat16"])
    assert default.pixel_flags == ()
    assert low.pixel_flags == ("--features-extractor", "nature", "--precision", "bfloat16")
    plan = default.plans[0]
    for spec, other in zip(default.specs(plan), low.specs(plan)):
        assert (spec.srl_model, spec.seed) == (other.srl_model, other.seed)
        flags = other.train_args[other.train_args.index("--precision"):][:2]
        assert list(flags) == ["--precision", "bfloat16"] and "--precision" not in spec.train_args
        if spec.srl_model == "ground_truth":
            assert specSettings(spec) == specSettings(other)
        elif spec.srl_model == env_plans.RAW_PIXELS:
            assert specSettings(other)["precision"] == "bfloat16"
            assert specSettings(spec)["precision"] == DEFAULT_PRECISION  # (as train resolves it)


def test_a_fresh_clone_reports_the_committed_archive(tmp_path, monkeypatch, capsys) -> None:
    """`--report-only` in an empty bench folder reports every archived run of the default plan (the archive as the
    report stage writes it, its records' settings raw, matches as the loaded one does)."""
    monkeypatch.chdir(tmp_path)
    archive = str(tmp_path / "runs.json")
    shutil.copy(plans.RUNS_FILE, archive)
    # every expected run is in: 90 on Nav 2D, 75 on each of the three other tasks
    assert cli.main(["--report-only", "--no-doc", "--no-append", "--runs-file", archive]) == 0
    out = capsys.readouterr().out
    assert out.count("| ground_truth |") >= 4 and "75 runs" in out and "90 runs" in out
    assert "have not finished" not in out and "| ground_truth | 20/20 (20 archived) |" in out
    assert "![ppo2 learning curves on" not in out  # --no-doc draws no figure: none is linked
