"""The bars of the commands that start runs for you: the sweep's (rl_baselines.sweeps.pipeline.sweepBar) and the
search's (rl_baselines.sweeps.search_trials.TrialProgress), on a fake clock: their ETA is the runs left at the
average rate since the start, so it moves with the clock between two runs' ends, and two runs ending together do not
make it near zero."""
from __future__ import annotations

from rl_baselines.sweeps.pipeline import sweepBar
from rl_baselines.sweeps.search_trials import TrialProgress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _onClock(bar, clock: Clock):
    bar._time = clock
    bar.start_t = bar.last_print_t = clock.now
    return bar


def test_the_sweep_eta_is_the_average_rate_and_moves_with_the_clock():
    clock = Clock()
    bar = _onClock(sweepBar(3, no_progress=False), clock)
    clock.now = 118.0
    bar.update(1)
    clock.now = 118.13  # a second run ends 0.13 s after the first
    bar.update(1)
    assert "ETA 00:09" in str(bar)  # 1 run left at 2 runs per 18.13 s, not at the burst's rate
    clock.now = 132.0  # the last run goes on: the clock and the ETA move
    assert "[00:32, ETA 00:16" in str(bar)
    bar.close()


def test_the_search_bar_is_redrawn_while_trials_run(capsys):
    clock = Clock()
    progress = TrialProgress(2, enabled=True)
    _onClock(progress.bar, clock)
    clock.now = 137.0
    progress.tick()
    assert "00:37" not in capsys.readouterr().err  # not a terminal (a log file): drawn when a trial ends only
    progress.interactive = True  # (on a terminal)
    progress.tick()
    assert "00:37" in capsys.readouterr().err.split("\r")[-1]  # the elapsed time moves without a trial ending
    progress.close()
