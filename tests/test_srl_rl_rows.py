"""The SRL + RL benchmark's rows of issue 29 (benchmarks.srl_rl.plans): the contrastive models (atc, curl) and raw
pixels with ``--augment shift``, a variant told from the plain raw-pixel runs by the value of its setting, with run
folders, archive keys, table cells and curve styles of its own. Synthetic run folders: nothing is trained."""
from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import numpy as np
import pytest
from matplotlib.colors import to_hex, to_rgb
from srl_rl_bench import CURVES, MOBILE, writeRun

from benchmarks.srl_rl import analysis, cli, env_plans, plans, running
from benchmarks.srl_rl import archive as bench_archive
from benchmarks.srl_rl import runs as bench_runs
from rl_baselines.sweeps import pipeline, recorded
from rl_baselines.sweeps.sweep import expandGrid
from srl_models.registry import learnedModels

SHIFT = plans.RAW_PIXELS_SHIFT


def _settings(argv: list[str]) -> plans.Settings:
    """The settings main builds from ``argv``."""
    return cli.settingsFrom(cli.buildParser().parse_args(argv))


def _spec(model: str, *train_args: str) -> SimpleNamespace:
    return SimpleNamespace(srl_model=model, seed=0, train_args=tuple(train_args))


def test_the_new_rows_follow_the_learned_models_in_the_default_plan() -> None:
    assert {"atc", "curl"} <= set(learnedModels())  # prepare trains them: they are installed learned models
    order = list(plans.OBSERVATIONS)
    assert order.index("srl_splits") < order.index("atc") < order.index("curl") < order.index(plans.GT_SCALE)
    # raw pixels with train's --augment shift as a user runs it: ppo2's default augmented update (DrAC); a run of
    # --augment-loss rad is the row's with another train setting, as a run of another default would be
    assert order[-1] == SHIFT and plans.VARIANTS[SHIFT] == plans.Variant(
        "raw_pixels", ("--augment", "shift"), {"augment": "shift"}, plans.VARIANTS[SHIFT].description)
    settings = _settings([])
    assert settings.observations == order and settings.seeds == 5
    # atc and curl are learned models prepare trains (at their own defaults: no --augment on the prepare command);
    # raw pixels with a shift is no learned model and needs none
    assert "atc" in settings.learned and "curl" in settings.learned and SHIFT not in settings.learned
    assert settings.models[-2:] == ["atc", "curl"] and "raw_pixels" not in settings.models
    for plan in settings.plans:
        prepare = settings.prepareCommand(plan)
        assert prepare[prepare.index("--srl-model") + 1:prepare.index("--srl-model") + 1 + len(settings.models)] == (
            settings.models) and "--augment" not in prepare
    # the quick mode keeps its three rows; the new ones can be chosen there too
    assert _settings(["--quick"]).observations == list(plans.QUICK_OBSERVATIONS)
    quick = _settings(["--quick", "--observations", SHIFT, "atc"])
    assert quick.observations == [SHIFT, "atc"] and quick.learned == ["atc"] and quick.models == ["atc"]
    alone = _settings(["--observations", SHIFT])
    assert alone.learned == [] and alone.models == [] and alone.srlSettings(alone.plans[0]) is None


@pytest.mark.usefixtures("groundTruthAsOthers")
def test_the_pipeline_commands_run_the_new_rows(tmp_path) -> None:
    settings = _settings(["--env", MOBILE])
    plan = settings.plans[0]
    plain, scaled, shifted = settings.gridCommands(plan)

    def models(command: list[str]) -> list[str]:
        return command[command.index("--srl-model") + 1:command.index("--num-iteration")]

    assert models(plain)[-2:] == ["atc", "curl"] and "--augment" not in plain
    assert models(scaled) == ["srl_splits"] and scaled[-1] == "--srl-ground-truth-scale"
    assert models(shifted) == ["raw_pixels"] and shifted[-2:] == ["--augment", "shift"]
    assert "--augment-loss" not in shifted
    specs = settings.specs(plan)
    rows = [plans.specObservation(spec) for spec in specs]
    assert all(rows.count(name) == 5 for name in plans.OBSERVATIONS) and len(rows) == 5 * len(plans.OBSERVATIONS)
    mine = [spec for spec in specs if plans.specObservation(spec) == SHIFT]
    assert all(spec.srl_model == "raw_pixels" for spec in mine)
    pixels = {spec.run_id for spec in specs if plans.specObservation(spec) == "raw_pixels"}
    assert pixels.isdisjoint(spec.run_id for spec in mine)  # run folders of its own
    # the pipeline names the variant's runs as the specs do: the report reads the runs the command made
    args, train_args = pipeline.buildParser().parse_known_args(shifted[2:])
    named = expandGrid(args.algo, args.env, args.srl_model, list(range(5)), train_args, str(tmp_path), plans.ROOT)
    assert sorted(spec.run_id for spec in named) == sorted(spec.run_id for spec in mine)
    # a variant's missing seed gets a command with its flags, the plain row's its own
    one = [spec for spec in specs if spec.seed == 1 and spec.srl_model == "raw_pixels"]
    assert settings.pipelineCommands(plan, one) == [settings.pipelineCommand(plan, ["raw_pixels"], [1]),
                                                    settings.pipelineCommand(plan, [SHIFT], [1])]
    # its time estimate is raw pixels' (no run measured yet), the contrastive models' a learned model's
    assert running.expectedRunSeconds(plan, SHIFT, {}) == running.expectedRunSeconds(plan, "raw_pixels", {})
    assert running.expectedRunSeconds(plan, "atc", {}) == running.expectedRunSeconds(plan, "vae", {})


