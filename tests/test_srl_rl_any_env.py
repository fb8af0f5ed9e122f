"""The SRL + RL benchmark on any registered env (benchmarks.srl_rl.env_plans.derivedPlan, its command line) and the
threshold of replay.gather_results for every env: derived plans, one-line refusals with nothing written, the Ray
executor flags handed to the pipeline, and 90% of ground truth's final reward as the threshold. Nothing is trained
(the benchmark on a Ray instance: tests/test_pipeline_ray.py, sharing its Ray head)."""
from __future__ import annotations

import os

import numpy as np
import pytest
from conftest import runModule
from srl_rl_bench import CURVES, writeGrid, writeModel, writeRun

from benchmarks import gt_curves
from benchmarks.srl_rl import analysis, cli, env_plans, plans, running
from benchmarks.srl_rl import models as bench_models
from replay import gather_results
from replay.results import findRuns
from rl_baselines import pipeline
from srl_toolbox.cli import UsageError

NAV_1D = "MobileRobot1DGymEnv-v0"
OTHER = "MobileRobot2TargetGymEnv-v0"  # a registered env without a plan


def _settings(*argv: str) -> plans.Settings:
    return cli.settingsFrom(cli.buildParser().parse_args(list(argv)))


def test_the_four_tasks_of_the_paper_are_planned() -> None:
    assert [plan.task for plan in env_plans.PLANS.values()] == ["Nav 2D", "Arm random target", "Nav 1D",
                                                            "Arm moving target"]
    settings = _settings("--observations", "ground_truth", "vae")
    assert [plan.env for plan in settings.plans] == list(env_plans.PLANS) == list(env_plans.QUICK_PLANS)
    moving = env_plans.PLANS[env_plans.KUKA_MOVING]
    prepare = settings.prepareCommand(moving)
    # a random episode of the moving button lasts about 24 steps: 210 episodes, at least MobileRobot's 5000 frames
    assert prepare[prepare.index("--episodes") + 1] == "210" and "--random-target" in prepare
    assert settings.srlSettings(moving)["episodes"] == 210
    command = settings.pipelineCommand(moving)
    assert "--force-down" in command and "--random-target" in command
    assert settings.srlSettings(env_plans.PLANS[env_plans.MOBILE_1D])["episodes"] == 20


def test_an_env_without_a_plan_gets_one_from_the_flags() -> None:
    settings = _settings("--env", OTHER, env_plans.MOBILE, "--budget", f"{OTHER}=6000", "--eval-freq", "2000",
                         "--eval-episodes", "4", "--observations", "ground_truth", "raw_pixels")
    derived, planned = settings.plans
    assert (derived.env, derived.task, derived.steps, derived.eval_freq, derived.eval_episodes, derived.flags) == (
        OTHER, OTHER, 6000, 2000, 4, ())
    assert planned.env == env_plans.MOBILE and planned.steps == env_plans.PLANS[env_plans.MOBILE].steps
    command = settings.pipelineCommand(derived)
    assert command[command.index("--env") + 1] == OTHER
    assert command[command.index("--num-timesteps") + 1] == "6000" and "--executor" not in command
    assert [spec.env for spec in settings.specs(derived)] == [OTHER] * 10  # 2 observations x 5 seeds
    # the planned envs not chosen are still reported when they have runs; the derived one comes after them
    assert [plan.env for plan in settings.reportPlans()] == [*env_plans.PLANS, OTHER]


