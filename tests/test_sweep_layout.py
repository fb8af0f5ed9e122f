"""benchmarks/sweep_layout.py: the layouts it compares, the flags each sweep gets, and its table (the sweeps faked)."""
from __future__ import annotations

from benchmarks import sweep_layout
from benchmarks.srl_rl.env_plans import KUKA

# a fake sweep's wall time (s) by its observation and layout flags
WALLS = {("ground_truth", ()): 80.0, ("ground_truth", ("--workers", "1")): 136.0,
         ("ground_truth", ("--workers", "2", "--vec-env", "subproc")): 100.0,
         ("raw_pixels", ()): 117.0, ("raw_pixels", ("--workers", "1")): 202.0,
         ("raw_pixels", ("--workers", "2", "--vec-env", "subproc")): 140.0}


def test_each_layout_runs_the_benchmarks_arm_and_the_table_compares_it_with_the_default(tmp_path, monkeypatch,
                                                                                      capsys) -> None:
    calls = []

    def fakeSweep(log_dir, runs, steps, extra, env, env_id, srl_model):
        layout = tuple(extra[:extra.index("--random-target")])
        calls.append((srl_model, layout, runs, steps, env_id, extra[len(layout):]))
        return WALLS[(srl_model, layout)], WALLS[(srl_model, layout)] / 2

    monkeypatch.setattr(sweep_layout, "runSweep", fakeSweep)
    results = tmp_path / "bench.md"
    sweep_layout.main(["--steps", "900", "--repeats", "2", "--results-file", str(results)])
    # every layout of every observation, twice; the second repetition in reverse order
    assert [(call[0], call[1]) for call in calls[:3]] == [("ground_truth", ()), ("ground_truth", ("--workers", "1")),
                                                         ("ground_truth", ("--workers", "2", "--vec-env", "subproc"))]
    assert [call[1] for call in calls[6:9]] == [("--workers", "2", "--vec-env", "subproc"), ("--workers", "1"), ()]
    assert len(calls) == 12 and {call[2:5] for call in calls} == {(2, 900, KUKA)}
    # the benchmark's env flags and evaluation episodes, an evaluation every third of the run
    assert calls[0][5] == ["--random-target", "--force-down", "--eval-freq", "300", "--eval-episodes", "3"]
    out = capsys.readouterr().out
    assert "| ground_truth | 1 run at a time, envs in workers | 136.0 | 0.88 | 0.59 |" in out
    assert "| raw_pixels | the default | 117.0 | 1.03 | 1.00 |" in out
    assert "| raw_pixels | 2 runs at a time, envs in workers | 140.0 | 0.86 | 0.84 |" in out
    text = results.read_text()
    assert "## Sweeps of the arm: where the runs' envs step" in text and "python -m benchmarks.sweep_layout" in text


def test_an_evaluation_never_comes_later_than_the_benchmarks() -> None:
    assert sweep_layout.sweepFlags(60_000)[2:4] == ["--eval-freq", "5000"]
    assert sweep_layout.sweepFlags(2)[2:4] == ["--eval-freq", "1"]

