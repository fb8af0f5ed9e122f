"""The demos (make demo, make srl-demo): srl_demo's chain on a tiny dataset names files that exist; --no-vis and a
run too short for an episode are said; the visdom hint comes before training and only when no server answers; one
port setting for both demos and make visdom."""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest
import yaml
from conftest import REPO
from test_prepare import ENV_ID, TINY

from replay import demo, srl_demo
from rl_baselines.runs import train
from srl_models import prepare
from srl_toolbox.cli import UsageError


@pytest.mark.slow
def test_srl_demo_tiny(tmp_path, monkeypatch, capsys):
    """make srl-demo's chain on a tiny dataset: every file it names exists."""
    monkeypatch.chdir(tmp_path)
    log_dir = tmp_path / "demo"
    assert srl_demo.main(["--log-dir", str(log_dir), "--num-timesteps", "64", "--prepare-args", *TINY]) == 0
    out = capsys.readouterr().out
    listed = {line.split()[0] + " " + line.split()[1]: line.split()[2] for line in out[out.index("SRL demo finished"):]
              .splitlines()[1:] if len(line.split()) > 2 and line.startswith("  ")}
    for key in ("latent space", "nearest states", "decoded latents", "replay GIF", "run folder", "model folder"):
        assert os.path.exists(listed[key]), (key, out)
    reconstructions = [line.split() for line in out.splitlines() if line.startswith("  reconstructions ")]
    assert len(reconstructions) == 1 and os.path.isfile(reconstructions[0][1]), out
    assert "Random actions, 10 episodes: mean episode reward" in out and "Mean episode reward over" in out
    assert yaml.safe_load((log_dir / "srl_models.yaml").read_text())[ENV_ID][srl_demo.SRL_MODEL]


@pytest.mark.slow
def test_the_demos_take_no_vis_and_say_what_they_did_not_make(tmp_path, monkeypatch, capsys):
    """The visdom warning's --no-vis was refused by the demos; a demo too short for an episode named a learning
    curve that was never drawn; --prepare-args overriding the demo's own prepare flags failed only at step 2."""
    monkeypatch.chdir(tmp_path)
    assert demo.main(["--log-dir", str(tmp_path / "demo"), "--num-timesteps", "64", "--no-vis"]) == 0
    out = capsys.readouterr().out
    assert "learning curve  none (no training episode finished)" in out
    assert "visdom_server" not in out  # no live curve to watch: the hint is left out
    assert "-m replay.enjoy_baselines --log-dir " in out
    with pytest.raises(UsageError, match="--prepare-args --srl-model: the demo sets"):
        srl_demo.main(["--log-dir", str(tmp_path / "srl_demo"), "--prepare-args", "--srl-model", "autoencoder"])
    assert not (tmp_path / "srl_demo").exists()
    capsys.readouterr()
    # a value prepare refuses is refused before the demo's first line, as the demo's own flags are
    with pytest.raises(UsageError, match="--epochs"):
        srl_demo.main(["--log-dir", str(tmp_path / "srl_demo"), "--prepare-args", "--epochs", "0"])
    assert capsys.readouterr().out == "" and not (tmp_path / "srl_demo").exists()


def test_the_demos_say_to_start_visdom_before_training(tmp_path, monkeypatch, capsys):
    """The hint said to start visdom "in another terminal" once training had begun, but training looks for the
    server only at its first episode: a server started then drew nothing. make srl-demo gave it at step 2."""
    def stop(*args, **kwargs):
        raise KeyboardInterrupt  # (the demos' output up to their first training is all this test needs)

    monkeypatch.setattr(train, "main", stop)
    monkeypatch.setattr(prepare, "prepare", stop)
    monkeypatch.chdir(tmp_path)
    for command, before in ((demo, "before running the demo"), (srl_demo, "before step 2 (ppo2) begins")):
        with pytest.raises(KeyboardInterrupt):
            command.main(["--port", "8123"])
        out = capsys.readouterr().out
        assert f"-m replay.visdom_server --port 8123` in another terminal {before}" in out, out
        assert "http://127.0.0.1:8123" in out and "once, at its first episode" in out


def test_the_demos_give_no_visdom_hint_when_a_server_answers(tmp_path, monkeypatch, capsys, visdom_port):
    """The demos told the user to start a visdom server even when one already answered on their port: the hint is
    now given only when none answers (training then finds the server and prints its page itself)."""
    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(train, "main", stop)
    monkeypatch.setattr(prepare, "prepare", stop)
    monkeypatch.chdir(tmp_path)
    port = visdom_port
    for command in (demo, srl_demo):
        with pytest.raises(KeyboardInterrupt):
            command.main(["--port", str(port)])
        out = capsys.readouterr().out
        assert "Live curve" not in out and "replay.visdom_server" not in out, out


def test_make_demos_and_visdom_take_one_port():
    """make srl-demo (and make demo) had no port setting: VISDOM_PORT sets the port of both demos and of make visdom."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    result = subprocess.run(["make", "--no-print-directory", "-n", "-o", ".venv/.installed", "demo", "srl-demo",
                             "visdom", "VISDOM_PORT=8123"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    recipes = [line for line in result.stdout.splitlines()
               if re.search(r"-m replay\.(demo|srl_demo|visdom_server) ", line)]
    assert len(recipes) == 3 and all(line.endswith(" --port 8123") for line in recipes), result.stdout
