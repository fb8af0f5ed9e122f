"""benchmarks.srl_speed's goal sentences: verdicts against the issue's figures and the ground-truth ceiling."""
from benchmarks.srl_speed import goalVerdicts, measuredEnvs
from rl_baselines.core.registry import defaultEnvs


def _row(mode: str, renderer: str, rate: float, num_cpu: int = 2) -> dict:
    return {"mode": mode, "num_cpu": num_cpu, "renderer": renderer, "rate": rate}


def test_verdicts_and_ceiling():
    rows = [_row("vae", "tinyrenderer", 200.0), _row("vae", "sprites", 500.0), _row("ground_truth", "", 800.0),
            _row("raw_pixels", "tinyrenderer", 100.0), _row("raw_pixels", "sprites", 600.0),
            _row("vae", "sprites", 5000.0, num_cpu=1)]
    text = goalVerdicts(rows)
    assert "Goal vae, 2 envs, >= 4x 281 steps/s (2 envs' baseline): not met (sprites: 500 steps/s, 1.78x, 2.50x this " \
           "run's tinyrenderer)." in text
    assert "Goal raw_pixels, 2 envs, >= 3x 168 steps/s (2 envs' baseline): met (sprites: 600 steps/s" in text
    assert "ground truth, 2 envs, 800 steps/s (no image, no encoder) = 4.00x this run's tinyrenderer vae." in text
    # the fixed baselines are one machine's: the verdicts say where a goal is judged
    assert ("The baselines are one reference machine's figures; machines of this kind differ by up to 1.8x, so a goal "
            "is judged side by side with e6eec80, the goals' start, on the same machine") in text
    assert "reference machine" not in goalVerdicts([_row("ground_truth", "", 800.0)])  # (no goal measured)


def test_the_goals_are_judged_at_ppo2s_default_envs_too():
    """What a user gets: ppo2's default envs (4) against the same fixed 2-env figures, beside the 2-env verdict."""
    envs = defaultEnvs("ppo2")
    assert envs != 2
    rows = [_row("vae", "sprites", 900.0), _row("vae", "sprites", 1300.0, num_cpu=envs),
            _row("raw_pixels", "sprites", 290.0, num_cpu=envs)]
    text = goalVerdicts(rows)
    assert "Goal vae, 2 envs, >= 4x 281 steps/s (2 envs' baseline): not met (sprites: 900 steps/s, 3.20x)." in text
    assert (f"Goal vae, {envs} envs (ppo2's default), >= 4x 281 steps/s (2 envs' baseline): met (sprites: 1,300 "
            "steps/s, 4.63x).") in text
    assert (f"Goal raw_pixels, {envs} envs (ppo2's default), >= 3x 168 steps/s (2 envs' baseline): not met (sprites: "
            "290 steps/s, 1.73x).") in text
    assert "Goal raw_pixels, 2 envs" not in text  # not measured: no verdict
    assert measuredEnvs() == sorted({1, 2, envs})


def test_no_ceiling_without_ground_truth():
    assert "Ceiling" not in goalVerdicts([_row("vae", "tinyrenderer", 200.0), _row("vae", "sprites", 500.0)])


def test_the_report_names_the_renderer_that_drew_the_vaes_frames():
    """The VAE's dataset is recorded by the dataset generator without --renderer: MobileRobot's default renderer
    (sprites) draws it, and the appended notes say so (not TinyRenderer)."""
    from unittest import mock

    from benchmarks import srl_speed
    row = {"rate": 100.0, "env_ms": 1.0, "encode_ms": 0.0, "rest_ms": 1.0, "threads": 1, "placement": ""}
    with mock.patch.object(srl_speed, "trainVAE", return_value="model"), \
            mock.patch.object(srl_speed, "timeRun", return_value=row), \
            mock.patch.object(srl_speed, "appendReport") as append:
        srl_speed.main(["--steps", "64", "--num-cpu", "1", "--renderers", "tinyrenderer"])
    notes = append.call_args.args[2]
    assert "frames drawn by sprites, the env's default renderer" in notes and "TinyRenderer's images" not in notes
