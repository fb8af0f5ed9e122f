"""benchmarks.cnn_features: the sweeps it runs and how it judges a CNN against NatureCNN (steps to threshold).

The sweeps themselves are the pipeline's (tested with it); here, the command lines, the summary on made-up runs and
which finished runs count.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import types

import numpy as np
import pytest
from srl_rl_bench import CURVES, writeRun

from benchmarks import cnn_features
from benchmarks.cnn_features import summarise, sweepCommand, sweepSpecs, thresholdOf
from benchmarks.progress import Countdown
from benchmarks.srl_rl.env_plans import KUKA, MOBILE, PLANS
from benchmarks.srl_rl.runs import RunRecord, finishedRuns
from srl_toolbox import devices
from srl_toolbox.cli import UsageError
from srl_toolbox.devices import THREADS_VARIABLE


def _record(rewards: list[float], rate: float = 100.0) -> RunRecord:
    steps = np.arange(1, len(rewards) + 1) * 10_000
    run = types.SimpleNamespace(args={"env": MOBILE, "srl_model": "raw_pixels", "seed": 0})
    return RunRecord(run, steps, np.asarray(rewards, dtype=float), rate=rate)


def test_sweep_commands_carry_the_plan_and_the_extractor() -> None:
    kuka = sweepCommand(PLANS[KUKA], "small", 200_000, 10_000, 3, 2, "bench", renderer="lowpoly")
    assert kuka[:2] == ["-m", "rl_baselines.pipeline"]
    for flag in ("--random-target", "--force-down"):
        assert flag in kuka
    assert kuka[kuka.index("--features-extractor") + 1] == "small" and kuka[kuka.index("--renderer") + 1] == "lowpoly"
    assert kuka[kuka.index("--srl-model") + 1] == "raw_pixels" and kuka[kuka.index("--log-dir") + 1] == "bench/small"
    truth = sweepCommand(PLANS[MOBILE], "ground_truth", 50_000, 5_000, 3, 2, "bench")
    assert "--features-extractor" not in truth and truth[truth.index("--srl-model") + 1] == "ground_truth"


def test_precision_is_the_judged_extractors_and_natures_runs_keep_their_ids() -> None:
    """--precision P: the judged extractors compute in P, NatureCNN in float32 (as SB3 does), ground truth has no
    CNN. NatureCNN's pinned float32 is train's default, so its runs keep the ids of the runs made without the flag
    (a bench folder's NatureCNN runs are reused), where a bfloat16 extractor's runs are runs of their own."""
    plan = PLANS[MOBILE]

    def precisionIn(command: list[str]) -> str | None:
        return command[command.index("--precision") + 1] if "--precision" in command else None

    commands = {variant: sweepCommand(plan, variant, 50_000, 5_000, 3, 2, "bench", precision="bfloat16")
                for variant in ("ground_truth", "nature", "medium")}
    assert {variant: precisionIn(command) for variant, command in commands.items()} == {
        "ground_truth": None, "nature": "float32", "medium": "bfloat16"}
    assert precisionIn(sweepCommand(plan, "medium", 50_000, 5_000, 3, 2, "bench")) is None  # train's default

    def runIds(variant: str, precision: str | None) -> list[str]:
        return [spec.run_id for spec in sweepSpecs(plan, variant, 50_000, 5_000, 2, "bench", precision=precision)]

    assert runIds("nature", "bfloat16") == runIds("nature", None)
    assert runIds("medium", "float32") == runIds("medium", None) != runIds("medium", "bfloat16")
    threshold = 198.0
    nature, medium = [_record([0.0, 200.0])], [_record([200.0, 210.0], rate=150.0)]
    table, verdict = summarise(MOBILE, threshold, {"nature": nature, "medium": medium}, 1, "bfloat16")
    assert "| nature | 1/1 |" in table and "| medium, bfloat16 | 1/1 |" in table
    assert verdict.startswith(f"{MOBILE}: MediumCNN in bfloat16 learns at least as well as NatureCNN (reached 1 vs 1")


def test_an_unknown_precision_is_refused_before_any_sweep(tmp_path) -> None:
    bench = tmp_path / "bench"
    with pytest.raises(UsageError, match="--precision: invalid choice: 'float16' \\(choose from 'auto', 'float32', "
                                         "'bfloat16'\\)"):
        cnn_features.main(["--precision", "float16", "--bench-dir", str(bench)])
    assert not bench.exists()


def test_ground_truth_runs_on_the_srl_rl_benchmarks_seeds() -> None:
    """The threshold is the SRL + RL benchmark's: ground truth on as many seeds as its plan (Nav 2D's 20, where some
    seeds stay at the wall), or on --seeds where that is more; the extractors on --seeds."""
    mobile, kuka = PLANS[MOBILE], PLANS[KUKA]
    assert cnn_features.variantSeeds(mobile, "ground_truth", 3) == mobile.ground_truth_seeds == 20
    assert cnn_features.variantSeeds(mobile, "ground_truth", 25) == 25
    assert cnn_features.variantSeeds(mobile, "small", 3) == cnn_features.variantSeeds(kuka, "ground_truth", 3) == 3


def test_threshold_and_verdicts() -> None:
    assert thresholdOf([_record([100.0, 200.0]), _record([100.0, 240.0])]) == 0.9 * 220.0
    # the SRL + RL benchmark's rule: a ground truth ending at or below 0 gives no threshold (90% of it lies above it)
    assert thresholdOf([_record([-100.0, -20.0]), _record([-100.0, -30.0])]) is None
    assert thresholdOf([_record([0.0, 0.0])]) is None and thresholdOf([]) is None
    threshold = 198.0
    nature = [_record([0.0, 100.0, 200.0]), _record([0.0, 200.0, 210.0]), _record([0.0, 0.0, 50.0])]
    small = [_record([0.0, 199.0, 220.0], rate=250.0), _record([200.0, 210.0, 220.0], rate=250.0),
             _record([0.0, 0.0, 10.0], rate=250.0)]
    table, verdict = summarise(MOBILE, threshold, {"nature": nature, "small": small}, 3)
    # nature: reached at 30k and 20k steps (median 25k), small at 20k and 10k (median 15k), 2.5x the rate
    assert "| nature | 3/3 |" in table and "25,000 (2/3)" in table and "15,000 (2/3)" in table
    assert "learns at least as well as NatureCNN" in verdict and "2.50x" in verdict
    _, verdict = summarise(MOBILE, threshold, {"nature": nature, "small": small[2:]}, 3)
    assert "learns less well than NatureCNN" in verdict
    # each other extractor is judged against NatureCNN: a tie in seeds goes to the fewer steps (median)
    medium = [_record([0.0, 0.0, 200.0], rate=150.0), _record([0.0, 200.0, 220.0], rate=150.0),
              _record([0.0, 0.0, 10.0], rate=150.0)]
    _, verdict = summarise(MOBILE, threshold, {"nature": nature, "medium": medium, "small": small}, 3)
    assert verdict.splitlines() == [
        f"{MOBILE}: MediumCNN learns at least as well as NatureCNN (reached 2 vs 2 seeds, median 25,000 vs 25,000 "
        "steps); training rate 1.50x NatureCNN's.",
        f"{MOBILE}: SmallCNN learns at least as well as NatureCNN (reached 2 vs 2 seeds, median 15,000 vs 25,000 "
        "steps); training rate 2.50x NatureCNN's."]
    _, verdict = summarise(MOBILE, threshold, {"nature": nature, "medium": medium[1:]}, 3)
    assert "MediumCNN learns less well than NatureCNN (reached 1 vs 2 seeds, median 20,000" in verdict
    _, verdict = summarise(MOBILE, 1000.0, {"nature": nature, "small": small}, 3)
    assert "budget is too small" in verdict
    _, verdict = summarise(MOBILE, threshold, {"nature": [], "small": small}, 3)
    assert "not every extractor has a finished run yet" in verdict


@pytest.mark.parametrize("envs,renderer,words", [
    ([MOBILE], "foo", ["--renderer foo", "none of the envs run", "valid choices: tinyrenderer, sprites"]),
    ([KUKA], "sprites", ["--renderer sprites", "valid choices: tinyrenderer, lowpoly"]),
    ([MOBILE, KUKA], "sprites", ["--renderer sprites", KUKA, "tinyrenderer, lowpoly"])])
def test_a_renderer_an_env_lacks_is_refused_before_any_sweep(tmp_path, monkeypatch, envs, renderer, words) -> None:
    """Every env's raw-pixel runs draw with --renderer: one that an env does not offer is refused in the argument
    checks, before the ground-truth sweep starts (train would refuse it only in the raw-pixel sweeps after it)."""
    def noSweep(*args, **kwargs):
        raise AssertionError("a sweep started")

    monkeypatch.setattr(cnn_features.subprocess, "Popen", noSweep)
    bench = tmp_path / "bench"
    with pytest.raises(UsageError) as refusal:
        cnn_features.main(["--envs", *envs, "--renderer", renderer, "--bench-dir", str(bench), "--no-append"])
    for word in words:
        assert word in str(refusal.value)
    assert not bench.exists()


def test_an_eval_freq_past_the_budget_is_refused_before_any_sweep(tmp_path, monkeypatch) -> None:
    """The SRL + RL benchmark's refusal (benchmarks.srl_rl.cli.checkEvalFreq): no raw-pixel run could evaluate."""
    def noSweep(*args, **kwargs):
        raise AssertionError("a sweep started")

    monkeypatch.setattr(cnn_features.subprocess, "Popen", noSweep)
    bench = tmp_path / "bench"
    with pytest.raises(UsageError, match="--eval-freq 5000 is more than the 100 steps of a raw-pixel run"):
        cnn_features.main(["--envs", MOBILE, "--budget", "100", "--eval-freq", "5000", "--bench-dir", str(bench),
                           "--workers", "1"])
    assert not bench.exists()


