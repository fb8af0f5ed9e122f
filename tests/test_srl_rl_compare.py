"""The SRL + RL benchmark against earlier runs (--compare-to FILE, benchmarks.srl_rl.compare) and with another renderer
(--renderer NAME), on synthetic run folders: nothing is trained."""
from __future__ import annotations

import json
import os

import pytest
from srl_rl_bench import CURVES, MOBILE, writeGrid, writeModel, writeRun

from benchmarks.srl_rl import analysis, cli, compare, env_plans, plans, running
from benchmarks.srl_rl import archive as bench_archive
from benchmarks.srl_rl import models as bench_models
from benchmarks.srl_rl import runs as bench_runs
from rl_baselines.sweeps import recorded
from srl_models import prepare
from srl_toolbox.cli import UsageError

KUKA = env_plans.KUKA
SMALL = ["--observations", "ground_truth", "raw_pixels", "vae", "--seeds", "2"]
# The reference renderer, named: MobileRobot's default is sprites.
TINY = ["--renderer", "tinyrenderer"]
# The same tasks drawn by sprites: ground truth and raw pixels end where the tinyrenderer runs of CURVES end (same
# means, final rewards 229/233 against 230/232 and 110/130 against 100/140), the vae far below (150/160 against
# 226/229).
SPRITES = {"ground_truth": [[50, 180, 220, 229], [60, 190, 225, 233]],
           "raw_pixels": [[0, 20, 60, 110], [5, 30, 90, 130]],
           "vae": [[10, 100, 140, 150], [20, 120, 150, 160]]}


def _settings(argv: list[str]) -> plans.Settings:
    """The settings main builds from ``argv`` (relative paths from the current directory)."""
    return cli.settingsFrom(cli.buildParser().parse_args(argv))


def _plannedSettings(specs: list, observation: str) -> dict:
    """:return: the train settings of the observation's planned runs, without the seed (what an earlier group's
    settings are compared with)"""
    return bench_archive.withoutSeed(recorded.specSettings(
        next(spec for spec in specs if plans.specObservation(spec) == observation)))


def _finishedBench(settings: plans.Settings, env: str, curves: dict[str, list[list[float]]], finished_at: str,
                   dataset: str = "data/d") -> str:
    """Every run of the env's grid finished in the settings' bench folder (``curves``), and the vae they used registered
    in the env's config file, trained on ``dataset``; returns the model's hash."""
    bench = os.path.join(settings.base, settings.bench_dir)
    name = f"vae_{env}_{os.path.basename(dataset)}"
    folder = writeModel(os.path.join(bench, "srl", name), "vae", 0.42, 8, env)
    with open(os.path.join(folder, "exp_config.json")) as handle:
        config = json.load(handle)
    with open(os.path.join(folder, "exp_config.json"), "w") as handle:
        json.dump({**config, "data_folder": dataset}, handle)
    with open(os.path.join(settings.base, settings.configFile(env)), "a") as handle:
        handle.write(f"{env}:\n  vae: srl/{name}\n")
    digest = bench_models.modelFacts(folder)["hash"]
    writeGrid(settings, env, curves, finished_at, digest)
    return digest


@pytest.fixture()
def archived_tinyrenderer(tmp_path, monkeypatch) -> str:
    """A first session: MobileRobot's runs drawn by tinyrenderer (--renderer tinyrenderer: its default is sprites)
    archived into <tmp>/runs.json from <tmp>/first; then the current directory is <tmp>/second, empty. Returns the
    archive."""
    archive = str(tmp_path / "runs.json")
    (tmp_path / "first").mkdir()
    monkeypatch.chdir(tmp_path / "first")
    _finishedBench(_settings(["--env", MOBILE, *SMALL, *TINY]), MOBILE, CURVES, "2026-11-20T10:00:00")
    assert cli.main(["--env", MOBILE, *SMALL, *TINY, "--report-only", "--no-doc", "--runs-file", archive]) == 0
    (tmp_path / "second").mkdir()
    monkeypatch.chdir(tmp_path / "second")
    return archive


