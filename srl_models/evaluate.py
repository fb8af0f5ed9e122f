"""Measure a trained SRL model on a dataset: GTC, KNN-MSE and the linear probe's R^2, with plots.

    python -m srl_models.evaluate --model-folder logs/srl/mr/<run> [--data-folder data/mr] [--k 5]
                                  [--max-samples 2000] [--seed 0]

Writes into the model folder: gt_correlation.json, knn_mse.json, linear_probe.json (not for a dataset of a single
episode: the probe is scored on held-out episodes), states.npz (the sampled frames' learned states,
ground truth and rewards, for further plots), states_by_ground_truth.png and knn_neighbours.png.
srl_models.train calls :func:`evaluateModel` at the end of training.

Invariant: the files in the model folder itself are the model's reference measurements (read by srl_models.prepare,
the benchmarks and ``train --srl-state-scale participation``): its training dataset measured with the default
settings (k 5, max samples 2000, seed 0). Any other measurement goes to ``evaluations/<dataset folder name>/``
inside the model folder, the name followed by ``_k<k>_n<frames>_seed<seed>`` for other settings, and by ``_2``,
``_3``... when that folder already holds the results of another dataset of the same folder name (another
data_folder, or the same one whose fingerprint was another). The training dataset re-recorded since (its fingerprint,
environments.dataset.Dataset.fingerprint, differs from exp_config's dataset_fingerprint, where recorded) counts as
another dataset. Measuring again with the same settings on the same dataset rewrites the same files. A measurement
is all or nothing: its files are written into a staging folder that replaces the evaluations/ subfolder (or whose
files replace the model folder's own) once all are written, so an interrupted one (Ctrl-C) leaves the earlier
results, or no folder, and running it again measures afresh (a kill, SIGKILL, may leave the hidden staging folder,
``.<name>.<8 hex digits>.tmp``, which nothing reads).
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from tqdm import tqdm

from environments import getEnvClass
from environments.dataset import Dataset
from srl_models import plotting
from srl_models.base import DATASET_FINGERPRINT_KEY, STATES_FILE, BaseSRLModel, readExpConfig
from srl_models.config import trainedRenderer
from srl_models.metrics import (
    PROBE_ALPHA,
    gtCorrelation,
    heldOutEpisodes,
    knnMse,
    linearProbe,
    nearestNeighbours,
    sampleIndices,
)
from srl_models.registry import loadSRLModel
from srl_toolbox.cli import (
    CLIParser,
    UsageError,
    addProgressArgument,
    addSeedArgument,
    checkWritableFolder,
    intInRange,
    positiveInt,
    runCommand,
)
from srl_toolbox.devices import checkedDevice
from srl_toolbox.files import atomicFolder, readJson, writeJson, writeNpz
from srl_toolbox.text import withArticle

GTC_FILE = "gt_correlation.json"
KNN_FILE = "knn_mse.json"
PROBE_FILE = "linear_probe.json"
STATES_PLOT = "states_by_ground_truth.png"
KNN_PLOT = "knn_neighbours.png"
OTHER_DATASETS_FOLDER = "evaluations"  # inside a model folder: one subfolder per other dataset or settings
# The reference settings: what srl_models.train (and so srl_models.prepare) measures with, the model folder's own files.
DEFAULT_K = 5
DEFAULT_MAX_SAMPLES = 2000
DEFAULT_SEED = 0
KNN_PLOT_QUERIES = 4    # query frames in the neighbours figure
KNN_PLOT_NEIGHBOURS = 5  # neighbours shown per query (at most k)
ENCODE_BATCH = 256


def _cameras(shape: tuple[int, ...]) -> str:
    """:return: " (one camera)" / " (two cameras)" for a [C, H, W] shape of 3 / 6 channels, "" otherwise"""
    return {3: " (one camera)", 6: " (two cameras)"}.get(int(shape[0]), "") if len(shape) == 3 else ""


def _recordingFlags(model_shape: tuple[int, ...], data_shape: tuple[int, ...]) -> str:
    """
    :param model_shape: the [C, H, W] a model encodes
    :param data_shape: the [C, H, W] of a dataset's frames
    :return: what to record a dataset with for the model, naming only what differs: the size (--img-shape is
        always 3 H W) and/or the cameras (two cameras, --fpv or --multi-view, make 6 channels)
    """
    needs = []
    if tuple(model_shape[1:]) != tuple(data_shape[1:]):
        needs.append(f"--img-shape 3 {model_shape[-2]} {model_shape[-1]}")
    if model_shape[0] != data_shape[0]:
        needs.append("two cameras (--fpv: mobile robots, --multi-view: Kuka arms)" if model_shape[0] == 6
                     else "one camera (no --fpv or --multi-view)")
    return " and ".join(needs) or "the model's image shape"


def openModelDataset(model_folder: str, data_folder: str | None = None, need_ground_truth: bool = True,
                     use: str = "measure it on") -> tuple[dict[str, Any], Dataset]:
    """
    Read a model folder's exp_config.json and the dataset to measure it on, and check that they belong together.

    :param model_folder: a model folder written by srl_models.train
    :param data_folder: the dataset (default: the one the model was trained on, exp_config["data_folder"])
    :param need_ground_truth: require ground-truth states (for the metrics)
    :param use: what the caller does with the dataset, as the errors advise it ("... {use} a <env> dataset")
    :return: (exp_config, dataset)
    :raises ValueError: missing/foreign model folder, no dataset (the training one gone: deleted, moved), another env
        or image size, missing arrays
    """
    config = readExpConfig(model_folder)
    model_env = config.get("env")
    if data_folder is None:
        data_folder = config.get("data_folder")
        if not data_folder:
            raise ValueError(f"{os.path.join(model_folder, 'exp_config.json')} names no data_folder: pass "
                             "--data-folder")
        if not os.path.isdir(data_folder):
            raise ValueError(f"the model {model_folder!r} was trained on dataset {data_folder!r}, which is gone "
                             f"(deleted or moved; its exp_config.json still names it): pass --data-folder with "
                             f"{withArticle(model_env) if model_env else 'another'} dataset")
    dataset = Dataset.open(data_folder)
    data_env = dataset.env_id
    if model_env and data_env and model_env != data_env:
        raise ValueError(f"dataset {data_folder!r} was recorded on {data_env}, the model {model_folder!r} was "
                         f"trained on {model_env}: {use} {withArticle(model_env)} dataset")
    model_shape = tuple(int(v) for v in config.get("img_shape", ()))
    if model_shape and model_shape != dataset.img_shape:
        raise ValueError(f"dataset {data_folder!r} has images of shape {list(dataset.img_shape)}"
                         f"{_cameras(dataset.img_shape)}, the model {model_folder!r} encodes {list(model_shape)}"
                         f"{_cameras(model_shape)}: use a dataset recorded with "
                         f"{_recordingFlags(model_shape, dataset.img_shape)}")
    dataset.require("images_path", purpose="encoding the frames")
    if len(dataset) == 0:
        raise ValueError(f"dataset {data_folder!r} is empty")
    if need_ground_truth:
        dataset.require("ground_truth_states", purpose="GTC and KNN-MSE")
    return config, dataset


def encodeDataset(model: BaseSRLModel, dataset: Dataset, indices: np.ndarray, batch_size: int = ENCODE_BATCH,
                  progress: bool = True) -> np.ndarray:
    """
    :param model: a loaded SRL model
    :param dataset: its dataset
    :param indices: frames to encode
    :param batch_size: frames read and encoded at once
    :param progress: show a progress bar
    :return: float32 (len(indices), state_dim) learned states
    :raises ValueError: the model returns states of the wrong shape or non-finite values
    """
    states = np.empty((len(indices), model.state_dim), dtype=np.float32)
    with tqdm(total=len(indices), desc="encoding", unit="frame", disable=not progress) as bar:
        for start in range(0, len(indices), batch_size):
            batch = indices[start:start + batch_size]
            encoded = np.asarray(model.getState(dataset.loadImages(batch, img_shape=model.img_shape)))
            if encoded.shape != (len(batch), model.state_dim):
                raise ValueError(f"{type(model).__name__}.getState returned shape {encoded.shape}, expected "
                                 f"{(len(batch), model.state_dim)}")
            states[start:start + len(batch)] = encoded
            bar.update(len(batch))
    if not np.all(np.isfinite(states)):
        raise ValueError(f"{type(model).__name__} produced NaN or infinite states")
    return states


def _envAttribute(env_id: str | None, name: str) -> Any:
    """:return: the env class's attribute ``name``, None where the env is not known (a dataset of an env that is not
    installed) or has no such attribute"""
    try:
        return getattr(getEnvClass(env_id), name, None) if env_id else None
    except (KeyError, ImportError, AttributeError):
        return None


def groundTruthUnit(env_id: str | None) -> str | None:
    """:return: the unit of the env's ground truth (GROUND_TRUTH_UNIT), None when it declares none or is not known"""
    return _envAttribute(env_id, "GROUND_TRUTH_UNIT")


