"""benchmarks.zoo_compare: the time to the threshold read from monitor files, the rl_zoo3 hyperparameters file, refusals."""
import json
import os
import threading
import time

import numpy as np
import pytest
import yaml

from benchmarks import zoo_compare
from benchmarks.srl_rl.archive import loadArchive
from benchmarks.srl_rl.plans import RUNS_FILE
from rl_baselines.core.hyperparams import plainValue
from rl_baselines.core.registry import defaultEnvs
from rl_baselines.rl_algorithm.ppo2 import PPO2Model


def _monitor(path: str, t_start: float, lengths: list[int], seconds: list[float]) -> None:
    with open(path, "w") as stream:
        stream.write("#" + json.dumps({"t_start": t_start, "env_id": zoo_compare.ENV}) + "\n")
        stream.write("r,l,t\n")
        for length, second in zip(lengths, seconds):
            stream.write(f"1.0,{length},{second}\n")


def test_seconds_and_steps_to_threshold(tmp_path):
    monitor = tmp_path / "0.monitor.csv"
    _monitor(str(monitor), 1000.0, [100, 100, 100], [1.0, 2.0, 3.0])
    np.savez(tmp_path / "evaluations.npz", timesteps=np.array([100, 200, 300]),
             results=np.array([[0.0, 0.0], [4.0, 6.0], [10.0, 10.0]]))
    result = zoo_compare.runResult(str(tmp_path), str(monitor), launch=990.0, wall=20.0, threshold=5.0)
    assert result["steps_to_threshold"] == 200
    assert result["seconds_to_threshold"] == pytest.approx(12.0)  # launch to the end of the episode ending at 200
    assert result["final_eval"] == 10.0 and result["steps"] == 300
    missed = zoo_compare.runResult(str(tmp_path), str(monitor), launch=990.0, wall=20.0, threshold=11.0)
    assert missed["steps_to_threshold"] is None and missed["seconds_to_threshold"] is None
    assert "not reached" in zoo_compare.table([("run", 0, missed)])
    assert zoo_compare.summary([("raw", 0, missed), ("raw", 1, result), ("raw", 2, {**result, "steps_to_threshold": 400,
                                                                              "seconds_to_threshold": 20.0})]) == \
        "- raw: reached the threshold on 2 of 3 seed(s): median 300 steps, 16 s"


def test_the_archived_threshold_is_the_srl_rl_benchmarks(monkeypatch):
    """90% of ground truth's mean final reward over the archived runs of the SRL + RL benchmark's default
    configuration (ppo2's default envs, 20 seeds on Nav 2D), not every ground-truth run the archive keeps (its grid of
    one env per run too); none when that mean is not positive (docs/srl.md)."""
    archive = loadArchive(RUNS_FILE)
    truth = [record for record in archive.values() if record["env"] == zoo_compare.ENV
             and record["observation"] == "ground_truth"]
    default = [record["eval_rewards"][-1] for record in truth if record["train"]["num_cpu"] == defaultEnvs("ppo2")]
    assert len(default) == 20 and len(truth) > 20
    assert zoo_compare.groundTruthThreshold() == pytest.approx(0.9 * sum(default) / 20)
    for record in truth:
        record["eval_rewards"] = [*record["eval_rewards"][:-1], -20.0]
    monkeypatch.setattr(zoo_compare, "loadArchive", lambda path: archive)
    assert zoo_compare.groundTruthThreshold() is None


def test_episode_ending_after_the_step_is_used(tmp_path):
    monitor = tmp_path / "0.monitor.csv"
    _monitor(str(monitor), 50.0, [150, 150], [4.0, 9.0])
    assert zoo_compare.secondsToStep(40.0, str(monitor), 200) == pytest.approx(19.0)
    assert zoo_compare.secondsToStep(40.0, str(monitor), 301) is None


