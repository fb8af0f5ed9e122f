"""benchmarks.pixel_update_speed: the update it times is ppo2's from raw pixels, and how it reports it (timings are
never tested)."""
from __future__ import annotations

import pytest
import torch
from conftest import runModule

from benchmarks.pixel_update_speed import (
    PIXEL_HYPERPARAMS,
    ceiling,
    defaultCeilings,
    formatTable,
    main,
    measure,
    minibatchStep,
    pixelPolicy,
    randomMinibatch,
    variantsOf,
)
from rl_baselines.rl_algorithm import image_features, sharded_features
from rl_baselines.rl_algorithm.image_features import MediumCNN, NatureCNN, SmallCNN, nativeBFloat16, resolvedPrecision
from rl_baselines.rl_algorithm.ppo2 import PPO2Model


def test_the_hyperparameters_are_those_of_a_raw_pixel_run() -> None:
    assert PIXEL_HYPERPARAMS["n_epochs"] == 10 and PIXEL_HYPERPARAMS["batch_size"] == 64
    assert PIXEL_HYPERPARAMS["clip_range_vf"] == 0.2  # ppo2's raw-pixel default, as a float for the loss


@pytest.mark.parametrize("extractor, kind", [("nature", NatureCNN), ("medium", MediumCNN), ("small", SmallCNN)])
@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_a_minibatch_step_trains_every_layer_in_float32(extractor, kind, precision) -> None:
    policy = pixelPolicy(36, extractor, precision)
    assert isinstance(policy.features_extractor, kind) and policy.features_extractor.precision == precision
    before = [parameter.detach().clone() for parameter in policy.parameters()]
    loss = minibatchStep(policy, randomMinibatch(36, 8))
    assert torch.isfinite(torch.tensor(loss))
    after = list(policy.parameters())
    assert all(parameter.dtype == torch.float32 for parameter in after)  # (autocast keeps the weights in float32)
    assert all(not torch.equal(old, new) for old, new in zip(before, after))  # Adam moved every parameter


@pytest.mark.parametrize("native", [True, False])
def test_the_variants_and_the_ceiling(monkeypatch, native: bool) -> None:
    """The ceiling sentence is that of ppo2's default precision on this CPU (float32, whatever the CPU computes)."""
    monkeypatch.setattr(image_features, "nativeBFloat16", lambda: native)
    variants = variantsOf(["medium", "nature", "small"], [64, 256], [1, 2])
    assert len(variants) == 3 * 2 * 3 + 3  # 1 thread, 2 of torch's, 2 in shards
    assert [variant for variant in variants if variant["precision"] == "bfloat16"] == [  # (ppo2's default extractor)
        {"extractor": "medium", "batch": 64, "threads": count, "sharded": sharded, "precision": "bfloat16"}
        for count, sharded in ((1, False), (2, False), (2, True))]
    assert ceiling(0.25) == pytest.approx(400.0)  # 10 epochs of 0.25 ms per sample: 2.5 ms of update per env step
    rows = [{**variant, "ms": 8.0 if variant["precision"] == "bfloat16" else 12.8 if variant["sharded"] else 16.0}
            for variant in variants]
    table = formatTable(rows)
    assert "| nature | float32 | 64 | 1 | one | 16.00 | 0.250 | 400 |" in table
    assert "| medium | bfloat16 | 64 | 2 | torch's | 8.00 | 0.125 | 800 |" in table
    assert "| small | float32 | 256 | 2 | shards | 12.80 | 0.050 | 2,000 |" in table
    precision = resolvedPrecision(PPO2Model.DEFAULT_PRECISION, "cpu")
    assert precision == "float32"
    assert defaultCeilings(rows) == (f"Ceiling of ppo2's default update from raw pixels (medium, {precision}, "
                                     "minibatches of 64, 10 epochs): 400 steps/s on 1 thread(s), 500 steps/s on 2 "
                                     "thread(s) in shards.")
    assert defaultCeilings([row for row in rows if row["batch"] == 256]) == ""


def test_a_run_appends_its_table_to_the_results_file(tmp_path, capsys) -> None:
    results = tmp_path / "results.md"
    results.write_text("# results\n")
    assert main(["--size", "36", "--steps", "1", "--repeats", "1", "--threads", "1", "--batch-sizes", "4",
                 "--extractors", "small", "--results-file", str(results)]) == 0
    text = results.read_text()
    assert "python -m benchmarks.pixel_update_speed --size 36 --steps 1" in text
    assert "| small | float32 | 4 | 1 | one |" in text and "| medium | bfloat16 | 64 | 1 | one |" in text
    assert f"The bfloat16 rows: bfloat16 {'in hardware' if nativeBFloat16() else 'emulated'} on this CPU" in text
    assert torch.get_num_threads() >= 1
    # a line per measurement, with the countdown
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("[")]
    assert [line.split("]")[0] for line in lines] == ["[1/2, about 0 min left", "[2/2, about 0 min left"]
    assert lines[0].endswith(" ms") and "round 1: small, float32, minibatch 4, 1 thread(s) (one): " in lines[0]


def test_a_minibatch_of_one_is_refused_in_one_line(tmp_path) -> None:
    result = runModule("benchmarks.pixel_update_speed", "--batch-sizes", "1", "--results-file", str(tmp_path / "r.md"))
    assert result.returncode == 2 and not (tmp_path / "r.md").exists()
    assert result.stderr.strip().splitlines() == [
        "error: argument --batch-sizes: invalid size 1 (2 or more: SB3 normalises the advantages over each "
        "minibatch)"]


def test_a_sharded_variant_trains_in_shards_and_gives_the_threads_back(monkeypatch) -> None:
    """The shards variant times ppo2's sharded update (the CNN's minibatch in 2 shards), torch's threads put back."""
    shards = []
    original = sharded_features._withGradients

    def recorded(*args):
        shards.append(args[1].shape[0])
        return original(*args)
    monkeypatch.setattr(sharded_features, "_withGradients", recorded)
    threads = torch.get_num_threads()
    rows = measure(36, [{"extractor": "small", "batch": 32, "threads": 2, "sharded": True, "precision": "float32"}],
                   steps=1, repeats=1)
    assert rows[0]["ms"] > 0 and torch.get_num_threads() == threads
    assert shards and set(shards) == {16}
