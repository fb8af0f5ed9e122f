"""benchmarks.kuka_ppo_speed: what it measures and how it reads the goal (the timings themselves are never tested)."""
from __future__ import annotations

from benchmarks.kuka_ppo_speed import configurations, goalVerdicts
from environments.kuka.kuka_button_env import KukaButtonGymEnv


def test_every_observation_is_measured_under_both_physics_and_images_with_every_renderer():
    measured = configurations()
    assert ("ground_truth", "reference", "tinyrenderer") in measured
    assert ("ground_truth", "default", "tinyrenderer") in measured
    for observation in ("vae", "raw_pixels"):
        assert {(physics, renderer) for name, physics, renderer in measured if name == observation} == {
            ("reference", "tinyrenderer"), ("default", "tinyrenderer"), ("default", "lowpoly")}


def test_the_goal_is_read_from_the_default_configuration():
    rates = {("ground_truth", "reference", "tinyrenderer"): 100.0, ("ground_truth", "default", "tinyrenderer"): 160.0,
             ("vae", "reference", "tinyrenderer"): 50.0, ("vae", "default", "tinyrenderer"): 60.0,
             ("vae", "default", "lowpoly"): 90.0, ("raw_pixels", "reference", "tinyrenderer"): 40.0,
             ("raw_pixels", "default", "tinyrenderer"): 40.0, ("raw_pixels", "default", "lowpoly"): 44.0}
    verdicts = goalVerdicts(rates)
    assert "ground_truth: default 1.60x the reference physics with tinyrenderer (met by default" in verdicts
    # images are read at the env's default renderer (lowpoly on the arms), against the reference physics and renderer
    assert "vae: default, drawn by lowpoly 1.80x the reference physics with tinyrenderer (met by default, goal 1.5x)." \
        in verdicts
    assert "raw_pixels: default, drawn by lowpoly 1.10x the reference physics with tinyrenderer (not met by default" \
        in verdicts


def test_an_option_faster_than_the_default_is_reported_beside_it(monkeypatch):
    monkeypatch.setattr(KukaButtonGymEnv, "DEFAULT_RENDERER", "tinyrenderer")
    rates = {("ground_truth", "reference", "tinyrenderer"): 100.0, ("ground_truth", "default", "tinyrenderer"): 120.0,
             ("vae", "reference", "tinyrenderer"): 50.0, ("vae", "default", "tinyrenderer"): 60.0,
             ("vae", "default", "lowpoly"): 90.0, ("raw_pixels", "reference", "tinyrenderer"): 40.0,
             ("raw_pixels", "default", "tinyrenderer"): 40.0, ("raw_pixels", "default", "lowpoly"): 44.0}
    verdicts = goalVerdicts(rates)
    # an option's rate is reported beside, never counted as the default's
    assert ("vae: default, drawn by tinyrenderer 1.20x the reference physics with tinyrenderer (not met by default, "
            "goal 1.5x), 1.80x with --renderer lowpoly.") in verdicts


def test_the_report_names_the_renderer_that_drew_the_vaes_frames():
    """The VAE's dataset is recorded by the dataset generator without --renderer: the env's default renderer draws
    it, and the appended notes say so (not TinyRenderer)."""
    from unittest import mock

    from benchmarks import kuka_ppo_speed
    with mock.patch.object(kuka_ppo_speed, "trainVAE", return_value="model"), \
            mock.patch.object(kuka_ppo_speed, "timeRun", return_value=100.0), \
            mock.patch.object(kuka_ppo_speed, "appendReport") as append:
        kuka_ppo_speed.main(["--steps", "64", "--repeats", "1"])
    notes = append.call_args.args[2]
    assert "frames drawn by lowpoly, the env's default renderer" in notes and "TinyRenderer's frames" not in notes


def test_each_measurement_shows_the_count_and_the_time_left(capsys):
    """Minutes of measurements at the default settings: each line says how many are done and about how long is left."""
    from unittest import mock

    from benchmarks import kuka_ppo_speed
    with mock.patch.object(kuka_ppo_speed, "trainVAE", return_value="model"), \
            mock.patch.object(kuka_ppo_speed, "timeRun", return_value=100.0):
        kuka_ppo_speed.main(["--steps", "64", "--repeats", "2", "--no-append"])
    lines = [line for line in capsys.readouterr().out.splitlines() if "steps/s" in line and "[" in line]
    total = 2 * len(configurations())
    assert [line.split("]")[0].strip() for line in lines] == [
        f"[{done}/{total}, about 0 min left" for done in range(1, total + 1)]