def test_zoo_gets_ppo2_defaults_and_the_toolbox_env_keywords(tmp_path):
    params = zoo_compare.zooHyperparams(5000)[zoo_compare.ENV]
    for name, spec in PPO2Model.HYPERPARAMS.items():  # what the toolbox's raw-pixel run uses
        assert params[name] == plainValue(spec.default if spec.pixel_default is None else spec.pixel_default)
    assert params["clip_range_vf"] == 0.2 and params["target_kl"] is None  # SB3's value for "off", not a word
    assert params["policy"] == "CnnPolicy" and params["n_envs"] == 4  # ppo2's default envs, as the toolbox run has
    yaml.safe_load(yaml.safe_dump(zoo_compare.zooHyperparams(5000)))  # a file rl_zoo3 reads
    command = zoo_compare.zooCommand(5000, 1000, 3, str(tmp_path), "hp.yml")
    assert command[command.index("--env-kwargs") + 1:command.index("--env-kwargs") + 3] == \
        ["srl_model:'raw_pixels'", "is_discrete:True"]
    assert zoo_compare.childEnv("/zoo")["PYTHONPATH"].split(os.pathsep)[0] == "/zoo"
    assert zoo_compare.childEnv()["OMP_NUM_THREADS"] == "1"


@pytest.mark.parametrize("argv, message", [
    (["--learned", "nope"], "--learned: unknown or not a trainable SRL model 'nope'; choose from"),
    (["--learned", "downsample"], "--learned: unknown or not a trainable SRL model 'downsample'; choose from"),
    (["--zoo-packages", "/nonexistent"], "--zoo-packages: no rl_zoo3 in /nonexistent; run make bench-zoo"),
    (["--hyperparam", "clip_range_vf:0"], "--hyperparam 'clip_range_vf:0': hyperparameter 'clip_range_vf': '0' is not"),
    (["--hyperparam", "vf_coeff:0.1"], "--hyperparam 'vf_coeff:0.1': unknown hyperparameter 'vf_coeff'"),
])
def test_refusals_write_nothing(tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        zoo_compare.runCommand(zoo_compare.main, [*argv, "--bench-dir", str(tmp_path / "bench")])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "bench").exists()


def test_a_run_keeps_the_facts_of_the_invocation_that_made_it(tmp_path):
    # a stand-in for train: writes a run folder with its evaluations and monitor file
    script = ("import json, os, sys, numpy as np; run = os.path.join(sys.argv[1], 'run'); os.makedirs(run); "
              "np.savez(os.path.join(run, 'evaluations.npz'), timesteps=np.array([100]), results=np.array([[7.0]])); "
              "open(os.path.join(run, '0.monitor.csv'), 'w').write('#' + json.dumps({'t_start': 0.0}) + "
              "'\\nr,l,t\\n7.0,100,1.0\\n')")

    def build(folder):
        return ["-c", script, folder], zoo_compare.childEnv(), "run", "*.monitor.csv"

    settings = {"steps": 100, "obs": "srl_splits"}
    made = zoo_compare.runOnce("learned", settings, str(tmp_path), 5.0, build, {"prepare_s": 134.0})
    assert not made["reused"] and made["prepare_s"] == 134.0 and made["final_eval"] == 7.0
    again = zoo_compare.runOnce("learned", settings, str(tmp_path), 5.0, build, {"prepare_s": 5.0})
    assert again["reused"] and again["prepare_s"] == 134.0  # the prepare that trained the model, not the reuse