def test_a_run_continued_after_a_stop_has_no_rate_and_is_marked() -> None:
    """A resumed run's rate is nan (its monitor clock counts the pause): the rate is the mean over the runs that have
    one, n/a when none has, and the runs continued after a stop are counted and named under the table."""
    threshold = 198.0
    nature = [_record([0.0, 100.0, 200.0]), _record([0.0, 200.0, 210.0], rate=math.nan)]
    nature[1] = dataclasses.replace(nature[1], continued=True)
    small = [_record([0.0, 199.0, 220.0], rate=250.0), _record([200.0, 210.0, 220.0], rate=math.nan)]
    table, verdict = summarise(MOBILE, threshold, {"nature": nature, "small": small}, 2)
    assert "nan" not in table + verdict
    assert "| nature | 2/2 (1 continued) |" in table and "| 100 |" in table and "| small | 2/2 |" in table
    assert "1 of these 4 runs was continued after a stop (nature seed 0): such a run is a valid continuation" in table
    assert "training rate 2.50x NatureCNN's" in verdict
    gone = [dataclasses.replace(record, rate=math.nan) for record in small]
    table, verdict = summarise(MOBILE, threshold, {"nature": nature, "small": gone}, 2)
    assert "nan" not in table + verdict and "| n/a |" in table and "training rate n/a" in verdict