def test_the_ray_executor_is_handed_to_the_pipeline(monkeypatch) -> None:
    monkeypatch.setattr(cli, "checkRayAddress", lambda address: None)  # no cluster here (the refusals test it)
    settings = _settings("--env", env_plans.MOBILE, "--executor", "ray", "--ray-address", "127.0.0.1:6379")
    command = settings.pipelineCommand(settings.plans[0])
    assert command[command.index("--executor") + 1] == "ray"
    assert command[command.index("--ray-address") + 1] == "127.0.0.1:6379"
    args, _ = pipeline.buildParser().parse_known_args(command[2:])  # the pipeline's own flags (train's pass)
    assert args.executor == "ray" and args.ray_address == "127.0.0.1:6379"
    local = _settings("--env", env_plans.MOBILE, "--executor", "ray")
    assert "--ray-address" not in local.pipelineCommand(local.plans[0])  # the pipeline starts a local instance
    # the runs are the same runs whatever executes them: their ids do not depend on it
    assert ([spec.run_id for spec in settings.specs(settings.plans[0])]
            == [spec.run_id for spec in _settings("--env", env_plans.MOBILE).specs(settings.plans[0])])


class _NoGroundTruth:
    @staticmethod
    def getGroundTruthDim() -> int:
        raise NotImplementedError


@pytest.mark.parametrize("argv, message", [
    (["--env", OTHER, "--eval-freq", "100", "--eval-episodes", "1"], f"give --budget {OTHER}=STEPS$"),
    (["--env", OTHER, "--budget", f"{OTHER}=1000"], "give --eval-freq N, --eval-episodes K$"),
    (["--env", OTHER, "--budget", f"{OTHER}=1000", "--eval-freq", "2000", "--eval-episodes", "1"],
     "--eval-freq 2000 is more than the 1000 steps"),
    (["--env", "Nope-v0"], f"not a registered env; valid choices: .*{OTHER}"),
    (["--env", env_plans.MOBILE, "--ray-address", "127.0.0.1:6379"], "only with --executor ray"),
    (["--env", env_plans.MOBILE, "--executor", "ray", "--ray-address", "foo"], "'foo' is not HOST:PORT"),
    (["--env", env_plans.MOBILE, "--first-seed", "-1"], "argument --first-seed: '-1' is out of range"),
    (["--env", env_plans.MOBILE, "--first-seed", "4294967295", "--seeds", "2"],
     "--first-seed 4294967295 with 2 seeds: the last seed, 4294967296, is beyond 4294967295"),
    (["--env", env_plans.MOBILE, "--executor", "ray", "--ray-address", "127.0.0.1:1"], "127.0.0.1:1: nothing answers"),
    (["--env", env_plans.MOBILE, "--rerun", env_plans.KUKA], "not among the envs run"),
    # argparse keeps the last of a flag given twice: the first env (or budget) would be dropped without a word
    (["--env", env_plans.MOBILE, "--env", OTHER], "argument --env: given twice; give all its values after one --env"),
    (["--env", OTHER, "--budget", f"{OTHER}=1000", "--budget", f"{env_plans.MOBILE}=1000"], "argument --budget: given"),
    # nor one env's budget given twice in one --budget: the first would be dropped
    (["--env", OTHER, "--budget", f"{OTHER}=4096", f"{OTHER}=8192", "--eval-freq", "1024", "--eval-episodes", "1",
      "--observations", "ground_truth", "--report-only", "--no-doc", "--no-append"],
     f"--budget '{OTHER}=8192': {OTHER} is given a budget twice; give each env one ENV=STEPS$"),
])
def test_bad_envs_are_refused_in_one_line_before_anything_is_written(tmp_path, argv, message) -> None:
    bench = tmp_path / "bench"
    with pytest.raises(UsageError, match=message) as error:
        cli.main([*argv, "--bench-dir", str(bench), "--runs-file", str(tmp_path / "runs.json")])
    assert "\n" not in str(error.value)
    assert not bench.exists() and not (tmp_path / "runs.json").exists()