@pytest.mark.parametrize("workers, together", [(2, True), (1, False)])
def test_both_programs_raw_pixels_run_side_by_side_with_two_workers(tmp_path, monkeypatch, capsys, workers, together):
    zoo = tmp_path / "zoo" / "rl_zoo3"
    zoo.mkdir(parents=True)
    (zoo / "train.py").write_text("")
    monkeypatch.setattr(zoo_compare, "prepareModel", lambda learned, bench_dir, quick: ("srl.yaml", 42.0))
    running, overlapped, seeds = set(), [], {}
    lock = threading.Lock()

    def fakeRun(name, settings, bench_dir, threshold, build, extra=None):
        with lock:
            running.add(name)
            seeds[name] = (settings["seed"], build(name)[0])
        time.sleep(0.3)
        with lock:
            overlapped.append(set(running))
            running.discard(name)
        reached = settings["seed"] == 1 or settings["obs"] != "raw_pixels"
        return {"settings": settings, **(extra or {}), "steps_to_threshold": 10_000 if reached else None,
                "seconds_to_threshold": 5.0 * (1 + settings["seed"]) if reached else None,
                "final_eval": 1.0, "wall_s": 9.0, "steps": 20_000, "reused": False}
    monkeypatch.setattr(zoo_compare, "runOnce", fakeRun)
    zoo_compare.main(["--workers", str(workers), "--threshold", "5", "--zoo-packages", str(tmp_path / "zoo"),
                      "--bench-dir", str(tmp_path / "bench"), "--no-append", "--seeds", "0", "1"])
    assert ({"seed_0/toolbox_raw_pixels", "seed_0/zoo_raw_pixels"} in overlapped) == together
    for name, (seed, command) in seeds.items():  # each seed's runs in a folder of their own, given that seed
        assert name.startswith(f"seed_{seed}/") and command[command.index("--seed") + 1] == str(seed)
    assert len(seeds) == 6
    out = capsys.readouterr().out
    rows = [line.split(" | ")[:2] for line in out.splitlines() if line.startswith(("| toolbox", "| rl_zoo3"))]
    assert rows == [["| toolbox ppo2, raw_pixels", "0"], ["| toolbox ppo2, raw_pixels", "1"],
                    ["| toolbox ppo2, srl_splits", "0"], ["| toolbox ppo2, srl_splits", "1"],
                    ["| rl_zoo3 ppo, raw_pixels", "0"], ["| rl_zoo3 ppo, raw_pixels", "1"]]
    assert "- toolbox ppo2, raw_pixels: reached the threshold on 1 of 2 seed(s): median 10,000 steps, 10 s" in out
    assert "- toolbox ppo2, srl_splits: reached the threshold on 2 of 2 seed(s): median 10,000 steps, 8 s" in out


def test_given_hyperparameters_reach_both_programs_and_keep_the_default_runs(tmp_path, monkeypatch, capsys):
    zoo = tmp_path / "zoo" / "rl_zoo3"
    zoo.mkdir(parents=True)
    (zoo / "train.py").write_text("")
    monkeypatch.setattr(zoo_compare, "prepareModel", lambda learned, bench_dir, quick: ("srl.yaml", 42.0))
    made = {}

    def fakeRun(name, settings, bench_dir, threshold, build, extra=None):
        made[name] = (settings, build(os.path.join(bench_dir, name))[0])
        return {"settings": settings, **(extra or {}), "steps_to_threshold": None, "seconds_to_threshold": None,
                "final_eval": 1.0, "wall_s": 9.0, "steps": 20_000, "reused": False}
    monkeypatch.setattr(zoo_compare, "runOnce", fakeRun)
    bench = tmp_path / "bench"
    zoo_compare.main(["--threshold", "5", "--zoo-packages", str(tmp_path / "zoo"), "--bench-dir", str(bench),
                      "--no-append", "--seeds", "0", "--hyperparam", "clip_range_vf:0.2", "vf_coef:0.1"])
    assert sorted(made) == ["seed_0/toolbox_raw_pixels__clip_range_vf-0.2__vf_coef-0.1",
                            "seed_0/toolbox_srl_splits__clip_range_vf-0.2__vf_coef-0.1",
                            "seed_0/zoo_raw_pixels__clip_range_vf-0.2__vf_coef-0.1"]  # not the default runs' folders
    for name, (settings, command) in made.items():
        assert settings["hyperparams"] == {"clip_range_vf": "0.2", "vf_coef": "0.1"}
        # a raw-pixel result made under other raw-pixel defaults is not reused; the learned runs' are
        assert settings.get("pixel_defaults") == ({"clip_range_vf": "0.2"} if "raw_pixels" in name else None)
        if "rl_baselines.train" in command:
            assert command[command.index("--hyperparam") + 1:][:2] == ["clip_range_vf:0.2", "vf_coef:0.1"]
        else:
            with open(command[command.index("-conf") + 1]) as stream:
                params = yaml.safe_load(stream)[zoo_compare.ENV]
            assert params["clip_range_vf"] == 0.2 and params["vf_coef"] == 0.1 and params["target_kl"] is None
    assert "| toolbox ppo2, raw_pixels, clip_range_vf 0.2, vf_coef 0.1 | 0 |" in capsys.readouterr().out
    raw = zoo_compare.toolboxCommand("raw_pixels", 10, 5, 0, "d", None)
    assert "--hyperparam" not in raw  # defaults: no flag
    # rl_zoo3's CnnPolicy builds SB3's NatureCNN, not ppo2's default MediumCNN: the toolbox's raw-pixel runs take it too
    assert raw[raw.index("--features-extractor") + 1] == "nature"
    assert raw[raw.index("--precision") + 1] == "float32"  # (rl_zoo3's, whatever ppo2's default)
    assert "--features-extractor" not in zoo_compare.toolboxCommand("srl_splits", 10, 5, 0, "d", "srl.yaml")