def plotType(env_id: str | None, gt_dim: int) -> str:
    """
    :param env_id: the env the data comes from
    :param gt_dim: ground-truth dimensions
    :return: the env's PLOT_TYPE ("2D"/"3D"); for an env that is not installed, "3D" for 3-D ground truth
    """
    plot_type = _envAttribute(env_id, "PLOT_TYPE")
    return str(plot_type) if plot_type is not None else ("3D" if gt_dim >= 3 else "2D")


@dataclass
class Evaluation:
    """Everything a measure needs, checked: built by :func:`prepareEvaluation` before anything is written."""

    model_folder: str
    config: dict[str, Any]
    dataset: Dataset
    model: BaseSRLModel
    indices: np.ndarray
    ground_truth: np.ndarray
    k: int
    seed: int
    output_folder: str  # the model folder (reference), or one of its evaluations/ subfolders: outputFolder
    fingerprint: str = ""  # the dataset's (Dataset.fingerprint)
    dataset_changed: bool = False  # the training dataset, re-recorded since the training: datasetChanged

    @property
    def env_id(self) -> str | None:
        """The env of the frames: the model's, else the dataset's"""
        return self.config.get("env") or self.dataset.env_id


def prepareEvaluation(model_folder: str, data_folder: str | None = None, k: int = DEFAULT_K,
                      max_samples: int = DEFAULT_MAX_SAMPLES, seed: int = DEFAULT_SEED,
                      device: str = "cpu") -> Evaluation:
    """
    Check the inputs and load the model and the dataset.

    :param model_folder: a model folder written by srl_models.train
    :param data_folder: the dataset (default: the one it was trained on)
    :param k: neighbours of KNN-MSE
    :param max_samples: most frames measured (a seeded subset beyond)
    :param seed: seed of the subset and of the figure's query frames
    :param device: torch device of the encoder
    :return: the checked evaluation
    :raises ValueError: any bad input (one line)
    """
    if k < 1:
        raise ValueError(f"k must be a positive integer, got {k}")
    if max_samples < 2:
        raise ValueError(f"max_samples must be at least 2, got {max_samples}")
    config, dataset = openModelDataset(model_folder, data_folder)
    indices = sampleIndices(len(dataset), max_samples, seed)
    if k >= len(indices):
        raise ValueError(f"k={k} needs more than k frames: the dataset {dataset.path!r} gives {len(indices)} "
                         f"(max samples {max_samples})")
    ground_truth = dataset.states()[indices]
    model = loadSRLModel(model_folder, device=device)
    if tuple(model.img_shape) != dataset.img_shape:
        raise ValueError(f"the model {model_folder!r} encodes images of shape {list(model.img_shape)}, the dataset "
                         f"{dataset.path!r} has {list(dataset.img_shape)}")
    suffix = settingsSuffix(k, len(indices), seed, len(dataset))
    fingerprint = dataset.fingerprint()
    return Evaluation(model_folder, config, dataset, model, indices, ground_truth, k, seed,
                      outputFolder(model_folder, config, dataset.path, suffix, fingerprint), fingerprint,
                      datasetChanged(config, dataset.path, fingerprint))