@pytest.mark.usefixtures("groundTruthAsOthers")
def test_sprites_runs_are_compared_with_the_archived_tinyrenderer_runs(archived_tinyrenderer, tmp_path,
                                                                       capsys) -> None:
    archive = archived_tinyrenderer
    argv = ["--env", MOBILE, KUKA, *SMALL, "--renderer", "sprites"]
    settings = _settings(argv)
    _finishedBench(settings, MOBILE, SPRITES, "2026-11-27T10:00:00", "data/d_sprites")
    _finishedBench(settings, KUKA, CURVES, "2026-11-27T10:00:00")
    doc = tmp_path / "srl.md"
    doc.write_text("# SRL\n")
    assert cli.main([*argv, "--report-only", "--runs-file", archive, "--compare-to", archive, "--doc", str(doc),
                     "--image-dir", str(tmp_path / "images")]) == 0
    text = doc.read_text()
    mobile_part, kuka_part = text[text.index(f"### {MOBILE}"):text.index(f"### {KUKA}")], text[text.index(f"### {KUKA}"):]
    # the main table: this session's sprites runs only (the archived tinyrenderer ones have other keys)
    assert "| vae | 2/2 | 155.0 +/- 5.0 |" in mobile_part and "archived" not in mobile_part.split("####")[0]
    comparison = mobile_part[mobile_part.index(f"#### Against earlier runs (`{archive}`)"):]
    renderer = "renderer tinyrenderer -> sprites"
    assert f"| ground_truth | 2 | 231.0 +/- 2.0 | 2 | 231.0 +/- 1.0 | +0.0 | yes | {renderer} |" in comparison
    assert f"| raw_pixels | 2 | 120.0 +/- 10.0 | 2 | 120.0 +/- 20.0 | +0.0 | yes | {renderer} |" in comparison
    # |155 - 227.5| = 72.5 > 2 * sqrt(5^2 + 1.5^2)
    assert f"| vae | 2 | 155.0 +/- 5.0 | 2 | 227.5 +/- 1.5 | -72.5 | no | {renderer} |" in comparison
    assert "2 of 3 rows within twice the combined standard error; outside: vae (-72.5)." in comparison
    # the comparison comes right after the table, before the verdicts
    assert mobile_part.index("| vae | 2/2 |") < mobile_part.index("#### Against") < mobile_part.index("Learned rep")
    # Kuka has no sprites: its runs keep the default, said once; the archive has no Kuka run of other settings
    note = (f"`--renderer sprites`: {KUKA} does not offer it and keeps its default renderer (lowpoly).")
    assert text.count(note) == 1 and capsys.readouterr().out.count(note) == 1
    assert "(--random-target --force-down)" in kuka_part and f"({' '.join(['--renderer', 'sprites'])})" in mobile_part
    assert f"No run of {KUKA} in `{archive}` with the same run and SRL settings" in kuka_part
    # the sprites runs are archived under their own keys, beside the tinyrenderer ones
    records = json.loads(open(archive).read())
    assert sorted(r["train"]["renderer"] for r in records.values() if r["env"] == MOBILE) == (
        ["sprites"] * 6 + ["tinyrenderer"] * 6)


