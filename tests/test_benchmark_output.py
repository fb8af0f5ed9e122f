"""What the speed benchmarks print: all_envs_speed a Machine line and the table's header before its rows, as the
others do; train_speed one line per measurement (no run folders of its timed runs), a seed that never reached the
target said in words."""
from __future__ import annotations

from benchmarks import all_envs_speed, train_speed


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