def test_a_run_of_another_train_default_is_run_again_and_never_reported(tmp_path, monkeypatch, capsys) -> None:
    """The pipeline finds a run by its run id, which names only the settings given: a NatureCNN run finished before
    ppo2's raw-pixel default (clip_range_vf 0.2) has the id of today's. It is deleted before the sweep, and the report
    counts only the runs of the command's settings."""
    bench, plan, budget = str(tmp_path / "bench"), PLANS[MOBILE], 4000
    folders = {}
    for variant, steps, eval_freq, curves in (("ground_truth", plan.steps, plan.eval_freq, CURVES["ground_truth"]),
                                              ("nature", budget, 1000, CURVES["raw_pixels"]),
                                              ("medium", budget, 1000, CURVES["raw_pixels"])):
        for spec in sweepSpecs(plan, variant, steps, eval_freq, 2, bench):
            folders[variant, spec.seed] = writeRun(os.path.join(spec.parent, f"26-11-20_10h00_00_{spec.run_id}"),
                                                   spec.srl_model, spec.seed, curves[spec.seed], spec=spec)
    stale = os.path.join(folders["nature", 1], "args.json")
    with open(stale) as handle:
        args = json.load(handle)
    assert args["hp_clip_range_vf"] == "0.2" and args["features_extractor"] == "nature"
    with open(stale, "w") as handle:  # made before the raw-pixel default
        json.dump({name: value for name, value in args.items() if name != "hp_clip_range_vf"}, handle)
    assert [record.seed for record in finishedRuns(sweepSpecs(plan, "nature", budget, 1000, 2, bench))] == [0]
    commands, threads = [], []

    class Finished:
        returncode = 0

        def __init__(self, command: list[str], cwd: str, env: dict[str, str]) -> None:
            commands.append(command)
            threads.append(env[THREADS_VARIABLE])

        def poll(self) -> int:
            return 0
    monkeypatch.setattr(cnn_features.subprocess, "Popen", Finished)
    monkeypatch.setattr(devices, "usableCores", lambda: 6)
    monkeypatch.delenv(THREADS_VARIABLE)
    cnn_features.main(["--envs", MOBILE, "--seeds", "2", "--budget", str(budget), "--eval-freq", "1000",
                       "--bench-dir", bench, "--no-append"])
    out = capsys.readouterr().out
    assert not os.path.exists(folders["nature", 1]) and "made with other train settings" in out
    assert all(os.path.isdir(folder) for key, folder in folders.items() if key != ("nature", 1))
    assert [command[command.index("--log-dir") + 1] for command in commands] == [
        os.path.join(bench, variant) for variant in ("ground_truth", "nature", "medium")]  # (the default --extractors)
    # ground truth on the SRL + RL benchmark's 20 seeds of Nav 2D (its threshold), the extractors on --seeds
    assert [command[command.index("--num-iteration") + 1] for command in commands] == ["20", "2", "2"]
    assert "over 2 of its 20 seeds" in out
    assert threads == ["3", "3", "3"]  # 2 runs at a time in each stage (the extractors' sweeps side by side): 6 // 2
    assert "| nature | 1/2 |" in out and "| medium | 2/2 |" in out