def test_kuka_runs_of_physics_2_are_compared_with_those_of_physics_1(tmp_path, monkeypatch) -> None:
    """Kuka's runs made under physics version 1 (archived without a physics field) against those of version 2; a
    record of other run settings (another budget), of a seed not planned or of the planned settings themselves is
    not an earlier run."""
    monkeypatch.chdir(tmp_path)
    current = str(tmp_path / "runs.json")
    argv = ["--env", KUKA, *SMALL, "--runs-file", current]
    settings = _settings(argv)
    _finishedBench(settings, KUKA, CURVES, "2026-11-27T10:00:00")
    assert cli.main([*argv, "--report-only", "--no-doc"]) == 0
    assert recorded.envPhysics(KUKA) == 2
    earlier = {}
    for key, record in json.loads(open(current).read()).items():
        old = {name: value for name, value in record.items() if name != "physics"}
        old["eval_rewards"] = [reward - 100 for reward in old["eval_rewards"]]  # version 1 ended 100 lower
        old["date"] = "2026-11-01"
        earlier[bench_archive.archiveKey(KUKA, old["observation"], old["seed"], old["run"], old["srl"], old["train"])] \
            = old
        if old["seed"] == 0:
            budget = {**old, "run": {**old["run"], "steps": 99}}
            earlier[f"{key} other budget"] = budget
            unplanned = {**old, "seed": 7, "train": {**old["train"], "seed": 7}}
            earlier[f"{key} seed 7"] = unplanned
            earlier[key] = record  # the planned settings themselves
    old_file = tmp_path / "physics1.json"
    old_file.write_text(json.dumps(earlier))
    plan = settings.plans[0]
    rows, _ = analysis.summariseEnv(bench_archive.collectRuns(settings, [plan])[0][KUKA], settings.observations, 2)
    compared = compare.compareEnv(compare.loadComparison(str(old_file)), settings, plan, settings.specs(plan), rows)
    assert [(row.observation, row.changes, row.groups, row.group.seeds) for row in compared] == [
        (name, ["physics 1 -> 2"], 1, [0, 1]) for name in ("ground_truth", "raw_pixels", "vae")]
    assert all(row.difference == pytest.approx(100.0) and row.within is False for row in compared)
    doc = tmp_path / "srl.md"
    assert cli.main([*argv, "--report-only", "--compare-to", str(old_file), "--doc", str(doc), "--image-dir",
                     str(tmp_path / "images")]) == 0
    text = doc.read_text()
    assert "| ground_truth | 2 | 231.0 +/- 1.0 | 2 | 131.0 +/- 1.0 | +100.0 | no | physics 1 -> 2 |" in text
    assert ("0 of 3 rows within twice the combined standard error; outside: ground_truth (+100), raw_pixels (+100), "
            "vae (+100).") in text


def _entry(observation: str, seed: int, final: float, date: str, **train) -> dict:
    """An archived record of MobileRobot's plan with the default settings but ``train`` (ground truth or raw pixels)."""
    settings = _settings(["--env", MOBILE, "--observations", observation, "--seeds", "3"])
    plan = settings.plans[0]
    spec = next(spec for spec in settings.specs(plan) if spec.seed == seed)
    return {"format": bench_archive.FORMAT, "env": MOBILE, "observation": observation, "seed": seed,
            "run": settings.runSettings(plan), "srl": None, "train": {**recorded.specSettings(spec), **train},
            "eval_timesteps": [1000, 2000], "eval_rewards": [0.0, final], "date": date}


