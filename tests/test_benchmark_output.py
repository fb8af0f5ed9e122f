"""What the speed benchmarks print: all_envs_speed a Machine line and the table's header before its rows, as the
others do; train_speed one line per measurement (no run folders of its timed runs), a seed that never reached the
target said in words; argument_checks times the on-policy learners both ways."""
from __future__ import annotations

from stable_baselines3 import PPO
from torch.distributions import Distribution

from benchmarks import all_envs_speed, argument_checks, train_speed


def test_all_envs_speed_prints_the_machine_and_the_header(monkeypatch, capsys) -> None:
    monkeypatch.setattr(all_envs_speed, "stepsPerSecond", lambda env_id, srl_model, seconds: 100.0)
    all_envs_speed.main(["MobileRobotGymEnv-v0", "--no-append"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("Machine: ") and lines[1].startswith("| env | ground_truth steps/s")
    assert lines[3] == "| MobileRobotGymEnv-v0 | 100 | 100 | sprites |"


def test_train_speed_prints_no_run_folder_and_says_not_reached(tmp_path, monkeypatch, capsys) -> None:
    seconds, trained = train_speed.timeToolbox(64, str(tmp_path / "run"))
    assert seconds > 0 and trained >= 64 and "Run folder" not in capsys.readouterr().out
    monkeypatch.setattr(train_speed, "timeToolbox", lambda steps, log_dir: (1.0, steps))
    monkeypatch.setattr(train_speed, "timePlainSB3", lambda steps, log_dir: 1.0)
    monkeypatch.setattr(train_speed, "stepsToTarget", lambda seed, budget, log_dir: (None, 12.0))
    train_speed.main(["--repeats", "1", "--steps", "64", "--learning-budget", "1000", "--seeds", "0", "--no-append"])
    out = capsys.readouterr().out
    assert "seed 0: steps to mean reward 150: not reached in 1000 steps" in out and "None" not in out


def test_train_speed_shows_the_count_and_time_left_and_says_where_it_appended(tmp_path, monkeypatch, capsys) -> None:
    """Minutes at its defaults: each measurement's line says how many are done and about how long is left; the
    block's file is named at the end (here --results-file, never docs/benchmarks.md)."""
    monkeypatch.setattr(train_speed, "timeToolbox", lambda steps, log_dir: (1.0, steps))
    monkeypatch.setattr(train_speed, "timePlainSB3", lambda steps, log_dir: 1.0)
    monkeypatch.setattr(train_speed, "stepsToTarget", lambda seed, budget, log_dir: (500, 160.0))
    results = tmp_path / "results.md"
    train_speed.main(["--repeats", "2", "--steps", "64", "--learning-budget", "1000", "--seeds", "0", "1",
                      "--results-file", str(results)])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("]")[0] for line in lines if line.startswith("[")] == [
        f"[{done}/4, about 0 min left" for done in range(1, 5)]
    assert "] repeat 1: toolbox 1.00 s" in lines[1] and "] seed 1: steps to mean reward 150: 500" in lines[3]
    assert lines[-1] == f"appended to {results}" and "## Train loop, ppo2" in results.read_text()


def test_argument_checks_times_ppo2_without_and_with_torchs_checks(tmp_path, monkeypatch, capsys) -> None:
    seen = []
    original = PPO.train

    def train(self, *args, **kwargs):
        seen.append(Distribution._validate_args)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(PPO, "train", train)
    monkeypatch.setattr(argument_checks, "warmSprites", lambda: (0.0, 0))
    results = tmp_path / "results.md"
    rows = argument_checks.main(["--algos", "ppo2", "acktr", "--modes", "ground_truth", "--steps", "256", "--rounds",
                                 "2", "--results-file", str(results)])
    assert [(row["algo"], row["mode"]) for row in rows] == [("ppo2", "ground_truth"), ("acktr", "ground_truth")]
    assert all(len(row["checked"]) == 2 and row["ratio"] > 0 for row in rows)
    assert False in seen and True in seen  # the two ways really differ
    out = capsys.readouterr().out
    assert "| ppo2, ground_truth | " in out and "| acktr, ground_truth | " in out
    assert out.count("without the checks:") == 4
    assert "## On-policy learners without and with torch.distributions' argument checks" in results.read_text()