RAD = ("--augment-loss", "rad")


@pytest.mark.parametrize("train_args, row", [
    (("--augment", "shift"), SHIFT),
    (("--augment=shift",), SHIFT),
    (("--num-timesteps", "10", "--augment", "shift", "--eval-freq", "5"), SHIFT),
    (("--augment", "shift", *RAD), SHIFT),  # RAD's update: the row with another train setting (its digest's)
    (("--augment", "none"), "raw_pixels"),
    ((), "raw_pixels"),
    (("--augment", "shift", "--augment", "none"), "raw_pixels"),  # argparse keeps the last one
    (("--augment", "none", "--augment", "shift"), SHIFT),
    (("--renderer", "shift"), "raw_pixels"),  # the value alone is not the flag
    (("--augment", *RAD), "raw_pixels"),
])
def test_a_spec_is_the_variants_only_with_the_flag_and_its_value(train_args, row) -> None:
    assert plans.specObservation(_spec("raw_pixels", *train_args)) == row


def test_a_spec_of_another_model_with_the_variants_flags_is_that_models() -> None:
    assert plans.specObservation(_spec("srl_splits", "--augment", "shift", "--augment-loss", "rad")) == "srl_splits"
    assert plans.specObservation(_spec("raw_pixels", "--augment-loss", "rad", "--augment", "shift")) == SHIFT
    assert plans.specObservation(_spec("vae", "--augment", "shift")) == "vae"
    assert plans.specObservation(_spec("srl_splits", "--srl-ground-truth-scale")) == plans.GT_SCALE
    assert plans.specObservation(_spec("raw_pixels", "--srl-ground-truth-scale")) == "raw_pixels"


@pytest.mark.parametrize("args, row", [
    ({"srl_model": "raw_pixels", "augment": "none"}, "raw_pixels"),  # train's default, truthy: a plain run
    ({"srl_model": "raw_pixels"}, "raw_pixels"),  # written before --augment existed
    ({"srl_model": "raw_pixels", "augment": "shift"}, SHIFT),  # written before --augment-loss: RAD's update
    ({"srl_model": "raw_pixels", "augment": "shift", "augment_loss": "rad"}, SHIFT),
    ({"srl_model": "raw_pixels", "augment": "shift", "augment_loss": "drac"}, SHIFT),
    ({"srl_model": "raw_pixels", "augment": "none", "augment_loss": "drac"}, "raw_pixels"),
    ({"srl_model": "vae", "augment": "shift"}, "vae"),
    ({"srl_model": "srl_splits", "srl_ground_truth_scale": False}, "srl_splits"),
    ({"srl_model": "srl_splits", "srl_ground_truth_scale": True}, plans.GT_SCALE),
    ({"srl_model": SHIFT}, SHIFT),  # an archived record names its row
])
def test_a_run_is_the_variants_only_with_the_variants_value(args, row) -> None:
    assert plans.argsObservation(args) == row