def test_the_earlier_settings_with_the_most_seeds_then_the_latest_are_compared(tmp_path) -> None:
    # the planned runs are drawn by MobileRobot's default, sprites; some earlier ones by tinyrenderer
    settings = _settings(["--env", MOBILE, "--observations", "ground_truth", "raw_pixels", "--seeds", "3"])
    plan = settings.plans[0]
    assert settings.drawnBy(MOBILE) == "sprites"
    records = [_entry("ground_truth", 0, 200, "2026-11-01", num_cpu=2), _entry("ground_truth", 1, 202, "2026-11-01",
                                                                               num_cpu=2),
               _entry("ground_truth", 0, 100, "2026-11-05", renderer="tinyrenderer"),
               _entry("ground_truth", 1, 102, "2026-11-06", renderer="tinyrenderer"),
               _entry("ground_truth", 2, 50, "2026-10-01", gamma=0.9),
               _entry("raw_pixels", 0, 80, "2026-11-01", renderer="tinyrenderer")]
    archive = tmp_path / "earlier.json"
    archive.write_text(json.dumps({str(index): record for index, record in enumerate(records)}))
    earlier = compare.loadComparison(str(archive))
    groups = compare.earlierGroups(earlier, settings, plan, settings.specs(plan))
    assert [group.seeds for group in groups["ground_truth"]] == [[0, 1], [0, 1], [2]]
    chosen = compare.chosenGroup(groups["ground_truth"])
    assert chosen.train["renderer"] == "tinyrenderer" and chosen.latest == "2026-11-06"  # 2 seeds each: the latest
    truth = bench_runs.loadRun(writeRun(str(tmp_path / "a"), "ground_truth", 0, [0, 0, 0, 101]))
    truth_1 = bench_runs.loadRun(writeRun(str(tmp_path / "b"), "ground_truth", 1, [0, 0, 0, 103]))
    pixels = bench_runs.loadRun(writeRun(str(tmp_path / "c"), "raw_pixels", 0, [0, 0, 0, 81]))
    rows, _ = analysis.summariseEnv([truth, truth_1, pixels], settings.observations, 3)
    compared = compare.compareEnv(earlier, settings, plan, settings.specs(plan), rows)
    table = compare.comparisonTable(compared)
    assert ("| ground_truth | 2 | 102.0 +/- 1.0 | 2 | 101.0 +/- 1.0 | +1.0 | yes | renderer tinyrenderer -> sprites "
            "(of 3 earlier settings, the one with the most seeds (2), then the latest, 2026-11-06) |") in table
    # one seed a side: not compared
    assert "| raw_pixels | 1 | 81.0 | 1 | 80.0 | +1.0 | n/a | renderer tinyrenderer -> sprites |" in table
    assert compare.comparisonLine(compared) == ("1 of 1 rows within twice the combined standard error; outside: none "
                                                "(1 not compared: no earlier run, or fewer than 2 seeds on a side).")
    assert compare.settingsChanges({"gamma": 0.9, "x": [1]}, {"x": [2], "y": True}, 1, 1) == [
        "gamma 0.9 -> (absent)", "x [1] -> [2]", "y (absent) -> true"]


def test_the_committed_archive_compares_each_default_renderer_with_tinyrenderer() -> None:
    """The comparisons issue 27 needs, among the runs of one env per run (`--envs 1`: ppo2's default when they were
    made): every row planned now on MobileRobot (sprites) and Kuka (lowpoly) has archived runs of TinyRenderer that
    differ from it only by the renderer (beside their runs of 4 envs, which a comparison takes first), 3 or 5 seeds
    each (on Kuka, those of its physics version 2, chosen before version 1's, which also differ by the physics). Raw
    pixels, made again under ppo2's raw-pixel default (clip_range_vf 0.2), compare with their unclipped runs of the same
    renderer first (5 seeds), and the TinyRenderer ones differ by both; raw pixels with --augment shift (DrAC's update
    now) with RAD's runs of the same renderer first. The raw-pixel runs of one env trained NatureCNN (ppo2's default
    until 2026-12-06) in float32: `--features-extractor nature --precision float32`."""
    earlier = compare.loadComparison(plans.RUNS_FILE)
    settings = _settings(["--envs", "1", "--features-extractor", "nature", "--precision", "float32"])
    for env, renderer in ((MOBILE, "sprites"), (KUKA, "lowpoly")):
        plan = next(plan for plan in settings.plans if plan.env == env)
        specs = settings.specs(plan)
        groups = compare.earlierGroups(earlier, settings, plan, specs)
        for observation, found in groups.items():  # every row's runs with 4 envs: the latest, compared first
            group = compare.chosenGroup(found)
            assert group.train["num_cpu"] == 4 and len(group.seeds) == (20 if (env, observation) == (
                MOBILE, "ground_truth") else 5)
        groups = {observation: kept for observation, found in groups.items()
                  if (kept := [group for group in found if group.train["num_cpu"] == 1])}
        # every row but curl, whose TinyRenderer runs (made on frames t and t+1) were dropped from the archive
        assert len(groups) == 14 and "curl" not in groups
        for observation, found in groups.items():
            planned = _plannedSettings(specs, observation)
            group = compare.chosenGroup(found)
            assert group.seeds in ([0, 1, 2], [0, 1, 2, 3, 4])  # TinyRenderer ran 3 seeds, or 5 for some rows
            changes = compare.settingsChanges(group.train, planned, group.physics, recorded.envPhysics(env))
            others = [compare.settingsChanges(other.train, planned, other.physics, recorded.envPhysics(env))
                      for other in found if other is not group]
            if observation == "raw_pixels":
                clip = "hp_clip_range_vf (absent) -> 0.2"
                assert changes == [clip] and group.seeds == [0, 1, 2, 3, 4]
                assert [clip, f"renderer tinyrenderer -> {renderer}"] in others
                continue
            if observation == plans.RAW_PIXELS_SHIFT:  # --augment shift, DrAC now: RAD's runs of the same renderer
                update = ["augment_loss rad -> drac", "hp_clip_range_vf (absent) -> 0.2"]  # (DrAC's losses: unshifted)
                assert changes == update and group.seeds == [0, 1, 2, 3, 4]
                assert others == [[*update, f"renderer tinyrenderer -> {renderer}"]]
                continue
            assert changes == [f"renderer tinyrenderer -> {renderer}"]
            # Kuka's 12 rows run before issue 29's also have physics version 1's runs
            assert others == ([[f"renderer tinyrenderer -> {renderer}", "physics 1 -> 2"]]
                              if env == KUKA and observation not in ("atc", "curl") else [])