def datasetChanged(config: dict[str, Any], data_folder: str, fingerprint: str | None) -> bool:
    """
    :param config: a model's exp_config.json
    :param data_folder: a dataset
    :param fingerprint: its fingerprint (None: not known)
    :return: whether it is the model's training dataset folder holding another recording than the one trained on:
        exp_config's dataset_fingerprint (absent in models trained before it was recorded: never) differs
    """
    trained_on, recorded = config.get("data_folder"), config.get(DATASET_FINGERPRINT_KEY)
    return bool(trained_on and recorded and fingerprint and recorded != fingerprint
                and os.path.realpath(trained_on) == os.path.realpath(data_folder))


def settingsSuffix(k: int, n_samples: int, seed: int, n_frames: int) -> str:
    """
    :param k: neighbours of KNN-MSE
    :param n_samples: frames measured
    :param seed: seed of the subset, the probe's split and the figure
    :param n_frames: frames in the dataset
    :return: "" for the reference settings (DEFAULT_K, DEFAULT_SEED and the frames DEFAULT_MAX_SAMPLES gives), else
        "_k<k>_n<n_samples>_seed<seed>"
    """
    if k == DEFAULT_K and seed == DEFAULT_SEED and n_samples == min(n_frames, DEFAULT_MAX_SAMPLES):
        return ""
    return f"_k{k}_n{n_samples}_seed{seed}"