def test_run_folders_and_archive_keys_tell_the_augmented_runs_from_the_plain_ones(tmp_path) -> None:
    settings = _settings(["--env", MOBILE, "--observations", "ground_truth", "raw_pixels", SHIFT, "--seeds", "1"])
    plan = settings.plans[0]
    specs = {plans.specObservation(spec): spec for spec in settings.specs(plan)}
    records = {}
    for name, spec in specs.items():  # args.json as train writes it: augment "none" for the plain runs
        folder = writeRun(str(tmp_path / name), spec.srl_model, 0, CURVES[spec.srl_model][0], spec=spec)
        records[name] = bench_runs.loadRun(folder)
        assert records[name].observation == name
    assert (records["raw_pixels"].run.args["augment"], records[SHIFT].run.args["augment"]) == ("none", "shift")
    run = settings.runSettings(plan)
    keys = {name: bench_archive.archiveKey(MOBILE, name, 0, run, None, recorded.specSettings(spec))
            for name, spec in specs.items()}
    assert len(set(keys.values())) == 3
    # the digest alone tells them apart too (the augmentation is a result-changing train setting)
    assert (bench_archive.archiveKey(MOBILE, "x", 0, run, None, recorded.specSettings(specs["raw_pixels"]))
            != bench_archive.archiveKey(MOBILE, "x", 0, run, None, recorded.specSettings(specs[SHIFT])))
    # a plain raw-pixel record is never taken for the augmented row: the same seed of both, archived
    entries = dict(bench_archive.archiveEntry(settings, plan, dataclasses.replace(
        records[name], train=recorded.specSettings(spec)), None, None, "here") for name, spec in specs.items())
    matches = bench_archive.archivedMatches(entries, settings, plan, list(specs.values()), {})
    assert {name: entry["observation"] for (name, _), entry in matches.items()} == {name: name for name in specs}
    plain_only = {key: entry for key, entry in entries.items() if entry["observation"] != SHIFT}
    assert set(bench_archive.archivedMatches(plain_only, settings, plan, [specs[SHIFT]], {})) == set()
    # nor a run of RAD's update (--augment-loss rad, or recorded before the flag): the row's earlier settings
    for rad in ({**recorded.specSettings(specs[SHIFT]), "augment_loss": "rad"},
                {name: value for name, value in recorded.specSettings(specs[SHIFT]).items() if name != "augment_loss"}):
        rad_entries = dict([bench_archive.archiveEntry(settings, plan, dataclasses.replace(records[SHIFT], train=rad),
                                                       None, None, "here")])
        assert len({*rad_entries, *entries}) == len(entries) + 1  # a key of its own
        assert set(bench_archive.archivedMatches(rad_entries, settings, plan, [specs[SHIFT]], {})) == set()


def test_the_table_shows_no_gtc_nor_probe_for_pixels_and_both_for_the_new_models(tmp_path) -> None:
    records = [bench_runs.loadRun(writeRun(str(tmp_path / f"{name}_{seed}"), name, seed, CURVES[curve][seed]))
               for name, curve in (("ground_truth", "ground_truth"), ("raw_pixels", "raw_pixels"), ("atc", "vae"))
               for seed in range(3)]
    shifted = []
    for seed in range(3):  # as good as ground truth: better than raw pixels
        record = bench_runs.loadRun(writeRun(str(tmp_path / f"shift_{seed}"), "raw_pixels", seed,
                                             CURVES["ground_truth"][seed]))
        record.run.args["augment"] = "shift"
        shifted.append(record)
    observations = ["ground_truth", "raw_pixels", "atc", "curl", SHIFT]
    rows, threshold = analysis.summariseEnv(records + shifted, observations, 3, {"curl": "not prepared"})
    assert [len(row.runs) for row in rows] == [3, 3, 3, 0, 3]
    facts = {"atc": {"gtc": 0.61, "probe_r2": 0.733, "knn_mse": 0.1, "state_dim": 32},
             "raw_pixels": {"gtc": 0.99, "probe_r2": 0.99, "state_dim": 1}}  # never shown for pixels
    table = analysis.envTable(MOBILE, rows, threshold, facts)
    cells = [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines()]
    header, lines = cells[0], {line[0]: line for line in cells[2:]}
    gtc, probe = header.index("GTC (state dim)"), header.index("probe R^2")
    assert all(len(line) == len(header) for line in lines.values())
    assert (lines["ground_truth"][gtc], lines["ground_truth"][probe]) == ("1 (the state itself)", "1")
    assert (lines["raw_pixels"][gtc], lines["raw_pixels"][probe]) == ("- (pixels)", "-")
    assert (lines[SHIFT][gtc], lines[SHIFT][probe]) == ("- (pixels)", "-")
    assert (lines["atc"][gtc], lines["atc"][probe]) == ("0.610 (32)", "0.733")
    assert (lines["curl"][2], lines["curl"][gtc], lines["curl"][probe]) == ("missing: not prepared", "not prepared", "")
    # a model evaluated before the probe existed: n/a
    older = analysis.envTable(MOBILE, rows, threshold, {"atc": {"gtc": 0.61, "state_dim": 32}})
    assert "| 0.610 (32) | n/a |" in older
    # the augmented row is compared with raw pixels (Welch's p, the threshold), not counted as a learned model
    assert not math.isnan(rows[-1].p_value) and lines[SHIFT][header.index("p (Welch vs raw pixels)")] != "baseline"
    sentences = analysis.verdicts(rows, threshold, ["atc", "curl"])
    assert sentences[0].endswith("): none.")  # as good as ground truth, but no learned representation
    assert "raw pixels never reached it): atc, raw_pixels_shift." in sentences[1]
    assert "(Welch): atc (better), raw_pixels_shift (better)." in sentences[2]
    analysis.plotEnv(str(tmp_path / "curves.png"), env_plans.PLANS[MOBILE], rows, threshold)
    assert (tmp_path / "curves.png").read_bytes()[:4] == b"\x89PNG"


