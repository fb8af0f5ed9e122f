"""The fusioner's refusal of sources holding the same episode (environments/dataset_fusioner.py): the generator records
episode e the same way for a --seed, so two recordings of the same settings, or a copy, share episodes, which merged
would put copies of training episodes among held-out ones. Episodes are compared by content, whatever the configs say.
(Merging itself and the other refusals: tests/test_dataset_generator.py.)"""
from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
from conftest import snapshot

from environments import dataset_fusioner
from environments.dataset_generator import main as generateDataset
from environments.partial_folder import PARTIAL_NAME_EXTRA
from srl_toolbox.cli import runCommand
from srl_toolbox.files import readJson, writeJson

SMALL = ["--env", "MobileRobotGymEnv-v0", "--img-shape", "3", "16", "16", "--max-steps", "5", "--image-format", "png",
         "--no-progress"]


def generate(root, name: str, episodes: int, *args: str) -> str:
    assert generateDataset([*SMALL, "--save-path", str(root), "--name", name, "--num-episode", str(episodes),
                            *args]) == 0
    return str(root / name)


def fuse(capsys, *paths) -> tuple[int, str, str]:
    """Run the fusioner as ``python -m`` would (one-line errors, exit codes), in this process."""
    with pytest.raises(SystemExit) as exit_info:
        runCommand(dataset_fusioner.main, ["--merge", *map(str, paths)])
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out, captured.err


def assertRefused(capsys, root, paths, *words: str) -> None:
    before = snapshot(str(root))
    code, out, err = fuse(capsys, *paths)
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, f"{word!r} not in {err!r}"
    assert snapshot(str(root)) == before, "a refused merge wrote files"


def test_sources_recorded_with_the_same_seed_or_copied_are_refused(tmp_path, capsys):
    """Recorded again under another name with the default --seed 0, or copied with cp -r: the merge held each episode
    twice and said nothing."""
    a = generate(tmp_path, "a", 2)
    b = generate(tmp_path, "b", 3)  # the same settings and seed: its episodes 0 and 1 are a's
    shutil.copytree(a, tmp_path / "copy")
    assertRefused(capsys, tmp_path, [a, b, tmp_path / "merged"], f"cannot merge {a!r} and {b!r}",
                  "identical episodes (a/record_000 = b/record_000, a/record_001 = b/record_001)",
                  "same --seed", "another --seed")
    assertRefused(capsys, tmp_path, [a, tmp_path / "copy", tmp_path / "merged"],
                  "a/record_000 = copy/record_000", "another --seed")
    other = generate(tmp_path, "other", 2, "--seed", "1")  # another seed: other episodes, merged
    assertRefused(capsys, tmp_path, [other, a, b, tmp_path / "merged"], f"{a!r} and {b!r}")
    code, out, err = fuse(capsys, other, b, tmp_path / "merged")
    assert code == 0, err
    assert "5 episodes" in out


def test_a_source_holding_an_episode_twice_is_refused(tmp_path, capsys):
    """A dataset that holds the same episode twice (one merged from copies): its episodes are compared too."""
    twice = generate(tmp_path, "twice", 2, "--seed", "3")
    other = generate(tmp_path, "other", 1, "--seed", "4")
    arrays = {}
    for file_name in ("preprocessed_data.npz", "ground_truth.npz"):
        with np.load(os.path.join(twice, file_name)) as data:
            arrays[file_name] = {key: data[key].copy() for key in data.files}
    rows = np.flatnonzero(arrays["preprocessed_data.npz"]["episode_starts"])[1]
    assert 2 * rows == len(arrays["preprocessed_data.npz"]["rewards"]), "the two episodes must be as long"
    for file_name, content in arrays.items():
        for key, values in content.items():
            if key == "target_positions":
                values[1] = values[0]
            elif key in ("actions", "rewards", "ground_truth_states", "step_target_positions"):
                values[rows:] = values[:rows]
        np.savez(os.path.join(twice, file_name), **content)
    assertRefused(capsys, tmp_path, [other, twice, tmp_path / "merged"],
                  f"{twice!r} holds the same episode more than once (twice/record_000 = twice/record_001)",
                  "another --seed")


def test_an_episodes_digest_does_not_depend_on_the_arrays_dtypes():
    rows = {"actions": np.array([0, 1, 3]), "rewards": np.array([0.0, 1.0, 0.0], np.float32),
            "ground_truth_states": np.arange(6, dtype=np.float32).reshape(3, 2),
            "episode_starts": np.array([True, False, False]), "target_positions": np.array([[0.5, -0.25]], np.float32),
            "images_path": np.array([f"d/record_000/frame{i:06d}" for i in range(3)])}
    wider = {key: values.astype(np.float64) if values.dtype.kind in "fi" else values for key, values in rows.items()}
    digests = [dataset_fusioner.episodeDigests({"arrays": arrays}) for arrays in (rows, wider)]
    assert digests[0] == digests[1] and digests[0][0][0] == "record_000"
    moved = {**rows, "actions": np.array([0, 1, 2])}
    assert dataset_fusioner.episodeDigests({"arrays": moved}) != digests[0]


