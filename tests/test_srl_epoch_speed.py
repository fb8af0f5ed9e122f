"""benchmarks.srl_epoch_speed: how it reads a training's epochs and writes its tables (timings are never tested)."""
from __future__ import annotations

import json
import os

from conftest import runModule, snapshot

from benchmarks.srl_epoch_speed import AGENTS, ENV_ID, ROOT, epochTimes, formatTables
from rl_baselines.sweeps.sweep import parseTrainArgs


def test_an_epoch_is_the_median_of_the_history_with_updates_counted_from_the_start(tmp_path) -> None:
    history = [{"epoch": 1, "updates": 4, "seconds": 0.9}, {"epoch": 2, "updates": 8, "seconds": 0.3},
               {"epoch": 3, "updates": 12, "seconds": 0.4}]
    (tmp_path / "training_history.json").write_text(json.dumps(history))
    (tmp_path / "exp_config.json").write_text(json.dumps({"batch_size": 64, "srl_model": "vae"}))
    assert epochTimes(str(tmp_path)) == {"seconds": 0.4, "updates": 4, "batch": 64}


def test_the_tables_put_each_encoder_beside_the_vae_and_the_augmented_agent_beside_the_plain_one() -> None:
    tables = formatTables([{"model": "vae", "seconds": 2.0, "updates": 70, "batch": 64},
                           {"model": "atc", "seconds": 3.0, "updates": 17, "batch": 256}],
                          [{"augment": "none", "rate": 200.0}, {"augment": "shift", "rate": 150.0}])
    assert "| vae | 2.0 | 70 (64) | 29 | 2,240 | 1.00 |" in tables
    assert "| atc | 3.0 | 17 (256) | 176 | 1,451 | 1.50 |" in tables
    assert "| --augment shift | 150 | 0.75 |" in tables
    # without the VAE measured, no ratio
    assert "| atc | 3.0 | 17 (256) | 176 | 1,451 | - |" in formatTables(
        [{"model": "atc", "seconds": 3.0, "updates": 17, "batch": 256}], [{"augment": "none", "rate": 1.0}])


def test_bad_input_is_refused_in_one_line_with_nothing_written() -> None:
    docs = os.path.join(ROOT, "docs")
    before = snapshot(docs)
    for flags, named in ((["--models", "nope"], "invalid choice: 'nope' (choose from 'atc', 'autoencoder'"),
                         (["--epochs", "0"], "'0' must be a positive integer")):
        result = runModule("benchmarks.srl_epoch_speed", *flags)  # appends to docs/benchmarks.md unless refused
        assert result.returncode == 2 and named in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and "Machine" not in result.stdout
    assert snapshot(docs) == before


def test_the_pixel_agents_are_plain_drac_and_rad() -> None:
    parsed = {label: parseTrainArgs("ppo2", ENV_ID, "raw_pixels", 0, flags) for label, flags in AGENTS.items()}
    assert [(args["augment"], args["augment_loss"]) for args in parsed.values()] == [
        ("none", "drac"), ("shift", "drac"), ("shift", "rad")]  # (none: the update's flag does nothing)