def recordedDatasets(folder: str) -> list[tuple[str, str | None]] | None:
    """
    :param folder: an output folder of a measurement
    :return: the (data_folder, dataset_fingerprint) its JSON files record (unreadable ones give ("", None); no
        fingerprint: None), None when it holds none of them
    """
    paths = [os.path.join(folder, name) for name in (GTC_FILE, KNN_FILE, PROBE_FILE)]
    recorded: list[tuple[str, str | None]] = []
    for path in filter(os.path.isfile, paths):
        try:
            written = readJson(path)
            recorded.append((str(written.get("data_folder") or ""), written.get(DATASET_FINGERPRINT_KEY)))
        except (OSError, ValueError, AttributeError):
            recorded.append(("", None))
    return recorded or None


def outputFolder(model_folder: str, config: dict[str, Any], data_folder: str, suffix: str = "",
                 fingerprint: str | None = None) -> str:
    """
    :param model_folder: a model folder
    :param config: its exp_config.json
    :param data_folder: the dataset measured
    :param suffix: :func:`settingsSuffix` of the measurement
    :param fingerprint: the dataset's fingerprint (None: not compared)
    :return: where the measurements go: the model folder for the dataset it was trained on, not re-recorded since
        (:func:`datasetChanged`), with the reference settings (suffix ""), else
        ``<model folder>/evaluations/<dataset folder name><suffix>``, followed by ``_2``, ``_3``... past folders that
        hold the results of another dataset (a different data_folder, or a different fingerprint where both are known)
    """
    trained_on = config.get("data_folder")
    if (not suffix and trained_on and os.path.realpath(trained_on) == os.path.realpath(data_folder)
            and not datasetChanged(config, data_folder, fingerprint)):
        return model_folder
    base = os.path.join(model_folder, OTHER_DATASETS_FOLDER, os.path.basename(os.path.normpath(data_folder)) + suffix)
    folder, number = base, 2
    while True:
        recorded = recordedDatasets(folder)
        if recorded is None or all(path and os.path.realpath(path) == os.path.realpath(data_folder)
                                   and (not fingerprint or not written or written == fingerprint)
                                   for path, written in recorded):
            return folder
        folder, number = f"{base}_{number}", number + 1