def test_a_column_whose_last_panel_is_empty_numbers_its_steps_on_the_panel_above(tmp_path, monkeypatch) -> None:
    """Three panels on two columns: the right column's bottom panel is hidden, and its steps were numbered nowhere
    (the panels share their x axis, which numbers only the bottom row's)."""
    names = ("ground_truth", "raw_pixels", "supervised", "vae", "inverse")
    records = [bench_runs.loadRun(writeRun(str(tmp_path / f"{name}_{seed}"), name, seed, CURVES["vae"][seed]))
               for name in names for seed in range(2)]
    rows, threshold = analysis.summariseEnv(records, list(names), 2, {})
    drawn = []
    monkeypatch.setattr(analysis.Figure, "savefig", lambda figure, *args, **kwargs: drawn.append(figure))
    analysis.plotEnv(str(tmp_path / "curves.png"), env_plans.PLANS[MOBILE], rows, threshold)
    panels = drawn[0].axes
    assert [axes.get_visible() for axes in panels] == [True, True, True, False]
    drawn[0].canvas.draw()
    numbered = [any(label.get_visible() and label.get_text() for label in axes.get_xticklabels())
                for axes in panels[:3]]
    assert numbered == [False, True, True]  # top left: the bottom left numbers its column


def test_curve_styles_and_panels_of_the_new_rows() -> None:
    # a variant: its model's colour darker, dash-dotted (the same grey hid raw pixels under their augmented row)
    assert analysis.curveStyle(SHIFT) == {"color": "#545454", "linestyle": "-."}  # raw pixels' 0.55 grey x 0.6
    srl_splits = to_rgb(analysis.curveStyle("srl_splits")["color"])
    assert analysis.curveStyle(plans.GT_SCALE)["linestyle"] == "-."
    np.testing.assert_allclose(to_rgb(analysis.curveStyle(plans.GT_SCALE)["color"]),
                               np.multiply(srl_splits, 0.6), atol=1 / 255)
    every = [analysis.curveStyle(name)["color"] for name in plans.OBSERVATIONS]
    assert len({to_hex(color) for color in every}) == len(plans.OBSERVATIONS)
    new = [analysis.curveStyle(name)["color"] for name in ("atc", "curl", SHIFT)]
    assert len(set(new)) == 3 and "black" not in new  # one panel, three colours, none of ground truth's
    assert analysis.panelGroups(plans.OBSERVATIONS)[-1] == ["atc", "curl", SHIFT]
    # every learned model a colour of its own (the summary's IQM panel tells them by colour: curl had random's red)
    learned = [name for name in plans.OBSERVATIONS if name not in ("ground_truth", "raw_pixels", *plans.VARIANTS)]
    colors = [analysis.curveStyle(name)["color"] for name in learned]
    assert len(set(colors)) == len(learned) and not {"black", "0.55"} & set(colors)


@pytest.mark.usefixtures("groundTruthAsOthers")
def test_a_command_covers_finished_runs_so_that_the_missing_ones_run_at_once() -> None:
    settings = plans.Settings([env_plans.PLANS[MOBILE]], ["ground_truth", "raw_pixels"], [], 2)
    plan = settings.plans[0]
    missing = [SimpleNamespace(srl_model=name, seed=seed, train_args=())
               for name, seed in [("ground_truth", 1), ("raw_pixels", 0), ("raw_pixels", 1)]]
    # ground truth's seed 0 finished in the bench folder: one command over both workers (the pipeline skips it)
    assert settings.pipelineCommands(plan, missing, {("ground_truth", 0)}) == [settings.pipelineCommand(plan)]
    # not finished there (only archived): no command may run it again
    assert settings.pipelineCommands(plan, missing) == [settings.pipelineCommand(plan, ["ground_truth"], [1]),
                                                        settings.pipelineCommand(plan, ["raw_pixels"], [0, 1])]