@pytest.mark.parametrize("argv", [["--precision", "float32"],
                                  ["--features-extractor", "nature", "--precision", "float32"]])
def test_the_committed_archive_compares_four_envs_per_run_with_one_on_every_task(argv) -> None:
    """The benchmark's runs of 4 envs (ppo2's default) against the runs of one env on every task and row: the same
    seeds, renderer and physics, only the number of envs differs (the raw-pixel rows: their runs under the same
    update and CNN, in float32, as the runs of one env trained). The raw-pixel rows compare first with the latest
    group of 5 seeds, MediumCNN's runs in bfloat16 (``--precision bfloat16``, made after those of MediumCNN and of
    NatureCNN, ppo2's default before and the CNN of their runs of one env; with ``--features-extractor nature``,
    MediumCNN's float32 runs where they are as late); their earlier settings also hold the runs of one env, which
    differ from them by that alone."""
    earlier = compare.loadComparison(plans.RUNS_FILE)
    settings = _settings(argv)
    assert [plan.env for plan in settings.plans] == list(env_plans.PLANS)
    for plan in settings.plans:
        specs = settings.specs(plan)
        groups = compare.earlierGroups(earlier, settings, plan, specs)
        assert set(groups) == set(settings.observations), plan.env
        for observation, found in groups.items():
            planned = _plannedSettings(specs, observation)
            group = compare.chosenGroup(found)
            changes = compare.settingsChanges(group.train, planned, group.physics, recorded.envPhysics(plan.env))
            seeds = sorted(int(spec.seed) for spec in specs if plans.specObservation(spec) == observation)
            if plans.modelName(observation) == env_plans.RAW_PIXELS:
                nature = "nature" in argv
                cnn = ["features_extractor medium -> nature"] if nature else []
                latest = [[*cnn, "precision bfloat16 -> float32"], *([cnn] if nature else [])]  # (same-day runs)
                assert changes in latest and group.seeds == seeds, (plan.env, observation, changes)
                if not nature:
                    continue
                group = compare.chosenGroup([group for group in found if group.train["num_cpu"] == 1])
                changes = compare.settingsChanges(group.train, planned, group.physics, recorded.envPhysics(plan.env))
            assert changes == ["num_cpu 1 -> 4"], (plan.env, observation, changes)
            assert group.seeds == seeds