def test_a_failed_sweep_makes_the_command_fail(tmp_path, monkeypatch, capsys) -> None:
    """A sweep that exits non-zero is named on stderr and the command exits 1 (not 0 with an empty report)."""
    class Failed:
        returncode = 1

        def __init__(self, *args, **kwargs) -> None:
            pass

        def poll(self) -> int:
            return 1

    monkeypatch.setattr(cnn_features.subprocess, "Popen", Failed)
    assert cnn_features.main(["--envs", MOBILE, "--seeds", "1", "--budget", "1000", "--eval-freq", "500",
                              "--bench-dir", str(tmp_path / "bench"), "--no-append"]) == 1
    assert "sweep(s) failed: ground_truth on " in capsys.readouterr().err


def test_the_countdown_names_each_run_as_its_sweep_finishes_it(tmp_path, monkeypatch, capsys) -> None:
    """`make bench-cnn` runs for hours: it printed no countdown, and its side-by-side sweeps drew their bars into
    each other; the sweeps print lines (--no-progress), and the benchmark a countdown line per finished run."""
    plan = PLANS[MOBILE]
    specs = sweepSpecs(plan, "medium", 4000, 1000, 2, str(tmp_path / "bench"))
    assert "--no-progress" in sweepCommand(plan, "medium", 4000, 1000, 2, 2, "bench")

    class Sweep:
        """Finishes one run at each look, and exits at the second."""
        returncode, looks = 0, 0

        def poll(self) -> int | None:
            spec = specs[self.looks]
            writeRun(os.path.join(spec.parent, f"26-11-20_10h00_00_{spec.run_id}"), spec.srl_model, spec.seed,
                     CURVES["raw_pixels"][spec.seed], spec=spec)
            self.looks += 1
            return None if self.looks == 1 else 0

    monkeypatch.setattr(cnn_features, "POLL_S", 0.0)
    clock = iter([0.0, 60.0, 120.0])
    countdown = Countdown(3, 12_000, clock=lambda: next(clock))  # and a run of 4,000 steps in a later stage
    watched = {spec.run_id: (f"{MOBILE} medium seed {spec.seed}", 4000, spec) for spec in specs}
    assert cnn_features.waitCounting([("medium", Sweep())], watched, countdown) == [("medium", 0)]
    assert capsys.readouterr().out.splitlines() == [f"[1/3, about 2 min left] {MOBILE} medium seed 0",
                                                    f"[2/3, about 1 min left] {MOBILE} medium seed 1"]