def runEvaluation(evaluation: Evaluation, progress: bool = True) -> dict[str, Any]:
    """
    Encode the sampled frames, score them, and write the JSON files, states.npz and the figures, all or nothing
    (srl_toolbox.files.atomicFolder: an interrupted measurement leaves the output folder as it was).

    :param evaluation: from :func:`prepareEvaluation`
    :param progress: show a progress bar while encoding
    :return: {"gtc": {"per_dimension": [...], "mean": float}, "knn_mse": float, "probe": {"per_dimension": [...],
        "mean": float, ...} or None, "probe_skipped": why there is no probe (None when there is one)}; without a
        probe, the output folder holds no linear_probe.json (an earlier one would pair with the new figures)
    """
    ev = evaluation
    states = encodeDataset(ev.model, ev.dataset, ev.indices, progress=progress)
    gtc = gtCorrelation(states, ev.ground_truth)
    knn_mse = knnMse(states, ev.ground_truth, ev.k)
    probe, probe_skipped = probeStates(states, ev)
    common = {"n_samples": int(len(ev.indices)), "seed": ev.seed, "data_folder": ev.dataset.path,
              **({DATASET_FINGERPRINT_KEY: ev.fingerprint} if ev.fingerprint else {})}
    reference = os.path.abspath(ev.output_folder) == os.path.abspath(ev.model_folder)
    # all or nothing: written into a staging folder, which replaces an evaluations/ subfolder (or whose files replace
    # the model folder's own) only once every file is written; a Ctrl-C before leaves the earlier results as they were
    with atomicFolder(ev.output_folder, merge=reference) as staging:
        writeJson(os.path.join(staging, GTC_FILE), {**gtc, **common}, sort_keys=False)
        writeJson(os.path.join(staging, KNN_FILE), {"knn_mse": knn_mse, "k": ev.k, **common}, sort_keys=False)
        if probe is not None:
            writeJson(os.path.join(staging, PROBE_FILE), {**probe, **common}, sort_keys=False)
        extra = {key: ev.dataset[key][ev.indices] for key in ("rewards", "actions") if ev.dataset.has(key)}
        writeNpz(os.path.join(staging, STATES_FILE),
                 {"states": states, "ground_truth": ev.ground_truth, "indices": ev.indices, **extra})
        name = ev.config.get("srl_model", type(ev.model).__name__)
        env_id = ev.env_id
        plotting.plotStatesByGroundTruth(
            states, ev.ground_truth, plotType(env_id, ev.ground_truth.shape[1]), os.path.join(staging, STATES_PLOT),
            title=f"{name} (state dim {ev.model.state_dim}) on {env_id or ev.dataset.path}: GTC {gtc['mean']:.3f}",
            relative=bool(ev.dataset.config.get("relative_pos", True)))
        plotKnn(ev, states, name, staging)
    if probe is None and reference and os.path.isfile(os.path.join(ev.output_folder, PROBE_FILE)):
        os.remove(os.path.join(ev.output_folder, PROBE_FILE))
    return {"gtc": gtc, "knn_mse": knn_mse, "probe": probe, "probe_skipped": probe_skipped}


# why there is no linear probe on frames of one episode (none to hold out); prepare's table says it too
SINGLE_EPISODE = "the frames come from a single episode: nothing to hold out"