def test_each_run_made_shows_the_count_and_time_left_and_the_block_says_where(tmp_path, monkeypatch, capsys):
    """About 35 min a seed, the runs silent (--no-progress): each run that ends says how many of the runs this
    invocation makes are done and about how long is left (a stored result is not counted), and the appended block's
    file is named."""
    zoo = tmp_path / "zoo" / "rl_zoo3"
    zoo.mkdir(parents=True)
    (zoo / "train.py").write_text("")
    monkeypatch.setattr(zoo_compare, "prepareModel", lambda learned, bench_dir, quick: ("srl.yaml", 42.0))
    bench = tmp_path / "bench"
    stored = {"threshold": 5.0, "steps": 200_000, "eval_freq": 10_000, "n_envs": 4, "seed": 0, "obs": "srl_splits"}
    (bench / "seed_0" / "toolbox_srl_splits").mkdir(parents=True)
    (bench / "seed_0" / "toolbox_srl_splits" / zoo_compare.RESULT_FILE).write_text(json.dumps({"settings": stored}))

    def fakeRun(name, settings, bench_dir, threshold, build, extra=None):
        reused = zoo_compare.storedResult(os.path.join(bench_dir, name), settings) is not None
        return {"settings": settings, **(extra or {}), "steps_to_threshold": 10_000, "seconds_to_threshold": 5.0,
                "final_eval": 1.0, "wall_s": 9.0, "steps": 20_000, "reused": reused}
    monkeypatch.setattr(zoo_compare, "runOnce", fakeRun)
    results = tmp_path / "results.md"
    zoo_compare.main(["--threshold", "5", "--zoo-packages", str(tmp_path / "zoo"), "--bench-dir", str(bench),
                      "--seeds", "0", "--workers", "1", "--results-file", str(results)])
    lines = capsys.readouterr().out.splitlines()
    assert f"2 of 3 run(s) to make (1 stored in {bench})" in lines
    assert [line for line in lines if line.startswith("[")] == [
        "[1/2, about 0 min left] toolbox ppo2, raw_pixels, seed 0: 10,000 steps to the threshold, 9 s in all",
        "[2/2, about 0 min left] rl_zoo3 ppo, raw_pixels, seed 0: 10,000 steps to the threshold, 9 s in all"]
    assert lines[-1] == f"appended to {results}" and "## Time to threshold" in results.read_text()


def test_prepare_says_what_it_prepares_before_it_starts(tmp_path, monkeypatch, capsys):
    """srl_models.prepare trains the learned model before any run, silent (--no-progress, its output in a log) for
    minutes: the benchmark printed nothing meanwhile."""
    seen = {}

    def fakeRun(command, env, log_file):
        seen["before"], seen["log"] = capsys.readouterr().out, log_file
        return 0.0, 3.0
    monkeypatch.setattr(zoo_compare, "timedRun", fakeRun)
    assert zoo_compare.prepareModel("srl_splits", str(tmp_path), quick=True) == (
        os.path.join(str(tmp_path), "srl_models.yaml"), 3.0)
    assert seen["before"] == (f"preparing the learned model srl_splits on {zoo_compare.ENV} (srl_models.prepare: a "
                              "dataset and a training; may take minutes, seconds when already prepared), before any "
                              f"run; log: {seen['log']}\n")
