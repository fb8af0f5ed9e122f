"""benchmarks.encoder_speed: what it times and how it reports it (timings are never tested)."""
from __future__ import annotations

import os

import numpy as np
import torch
from conftest import REPO, runModule, snapshot

from benchmarks.encoder_speed import encode, formatTables, frozenEncoder, main, waitPolicyText
from srl_models.models import LearnedSRLModel


def test_the_encoder_is_frozen_and_fed_as_a_run_feeds_it() -> None:
    encoder = frozenEncoder(32)
    assert not encoder.training and not any(parameter.requires_grad for parameter in encoder.parameters())
    assert encoder.conv[0].weight.is_contiguous(memory_format=torch.channels_last)
    images = np.random.default_rng(1).integers(0, 256, (3, 32, 32, 3), dtype=np.uint8)
    model = LearnedSRLModel.__new__(LearnedSRLModel)  # only its image conversion is used
    model.device = torch.device("cpu")
    with torch.inference_mode():
        assert torch.equal(encode(encoder, images), encoder(model._imagesTensor(images))[1])
        assert encode(frozenEncoder(32, torch.bfloat16), images, torch.bfloat16).dtype == torch.bfloat16


def test_the_tables_put_each_variant_beside_the_default() -> None:
    tables = formatTables(2, {"float32, 1 thread (the default)": 0.5, "bfloat16 weights and images": 0.4}, 0.0002,
                          [("linear 1024 -> 32", 0.01)])
    assert "| float32, 1 thread (the default) | 0.500 | 1.00x |" in tables
    assert "| bfloat16 weights and images | 0.400 | 1.25x |" in tables
    assert "largest state difference from float32: 0.0002" in tables and "| linear 1024 -> 32 | 0.010 |" in tables


def test_a_run_appends_every_variant_and_layer_to_the_results_file(tmp_path) -> None:
    results = tmp_path / "results.md"
    results.write_text("# results\n")
    assert main(["--size", "16", "--calls", "2", "--repeats", "2", "--results-file", str(results)]) == 0
    text = results.read_text()
    assert "python -m benchmarks.encoder_speed --size 16 --calls 2 --repeats 2" in text
    assert f"idle threads: {waitPolicyText()}." in text  # (OMP_WAIT_POLICY=PASSIVE unless the environment says)
    for row in ("float32, 1 thread (the default)", "float32, 2 threads", "float32, contiguous", "float32, oneDNN off",
                "bfloat16 weights and images", "3 -> 16 channels, 16x16 in", "64 -> 64 channels, 2x2 in",
                "linear 64 -> 32"):
        assert f"| {row}" in text, row
    assert torch.backends.mkldnn.enabled and torch.get_num_threads() >= 1  # the settings it changed are restored


def test_the_wait_policy_names_what_the_environment_sets(monkeypatch) -> None:
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    assert waitPolicyText() == "OpenMP's default (spinning)"
    monkeypatch.setenv("GOMP_SPINCOUNT", "300000")
    assert waitPolicyText() == "GOMP_SPINCOUNT=300000"


def test_bad_input_is_refused_in_one_line_with_nothing_written() -> None:
    before = snapshot(os.path.join(REPO, "docs"))
    result = runModule("benchmarks.encoder_speed", "--size", "48")
    assert result.returncode == 2 and "--size" in result.stderr and "48" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Machine" not in result.stdout
    assert snapshot(os.path.join(REPO, "docs")) == before