def probeStates(states: np.ndarray, evaluation: Evaluation) -> tuple[dict[str, Any] | None, str | None]:
    """
    :param states: the learned states of evaluation.indices
    :param evaluation: the evaluation (its dataset's episodes decide the split)
    :return: (the linear probe (srl_models.metrics.linearProbe, alpha PROBE_ALPHA) scored on a seeded fifth of the
        sampled frames' episodes, None), or (None, why not) when they come from fewer than two episodes or leave
        either side with fewer than 2 frames
    """
    episodes = evaluation.dataset.episodeIndex()[evaluation.indices]
    if len(np.unique(episodes)) < 2:
        return None, SINGLE_EPISODE
    held_out = heldOutEpisodes(episodes, seed=evaluation.seed)
    if min(int(held_out.sum()), int((~held_out).sum())) < 2:
        return None, (f"the held-out episodes give {int(held_out.sum())} of the {len(held_out)} measured frames and "
                      f"the others {int((~held_out).sum())}: the probe needs 2 or more on each side (--max-samples)")
    return linearProbe(states, evaluation.ground_truth, held_out, PROBE_ALPHA), None


def summaryLine(result: dict[str, Any]) -> str:
    """:param result: from :func:`runEvaluation`
    :return: "GTC mean G, KNN-MSE K, probe R2 P" (probe "- (why not)" when there is none)"""
    probe = result.get("probe")
    skipped = f" ({result['probe_skipped']})" if result.get("probe_skipped") else ""
    return (f"GTC mean {result['gtc']['mean']:.3f}, KNN-MSE {result['knn_mse']:.4g}, probe R2 "
            + (f"-{skipped}" if probe is None else f"{probe['mean']:.3f}"))


def plotKnn(evaluation: Evaluation, states: np.ndarray, name: str, folder: str | None = None) -> None:
    """
    Draw a few seeded query frames with their nearest neighbours in learned-state space (knn_neighbours.png).

    :param evaluation: the evaluation
    :param states: the learned states of evaluation.indices
    :param name: the model's name, for the title
    :param folder: where the figure goes [evaluation.output_folder]
    """
    ev = evaluation
    shown = min(ev.k, KNN_PLOT_NEIGHBOURS)
    queries = np.random.default_rng(ev.seed).choice(len(states), size=min(KNN_PLOT_QUERIES, len(states)),
                                                    replace=False)
    neighbours = nearestNeighbours(states, ev.k)[queries, :shown]
    distances = np.sum((ev.ground_truth[neighbours] - ev.ground_truth[queries][:, None]) ** 2, axis=2)
    frames = ev.indices[np.concatenate([queries[:, None], neighbours], axis=1)]  # (q, 1 + shown) dataset rows
    images = ev.dataset.loadImages(frames.ravel())
    images = images.reshape(*frames.shape, *images.shape[1:])
    plotting.plotNeighbours(images[:, 0], images[:, 1:], distances,
                            os.path.join(folder or ev.output_folder, KNN_PLOT),
                            title=f"{name}: {shown} nearest neighbours in learned-state space",
                            unit=groundTruthUnit(ev.env_id))


def evaluateModel(model_folder: str, data_folder: str | None = None, k: int = DEFAULT_K,
                  max_samples: int = DEFAULT_MAX_SAMPLES, seed: int = DEFAULT_SEED, *, device: str = "cpu",
                  progress: bool = True) -> dict[str, Any]:
    """
    Measure a trained model: GTC and KNN-MSE on a seeded subset of the dataset's frames, with plots.

    :param model_folder: a model folder written by srl_models.train; the results are written into it (into one of
        its evaluations/ subfolders for another dataset or other settings than the defaults: :func:`outputFolder`)
    :param data_folder: the dataset (default: exp_config["data_folder"], the one it was trained on)
    :param k: neighbours of KNN-MSE
    :param max_samples: most frames measured (a seeded subset beyond)
    :param seed: seed of the subset and of the neighbours figure
    :param device: torch device of the encoder
    :param progress: show a progress bar while encoding
    :return: {"gtc": {"per_dimension": [...], "mean": float}, "knn_mse": float, "probe": {...} or None}
    :raises ValueError: bad input (one line), before anything is written
    """
    evaluation = prepareEvaluation(model_folder, data_folder, k=k, max_samples=max_samples, seed=seed, device=device)
    return runEvaluation(evaluation, progress=progress)