@pytest.mark.parametrize("content, message", [
    (None, "--compare-to .*: no such file"),
    ("not json", "--compare-to .*: cannot be read as JSON"),
    ('{"a run": {"env": "x"}}', "--compare-to .*: the record 'a run' lacks format"),
])
def test_a_missing_or_broken_file_to_compare_with_is_refused_before_anything_is_written(tmp_path, content,
                                                                                         message) -> None:
    target = tmp_path / "earlier.json"
    if content is not None:
        target.write_text(content)
    bench = tmp_path / "bench"
    with pytest.raises(UsageError, match=message):
        cli.main(["--env", MOBILE, "--bench-dir", str(bench), "--runs-file", str(tmp_path / "runs.json"),
                  "--compare-to", str(target)])
    assert not bench.exists() and not (tmp_path / "runs.json").exists()
    with pytest.raises(UsageError, match="--compare-to .*: not a file"):
        cli.main(["--env", MOBILE, "--bench-dir", str(bench), "--compare-to", str(tmp_path)])


@pytest.mark.parametrize("argv, message", [
    (["--env", MOBILE, "--renderer", "lowpoly"],
     f"--renderer lowpoly: none of the envs run \\({MOBILE}\\) offers it; valid choices: tinyrenderer, sprites$"),
    (["--env", KUKA, "--renderer", "sprites"], "valid choices: tinyrenderer, lowpoly$"),
    (["--env", MOBILE, KUKA, "--renderer", "pixels"], "--renderer pixels: .*valid choices: tinyrenderer, sprites, lowpoly$"),
])
def test_a_renderer_no_env_offers_is_refused_before_anything_is_written(tmp_path, argv, message) -> None:
    bench = tmp_path / "bench"
    with pytest.raises(UsageError, match=message):
        cli.main([*argv, "--bench-dir", str(bench)])
    assert not bench.exists()


def test_the_renderer_goes_to_the_envs_that_offer_it_with_datasets_and_models_apart(tmp_path, monkeypatch) -> None:
    """--renderer NAME goes to the envs that offer it; MobileRobot's runs, datasets and models of --renderer sprites
    (its default: the same as without --renderer) are apart from those of --renderer tinyrenderer."""
    monkeypatch.chdir(tmp_path)
    default = _settings(["--env", MOBILE, KUKA, *SMALL])
    sprites = _settings(["--env", MOBILE, KUKA, *SMALL, "--renderer", "sprites"])
    tiny = _settings(["--env", MOBILE, KUKA, *SMALL, *TINY])
    mobile, kuka = sprites.plans
    assert (sprites.envRenderer(MOBILE), sprites.envRenderer(KUKA)) == ("sprites", None)
    for command in (sprites.prepareCommand(mobile), sprites.pipelineCommand(mobile)):
        assert command[command.index("--renderer") + 1] == "sprites"
        assert command[command.index("--srl-config-file") + 1] == os.path.join(plans.DEFAULT_BENCH_DIR,
                                                                             "srl_models_sprites.yaml")
    for command in (tiny.prepareCommand(mobile), tiny.pipelineCommand(mobile)):
        assert command[command.index("--renderer") + 1] == "tinyrenderer"
        assert command[command.index("--srl-config-file") + 1] == os.path.join(plans.DEFAULT_BENCH_DIR,
                                                                             "srl_models.yaml")
    for command in (sprites.prepareCommand(kuka), sprites.pipelineCommand(kuka)):  # its default: lowpoly
        assert "--renderer" not in command
        assert command[command.index("--srl-config-file") + 1] == os.path.join(plans.DEFAULT_BENCH_DIR,
                                                                             "srl_models_lowpoly.yaml")
    assert sprites.prepareCommand(kuka) == default.prepareCommand(kuka)
    assert sprites.pipelineCommand(kuka) == default.pipelineCommand(kuka)
    # Kuka's runs are the default's (same run folders); MobileRobot's sprites runs are its default's, with other run ids
    # and archive keys than its tinyrenderer ones
    assert [spec.run_id for spec in sprites.specs(kuka)] == [spec.run_id for spec in default.specs(kuka)]
    run = plans.Settings.runSettings(mobile)
    for spec, other, by_default in zip(sprites.specs(mobile), tiny.specs(mobile), default.specs(mobile)):
        assert spec.run_id != other.run_id and recorded.specSettings(spec)["renderer"] == "sprites"
        assert by_default.run_id == spec.run_id and recorded.specSettings(other)["renderer"] == "tinyrenderer"
        keys = [bench_archive.archiveKey(MOBILE, plans.specObservation(one), one.seed, run, None,
                                         recorded.specSettings(one)) for one in (spec, other, by_default)]
        assert keys[0] != keys[1] and keys[0] == keys[2]
    # prepare draws the sprites dataset apart, so its models (under <srl dir>/<dataset name>/) are apart too
    made = [prepare.plan(prepare.buildParser().parse_args(settings.prepareCommand(mobile)[2:]))
            for settings in (sprites, tiny, default)]
    assert made[0].dataset_settings["renderer"] == "sprites" and made[1].dataset_settings["renderer"] == "tinyrenderer"
    assert os.path.basename(made[0].dataset_folder).endswith("_sprites_seed0")
    assert made[0].dataset_folder != made[1].dataset_folder
    assert made[0].expected["vae"]["data_folder"] != made[1].expected["vae"]["data_folder"]
    assert made[0].config_file != made[1].config_file
    assert (made[2].dataset_folder, made[2].config_file) == (made[0].dataset_folder, made[0].config_file)
    assert sprites.fingerprint() != default.fingerprint() != tiny.fingerprint()
    assert default.fingerprint() == _settings(["--env", MOBILE, KUKA, *SMALL]).fingerprint()


