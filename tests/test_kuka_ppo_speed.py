"""benchmarks.kuka_ppo_speed: what it measures and how it reads the goal (the timings themselves are never tested)."""
from __future__ import annotations

from benchmarks.kuka_ppo_speed import configurations, goalVerdicts
from environments.kuka.kuka_button_env import KukaButtonGymEnv
from rl_baselines.core.registry import defaultEnvs


def test_every_observation_is_measured_from_the_reference_to_the_default():
    measured = configurations()
    envs = defaultEnvs("ppo2")
    assert envs > 1  # ppo2's default: else the default and the one-env rows are one configuration
    assert {row[1:] for row in measured if row[0] == "ground_truth"} == {
        ("reference", "tinyrenderer", 1), ("default", "tinyrenderer", 1), ("default", "tinyrenderer", envs)}
    for observation in ("vae", "raw_pixels"):
        assert {row[1:] for row in measured if row[0] == observation} == {
            ("reference", "tinyrenderer", 1), ("default", "tinyrenderer", 1), ("default", "lowpoly", 1),
            ("default", "lowpoly", envs)}
    assert len(measured) == len(set(measured))


def rates(**changes: float) -> dict:
    """:return: steps/s of every configuration: 100 for the references, 110 elsewhere, but ``changes`` (keyed
    observation_physics_renderer_envs)"""
    table = {row: 100.0 if row[1] == "reference" else 110.0 for row in configurations()}
    for name, value in changes.items():
        observation, physics, renderer, envs = name.rsplit("_", 3)
        table[(observation, physics, renderer, int(envs))] = value
    return table


def test_the_goal_is_read_from_the_default_configuration():
    envs = defaultEnvs("ppo2")
    verdicts = goalVerdicts(rates(**{f"ground_truth_default_tinyrenderer_{envs}": 193.0,
                                     "ground_truth_default_tinyrenderer_1": 131.0,
                                     f"vae_default_lowpoly_{envs}": 180.0, "vae_default_lowpoly_1": 150.0,
                                     f"raw_pixels_default_lowpoly_{envs}": 140.0}))
    assert (f"ground_truth: default ({envs} envs) 1.93x the reference (physics version 1, tinyrenderer, 1 env; met by "
            "default, goal 1.5x), 1.31x on 1 env.") in verdicts
    # images are read at the env's default renderer (lowpoly on the arms) and ppo2's default envs
    assert (f"vae: default (drawn by lowpoly, {envs} envs) 1.80x the reference (physics version 1, tinyrenderer, 1 "
            "env; met by default, goal 1.5x), 1.50x on 1 env.") in verdicts
    # the one-env row faster than the default is said once
    slower = goalVerdicts(rates(**{f"vae_default_lowpoly_{envs}": 150.0, "vae_default_lowpoly_1": 180.0}))
    assert "1.50x the reference (physics version 1, tinyrenderer, 1 env; met by default, goal 1.5x), 1.80x on 1 env." \
        in slower
    assert f"raw_pixels: default (drawn by lowpoly, {envs} envs) 1.40x the reference" in verdicts
    assert "not met by default, goal 1.5x), 1.10x on 1 env." in verdicts


def test_a_configuration_faster_than_the_default_is_reported_beside_it(monkeypatch):
    envs = defaultEnvs("ppo2")
    monkeypatch.setattr(KukaButtonGymEnv, "DEFAULT_RENDERER", "tinyrenderer")
    verdicts = goalVerdicts(rates(**{f"vae_default_tinyrenderer_{envs}": 120.0, "vae_default_lowpoly_1": 180.0}))
    # an option's rate is reported beside, never counted as the default's
    assert (f"vae: default (drawn by tinyrenderer, {envs} envs) 1.20x the reference (physics version 1, "
            "tinyrenderer, 1 env; not met by default, goal 1.5x), 1.10x on 1 env, 1.80x with --renderer lowpoly on 1 "
            "env.") in verdicts


def test_the_default_runs_ppo2s_envs_in_workers_and_the_reference_one_env_here(tmp_path):
    """Only the reference's physics is patched into the env class of this process: its run must keep its one env
    here, and the default must run ppo2's default envs (the command's own ``--num-cpu``)."""
    from unittest import mock

    from benchmarks import kuka_ppo_speed
    commands = []

    def trainCommand(argv):
        commands.append(argv)
        return mock.Mock(exit_code=0, num_timesteps=64)
    timers = mock.Mock(seconds={"learn": 1.0})
    with mock.patch.object(kuka_ppo_speed.train, "trainCommand", side_effect=trainCommand), \
            mock.patch.object(kuka_ppo_speed, "Timers", return_value=timers):
        kuka_ppo_speed.timeRun("vae", "reference", "tinyrenderer", 1, 64, str(tmp_path), "model")
        kuka_ppo_speed.timeRun(*kuka_ppo_speed.defaultConfiguration("vae"), 64, str(tmp_path), "model")
    reference, default = ([argv[argv.index(flag) + 1] for flag in ("--num-cpu", "--renderer", "--torch-threads")]
                          for argv in commands)
    assert reference == ["1", "tinyrenderer", "1"]
    assert default == [str(defaultEnvs("ppo2")), "lowpoly", "0"]


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