def test_a_destination_inside_a_source_is_refused_with_delete_sources(tmp_path, capsys):
    """``--merge a b a/merged --delete-sources`` wrote a/merged, then removed a with it and said it succeeded."""
    a = generate(tmp_path, "a", 1, "--seed", "5")
    b = generate(tmp_path, "b", 1, "--seed", "6")
    assertRefused(capsys, tmp_path, [a, b, os.path.join(a, "merged"), "--delete-sources"],
                  f"destination {os.path.join(a, 'merged')!r} lies inside source {a!r}", "--delete-sources")
    code, out, err = fuse(capsys, a, b, os.path.join(a, "merged"))  # sources kept: allowed
    assert code == 0, err


def test_an_interrupted_recording_of_the_destinations_name_is_kept(tmp_path, capsys):
    """The merge removed ``.NAME.partial`` as its own leftover, though it was the generator's interrupted recording of
    NAME (its settings file and episodes folder), which ``--resume`` would have finished."""
    a = generate(tmp_path, "a", 1, "--seed", "7")
    b = generate(tmp_path, "b", 1, "--seed", "8")
    recording = tmp_path / ".ab.partial"
    (recording / "episodes").mkdir(parents=True)
    (recording / "generation.json").write_text("{}")
    assertRefused(capsys, tmp_path, [a, b, tmp_path / "ab"], f"{recording} holds a dataset_generator recording",
                  "--resume")
    shutil.rmtree(recording)
    (recording / "record_000").mkdir(parents=True)  # an interrupted merge's leftover (with a lock file, as older
    (recording / ".lock").write_text("")  # generators refused on it left): replaced
    code, out, err = fuse(capsys, a, b, tmp_path / "ab")
    assert code == 0 and not recording.exists(), err


def test_a_destination_that_cannot_be_made_is_refused_before_any_work(tmp_path, capsys):
    """A destination below a file, or whose name is too long for its partial folder: the merge compared the sources,
    then stopped with a traceback (NotADirectoryError) or with exit 1."""
    a = generate(tmp_path, "a", 1, "--seed", "9")
    b = generate(tmp_path, "b", 1, "--seed", "10")
    (tmp_path / "notes.txt").write_text("a file")
    below_file = tmp_path / "notes.txt" / "sub" / "merged"
    assertRefused(capsys, tmp_path, [a, b, below_file],
                  f"destination {str(below_file)!r}: {str(tmp_path / 'notes.txt')!r} is a file, not a folder")
    limit = os.pathconf(tmp_path, "PC_NAME_MAX") - PARTIAL_NAME_EXTRA  # the partial folder's name then just fits
    long_name = tmp_path / ("m" * (limit + 1))
    assertRefused(capsys, tmp_path, [a, b, long_name], f"destination {str(long_name)!r}: the folder name",
                  f"is {limit + 1} bytes, over the {limit} allowed")


def test_sources_recorded_with_other_env_settings_are_refused(tmp_path, capsys):
    """``--max-steps 5`` and ``--max-steps 6`` recordings were merged: env_globals.json, the first source's, said
    max_steps 5 for episodes of 6 steps (dataset_config.json does not record the episode length)."""
    a = generate(tmp_path, "a", 1, "--seed", "9")
    b = generate(tmp_path, "b", 1, "--seed", "10", "--max-steps", "6")
    assertRefused(capsys, tmp_path, [a, b, tmp_path / "merged"],
                  f"cannot merge {a!r} and {b!r}: their env setting max_steps differs (5 vs 6)")
    shutil.rmtree(b)
    b = generate(tmp_path, "b", 1, "--seed", "10")
    globals_b = readJson(os.path.join(b, "env_globals.json"))
    edited = {**globals_b, "constants": {**globals_b["constants"], "MAX_X": 5.0, "STEP_SIZE": 0.2},
              "env_kwargs": {**globals_b["env_kwargs"], "relative_pos": False}}
    writeJson(os.path.join(b, "env_globals.json"), edited)
    assertRefused(capsys, tmp_path, [a, b, tmp_path / "merged"],
                  "their env settings differ (MAX_X 4.0 vs 5.0, STEP_SIZE 0.1 vs 0.2, relative_pos True vs False)")
    (tmp_path / "b" / "env_globals.json").write_text("{")
    assertRefused(capsys, tmp_path, [a, b, tmp_path / "merged"], "env_globals.json is not valid JSON")
    writeJson(os.path.join(b, "env_globals.json"), globals_b)
    code, out, err = fuse(capsys, a, b, tmp_path / "merged")
    assert code == 0, err


def test_env_settings_compare_what_the_env_is_built_with():
    """A keyword left to its default is compared as that default, a max_steps of None as the env's MAX_STEPS; the
    renderer and force_down are dataset_config.json's to compare."""
    base = {"env_class": "m:Env", "constants": {"MAX_STEPS": 250, "DEFAULT_RENDERER": "sprites"},
            "defaults": {"max_steps": None, "relative_pos": True, "renderer": None, "force_down": False},
            "env_kwargs": {"img_shape": [3, 16, 16]}}
    given = {**base, "env_kwargs": {**base["env_kwargs"], "max_steps": 250, "relative_pos": True,
                                    "renderer": "sprites", "force_down": True}}
    settings = dataset_fusioner.envSettings(base)
    assert settings == dataset_fusioner.envSettings(given)
    assert settings == {"env_class": "m:Env", "MAX_STEPS": 250, "max_steps": 250, "relative_pos": True,
                        "img_shape": [3, 16, 16]}