@pytest.mark.usefixtures("groundTruthAsOthers")
def test_a_sprites_model_leaves_the_tinyrenderer_models_and_records_alone(archived_tinyrenderer, monkeypatch,
                                                                         capsys) -> None:
    """In one bench folder: the tinyrenderer vae stays registered in srl_models.yaml when prepare registers the
    sprites one (another recipe: another dataset) in srl_models_sprites.yaml, and the archived tinyrenderer records of
    the vae are not dropped as stale."""
    archive = archived_tinyrenderer
    tiny = _settings(["--env", MOBILE, *SMALL, *TINY, "--runs-file", archive])
    sprites = _settings(["--env", MOBILE, *SMALL, "--renderer", "sprites", "--runs-file", archive])
    _finishedBench(tiny, MOBILE, CURVES, "2026-11-27T10:00:00")
    _finishedBench(sprites, MOBILE, SPRITES, "2026-11-27T10:00:00", "data/d_sprites")
    tiny_model = bench_models.registeredFacts(tiny, MOBILE)["vae"]
    sprite_model = bench_models.registeredFacts(sprites, MOBILE)["vae"]
    assert not bench_models.sameModel(tiny_model, sprite_model)
    calls = []
    monkeypatch.setattr(running, "runStage", lambda command, nice, cwd=plans.ROOT: calls.append(command) or 0)
    running.runEverything(sprites)
    assert "dropped" not in capsys.readouterr().out and len(json.loads(open(archive).read())) == 6
    assert bench_models.registeredFacts(tiny, MOBILE)["vae"]["hash"] == tiny_model["hash"]
    # a sprites model trained again with another recipe still drops the archived sprites records of the vae
    assert cli.main(["--env", MOBILE, *SMALL, "--renderer", "sprites", "--runs-file", archive, "--report-only",
                     "--no-doc"]) == 0
    assert len(json.loads(open(archive).read())) == 12
    bench = os.path.join(sprites.base, sprites.bench_dir)
    writeModel(os.path.join(bench, "srl", "vae_new"), "vae", 0.5, state_dim=16)
    with open(os.path.join(bench, "srl_models_sprites.yaml"), "w") as handle:
        handle.write(f"{MOBILE}:\n  vae: srl/vae_new\n")
    running.runEverything(sprites)
    left = json.loads(open(archive).read())
    assert sorted((r["observation"], r["train"]["renderer"]) for r in left.values() if r["observation"] == "vae") == [
        ("vae", "tinyrenderer"), ("vae", "tinyrenderer")]