def test_an_env_without_ground_truth_is_refused(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(env_plans, "getEnvClass", lambda env: _NoGroundTruth)
    with pytest.raises(UsageError, match=f"--env {OTHER}: the env has no ground truth"):
        cli.main(["--env", OTHER, "--budget", f"{OTHER}=1000", "--eval-freq", "500", "--eval-episodes", "1",
                  "--bench-dir", str(tmp_path / "bench")])
    assert not (tmp_path / "bench").exists()


def test_the_command_exits_2_with_one_line(tmp_path) -> None:
    result = runModule("benchmarks.srl_rl", "--env", OTHER, "--bench-dir", tmp_path / "bench", timeout=120)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert f"--env {OTHER} has no plan" in result.stderr and not (tmp_path / "bench").exists()


def test_gather_results_has_a_threshold_for_every_env_with_ground_truth(tmp_path) -> None:
    for observation in ("ground_truth", "vae"):
        for seed, curve in enumerate(CURVES[observation]):
            writeRun(str(tmp_path / f"{observation}_{seed}"), observation, seed, curve, env=NAV_1D)
    runs = findRuns(str(tmp_path))
    rows = {row["srl_model"]: row for row in gather_results.gather(runs, [], 100, None, None)}
    expected = 0.9 * np.mean([curve[-1] for curve in CURVES["ground_truth"]])  # 0.9 x 230 = 207
    assert rows["vae"]["threshold"] == pytest.approx(expected) and rows["vae"]["threshold_source"] == "ground truth"
    # vae's evaluations first reach 207 at 4000, 3000 and 4000 steps
    assert rows["vae"]["reached"] == 3 and rows["vae"]["median_steps_to_threshold"] == 4000
    assert rows["ground_truth"]["reached"] == 3 and rows["ground_truth"]["median_steps_to_threshold"] == 3000
    half = {row["srl_model"]: row for row in gather_results.gather(runs, [], 100, None, None, share=0.5)}
    assert half["vae"]["threshold"] == pytest.approx(115.0)
    given = {row["srl_model"]: row for row in gather_results.gather(runs, [], 100, 10.0, None)}
    assert given["vae"]["threshold"] == 10.0 and given["vae"]["threshold_source"] == "given"
    assert "MobileRobot1DGymEnv-v0 (ppo2) 207 (ground truth)" in gather_results.markdown(
        list(rows.values()), 100, None)
    # without ground-truth runs: the env's default, else none
    only_vae = [run for run in runs if run.args["srl_model"] == "vae"]
    (row,) = gather_results.gather(only_vae, [], 100, None, None)
    assert row["threshold"] is None and row["threshold_source"] is None and row["reached"] is None
    with pytest.raises(UsageError, match="--threshold-fraction: '1.5' is not in"):
        gather_results.buildParser().parse_args(["-i", str(tmp_path), "--threshold-fraction", "1.5"])


def test_ground_truth_curves_are_drawn_per_seed(tmp_path) -> None:
    for seed, curve in enumerate(CURVES["ground_truth"][:2]):
        writeRun(str(tmp_path / "runs" / f"seed{seed}"), "ground_truth", seed, curve, env=NAV_1D)
    output = tmp_path / "curves.png"
    assert gt_curves.main(["-i", str(tmp_path / "runs"), "-o", str(output)]) == 0
    assert output.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and output.stat().st_size > 10_000
    with pytest.raises(UsageError, match="not a .png file"):
        gt_curves.main(["-i", str(tmp_path / "runs"), "-o", str(tmp_path / "curves.txt")])


def test_the_prepare_command_gives_each_flag_once() -> None:
    settings = _settings("--env", env_plans.MOBILE_1D, "--srl-episodes", "3")
    command = settings.prepareCommand(settings.plans[0])
    assert command.count("--episodes") == 1 and command[command.index("--episodes") + 1] == "3"
    plain = _settings("--env", env_plans.MOBILE_1D)
    assert plain.prepareCommand(plain.plans[0]).count("--episodes") == 1  # the plan's own, 20


def test_the_section_of_an_env_without_a_plan_has_no_paper_column(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ["--env", OTHER, "--budget", f"{OTHER}=4000", "--eval-freq", "1000", "--eval-episodes", "3",
            "--observations", "ground_truth", "raw_pixels", "--seeds", "2", "--bench-dir", "bench",
            "--runs-file", "runs.json"]
    writeGrid(_settings(*argv), OTHER, CURVES, "2026-11-20T10:00:00", "unused")
    assert cli.main([*argv, "--report-only", "--no-doc", "--no-append"]) == 0
    section = capsys.readouterr().out
    # none of the paper's tasks: no paper column (nor "not recorded here", which says the paper has a figure), and
    # the heading does not repeat the env id as its task
    assert f"### {OTHER}\n" in section and f"({OTHER})" not in section
    header = next(line for line in section.splitlines() if line.startswith("| observation | runs |"))
    assert header.endswith("| p (Welch vs raw pixels) |") and "not recorded here" not in section
    row = next(line for line in section.splitlines() if line.startswith("| ground_truth |"))
    assert row.count("|") == header.count("|")
    # nor the planned tasks' budgets and the paper's settings, which are about other envs
    assert "Step budgets:" not in section and "Paper: " not in section and "Here vs paper" not in section
    # the bench folder lies outside the repository, in the current directory: the commands ran there, with paths
    # relative to it, and the section says so (it said "from the repository root")
    assert f"Commands (from {os.getcwd()}):" in section and "--log-dir bench/runs" in section, section


def test_an_arm_without_a_plan_runs_with_force_down_as_its_dataset() -> None:
    # prepare's datasets of an arm are recorded with force_down (environments.dataset_generator): its runs match them
    arm, other = "Kuka2ButtonGymEnv-v0", "OmnirobotEnv-v0"
    settings = _settings("--env", arm, other, "--budget", f"{arm}=2000", f"{other}=2000", "--eval-freq", "1000",
                         "--eval-episodes", "1", "--observations", "ground_truth", "vae")
    commands = {plan.env: settings.pipelineCommand(plan) for plan in settings.plans}
    assert "--force-down" in commands[arm] and "--force-down" not in commands[other]
    assert settings.runSettings(settings.plans[0])["flags"] == ["--force-down"]


def test_an_archived_env_without_a_plan_left_out_of_the_report_is_named(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    line = "MobileRobotLineTargetGymEnv-v0"
    common = ["--eval-freq", "1000", "--eval-episodes", "3", "--observations", "ground_truth", "raw_pixels",
              "--seeds", "2", "--bench-dir", "bench", "--runs-file", "runs.json", "--report-only", "--no-doc",
              "--no-append"]
    for env in (OTHER, line):  # one env, then another: each archived by its own report
        argv = ["--env", env, "--budget", f"{env}=4000", *common]
        writeGrid(_settings(*argv), env, CURVES, "2026-11-20T10:00:00", "unused")
        capsys.readouterr()
        assert cli.main(argv) == 0
    out = capsys.readouterr().out  # the second report's
    # the second report covers its own env only (the first one's budget is not known to it): it says so
    assert f"### {line}\n" in out and f"### {OTHER}" not in out
    assert f"Archived, not reported: {OTHER} (an env without a plan is reported when given to `--env`" in out
    assert f"Archived and not covered here: {OTHER} (" in out.split("## Does SRL help?")[-1]
    # with no --env (the planned tasks, none archived here) they are still named, before the report says it has none
    assert cli.main(common) == 1
    out = capsys.readouterr().out
    assert f"Archived, not reported: {', '.join(sorted([OTHER, line]))} (an env without a plan" in out, out
    assert "No run of this configuration has finished" in out and not os.path.exists("bench/srl_rl.md")


def test_the_estimate_of_an_env_without_a_plan_counts_whole_evaluation_episodes() -> None:
    arm, omni = "Kuka2ButtonGymEnv-v0", "OmnirobotEnv-v0"
    settings = _settings("--env", arm, omni, "--budget", f"{arm}=2000", f"{omni}=2000", "--eval-freq", "1000",
                         "--eval-episodes", "1", "--observations", "ground_truth")
    # an agent that has not learned plays its evaluation episodes to the end: 1500 steps for the two-button arm
    assert {plan.env: plan.episode_length for plan in settings.plans} == {arm: 1500, omni: 250}
    seconds = running.expectedRunSeconds(settings.plans[0], "ground_truth", {})
    assert seconds == pytest.approx(env_plans.EXPECTED_START_S + (2000 + 2 * 1500 / 1.25) / env_plans.expectedRate(
        arm, "ground_truth"))


def test_a_task_left_out_of_the_statistics_over_the_tasks_is_named(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    line = "MobileRobotLineTargetGymEnv-v0"
    argv = ["--env", OTHER, line, "--budget", f"{OTHER}=4000", f"{line}=4000", "--eval-freq", "1000",
            "--eval-episodes", "3", "--observations", "ground_truth", "raw_pixels", "--seeds", "2", "--bench-dir",
            "bench", "--runs-file", "runs.json"]
    settings = _settings(*argv)
    writeGrid(settings, OTHER, CURVES, "2026-11-20T10:00:00", "unused")
    negative = {name: [[-reward for reward in curve] for curve in curves] for name, curves in CURVES.items()}
    writeGrid(settings, line, negative, "2026-11-20T10:00:00", "unused")  # ground truth ends below 0
    assert cli.main([*argv, "--report-only", "--no-doc", "--no-append"]) == 0
    out = capsys.readouterr().out
    assert (f"over 1 task: {OTHER} (left out, without a positive ground-truth mean final reward: {line})."
            in out)


def test_no_summary_figure_is_named_when_no_task_has_a_positive_ground_truth(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ["--env", OTHER, "--budget", f"{OTHER}=4000", "--eval-freq", "1000", "--eval-episodes", "1",
            "--observations", "ground_truth", "raw_pixels", "vae", "--seeds", "2", "--bench-dir", "bench",
            "--runs-file", "runs.json", "--image-dir", "images"]
    settings = _settings(*argv)
    model = writeModel(str(tmp_path / "bench" / "srl" / "vae_model"), "vae", 0.42, env=OTHER)
    (tmp_path / settings.configFile(OTHER)).write_text(f"{OTHER}:\n  vae: srl/vae_model\n")
    negative = {name: [[-reward for reward in curve] for curve in curves] for name, curves in CURVES.items()}
    # ground truth ends below 0: no task to score over, but a learned model's metric to correlate
    writeGrid(settings, OTHER, negative, "2026-11-20T10:00:00", bench_models.modelFacts(model)["hash"])
    assert cli.main([*argv, "--report-only", "--no-doc", "--no-append"]) == 0
    out = capsys.readouterr().out
    assert "### Which metric predicts the agent's success?" in out and "No IQM of scores over the tasks" in out
    # the env's own figure is drawn and named; the summary over the tasks is neither
    assert (tmp_path / "images" / f"srl_rl_{OTHER}.png").is_file() and f"srl_rl_{OTHER}.png" in out
    assert not (tmp_path / "images" / plans.SUMMARY_IMAGE).exists() and plans.SUMMARY_IMAGE not in out


def test_an_evaluation_of_one_episode_is_said_in_the_singular(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ["--env", OTHER, "--budget", f"{OTHER}=4000", "--eval-freq", "1000", "--eval-episodes", "1",
            "--observations", "ground_truth", "raw_pixels", "--seeds", "2", "--bench-dir", "bench",
            "--runs-file", "runs.json", "--doc", "srl.md", "--image-dir", "images"]
    writeGrid(_settings(*argv), OTHER, CURVES, "2026-11-20T10:00:00", "unused")
    assert cli.main([*argv, "--report-only", "--no-append"]) == 0
    assert "4,000 steps per run, an evaluation of 1 episode every 1,000 steps;" in (tmp_path / "srl.md").read_text()
    monkeypatch.setattr(analysis.Figure, "supylabel", lambda self, text: labels.append(text))
    labels: list[str] = []
    assert cli.main([*argv, "--report-only", "--no-append"]) == 0
    assert labels == ["evaluation reward (deterministic, mean of 1 episode)"]