def buildParser() -> CLIParser:
    """:return: the command-line parser"""
    parser = CLIParser(prog="python -m srl_models.evaluate",
                           description="Measure a trained SRL model: GTC, KNN-MSE and a linear probe's R^2 on a "
                                       "dataset, with plots, written into the model folder (its reference "
                                       "measurements: training dataset, default settings) or into one of its "
                                       "evaluations/ subfolders (another dataset or other settings).")
    parser.add_argument("--model-folder", required=True, help="a model folder written by srl_models.train")
    parser.add_argument("--data-folder", default=None,
                        help="dataset to measure on [the one the model was trained on]")
    parser.add_argument("--k", type=positiveInt, default=DEFAULT_K,
                        help=f"nearest neighbours of KNN-MSE [{DEFAULT_K}]")
    parser.add_argument("--max-samples", type=intInRange(2), default=DEFAULT_MAX_SAMPLES,
                        help=f"most frames measured, a seeded subset beyond [{DEFAULT_MAX_SAMPLES}]")
    addSeedArgument(parser, help=f"seed of the subset and of the figure [{DEFAULT_SEED}]", default=DEFAULT_SEED)
    parser.add_argument("--device", default="cpu", help="device of the encoder: auto, cpu, cuda or cuda:N [cpu]")
    addProgressArgument(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: exit code
    """
    args = buildParser().parse_args(argv)
    device = checkedDevice(args.device)
    try:
        evaluation = prepareEvaluation(args.model_folder, args.data_folder, k=args.k, max_samples=args.max_samples,
                                       seed=args.seed, device=device)
    except ValueError as error:
        raise UsageError(str(error)) from None
    checkWritableFolder(args.model_folder, "--model-folder")  # the results go beside the model
    if evaluation.dataset_changed:
        print(f"The dataset {evaluation.dataset.path} was recorded again since the model was trained (its "
              f"fingerprint differs from exp_config.json's {DATASET_FINGERPRINT_KEY}): measured as another dataset")
    trained_on = trainedRenderer(evaluation.config)  # None: not recorded by a plugin's model, unknown
    if trained_on not in (None, evaluation.dataset.renderer):
        print(f"The dataset's frames are drawn by {evaluation.dataset.renderer}, the model's training frames by "
              f"{trained_on}: measured across renderers")
    result = runEvaluation(evaluation, progress=not args.no_progress)
    per_dimension = " ".join(f"{v:.3f}" for v in result["gtc"]["per_dimension"])
    print(f"GTC mean {result['gtc']['mean']:.4f} (per ground-truth dimension: {per_dimension})")
    print(f"KNN-MSE (k={args.k}) {result['knn_mse']:.6g} on {len(evaluation.indices)} frames")
    probe = result["probe"]
    if probe is None:
        print(f"Linear probe: - ({result['probe_skipped']})")
    else:
        print(f"Linear probe R2 {probe['mean']:.4f} (per ground-truth dimension: "
              f"{' '.join(f'{v:.3f}' for v in probe['per_dimension'])}; ridge alpha {probe['alpha']:g}, fitted on "
              f"{probe['n_fit']} frames, scored on {probe['n_held_out']} of held-out episodes)")
    written = [GTC_FILE, KNN_FILE, *([PROBE_FILE] if probe is not None else []), STATES_FILE, STATES_PLOT, KNN_PLOT]
    print(f"Wrote {', '.join(written)} in {evaluation.output_folder}"
          + ("" if evaluation.output_folder == args.model_folder else
             f" (the model's reference measurements, in {args.model_folder}, are unchanged)"))
    return 0


if __name__ == "__main__":
    runCommand(main)
