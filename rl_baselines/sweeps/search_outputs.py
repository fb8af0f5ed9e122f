"""The outputs of ``rl_baselines.hyperparam_search``, written atomically beside the trial folders.

``best_hyperparams.yaml``: the best trial's hyperparameters, the fixed ones included, as ``train --hyperparam-file``
reads them; ``trials.csv``: one row per trial of the study; ``search.png``: the optimisation history and the
parameter importances (PED-ANOVA, which needs no scikit-learn; undefined, and said so in place of bars, when every
completed trial scored the same).
"""
from __future__ import annotations

import csv
import math
import shlex
import warnings
from typing import Any

import numpy as np
import yaml
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from rl_baselines.core.hyperparams import plainValues
from rl_baselines.sweeps.search_study import (
    SCORED_EPISODES,
    SearchConfig,
    formatValue,
    importOptuna,
    trialError,
    trialValues,
)
from srl_toolbox.files import atomicPath


def writeBestParams(path: str, study: Any, config: SearchConfig, algo_class: type) -> dict[str, Any]:
    """
    Write the best trial's hyperparameters (the fixed ones included) as YAML for ``train --hyperparam-file``.

    :param path: the YAML file
    :param study: the study (at least one completed trial)
    :param config: the search
    :param algo_class: the algorithm (types the fixed values)
    :return: the hyperparameters written
    """

    best = study.best_trial
    fixed = algo_class.parserHyperParam(best.user_attrs.get("fixed_hyperparams", {}))
    values = plainValues({**fixed, **trialValues(best)})  # clip_range_vf as a float or null, as hyperparams.yaml
    budget = config.num_timesteps
    scored = best.user_attrs.get(SCORED_EPISODES, config.eval_episodes)
    fewer = f" (only {scored} ended)" if scored < config.eval_episodes else ""
    objective = (f"mean reward of the last evaluation due within the {budget}-step budget ({config.eval_episodes} "
                 f"deterministic episodes)" if config.evaluate
                 else f"mean reward of the last {config.eval_episodes} episodes that ended within the {budget}-step "
                      f"budget{fewer}")
    header = (f"# Best trial {best.number} of Optuna study {config.study_name} ({config.storage_url}):\n"
              f"# {objective}: {best.value:.4f}, {config.algo} on {config.env} ({config.srl_model}).\n"
              f"# {repeatCommand(best, config, path)}\n")  # (a file outlives the shell: plain ``python``)
    with atomicPath(path) as tmp_path, open(tmp_path, "w", encoding="utf-8") as handle:
        handle.write(header)
        yaml.safe_dump(values, handle, sort_keys=True, default_flow_style=False)
    return values


def repeatCommand(trial: Any, config: SearchConfig, path: str, python: str = "python") -> str:
    """
    :param trial: the best trial
    :param config: the search
    :param path: its best_hyperparams.yaml
    :param python: the interpreter that starts it, shell-quoted (the printed line: ``srl_toolbox.cli.pythonCommand()``;
        the line best_hyperparams.yaml keeps: ``python``, as that file outlives the shell)
    :return: the train command that trains with the best hyperparameters and the flags that trial got (the forwarded
        ones, ``--gail-dataset``, ``-c``, ``--num-cpu``..., ``--seed``, ``--num-timesteps``, ``--eval-episodes``;
        without them the command could fail or train another task): the trial's recorded ones, else (a trial of an
        earlier version, which recorded none) this search's; a forwarded ``--hyperparam-file`` aside, whose values
        ``path`` holds
    """
    flags = withoutHyperparamFile(trial.user_attrs.get("train_flags") or config.trialFlags)
    return f"{python} -m rl_baselines.train {shlex.join(flags)} --hyperparam-file {shlex.quote(path)}"


# train's flag that the repeat command gives best_hyperparams.yaml to (train keeps the last one given)
_HYPERPARAM_FILE = "--hyperparam-file"


def withoutHyperparamFile(flags: list[str]) -> list[str]:
    """
    :param flags: a trial's train flags
    :return: them without a forwarded ``--hyperparam-file`` in any spelling train accepts (``--hyperparam-file=F``, an
        abbreviation such as ``--hyperparam-f F``): best_hyperparams.yaml holds its values, and train would ignore it
        before the repeat command's own ``--hyperparam-file`` (it keeps the last)
    """
    kept, skip_value = [], False
    for word in flags:
        if skip_value:
            skip_value = False
            continue
        flag = word.split("=", 1)[0]
        # (--hyperparam, a flag of its own, is no abbreviation of it: the prefix must pass "--hyperparam-")
        if len(flag) > len("--hyperparam") and _HYPERPARAM_FILE.startswith(flag):
            skip_value = "=" not in word
            continue
        kept.append(word)
    return kept


def writeTrialsCsv(path: str, study: Any) -> None:
    """
    :param path: the CSV file: one row per trial (number, state, value, last reported step, duration, run folder,
        error, why a trial was pruned before it started, then one column per hyperparameter)
    :param study: the study
    """

    trials = study.get_trials(deepcopy=False)
    names = sorted({name for trial in trials for name in trialValues(trial)})
    with atomicPath(path) as tmp_path, open(tmp_path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["number", "state", "value", "last_step", "duration_s", "run_dir", "error", "pruned_before_start",
                         *names])
        for trial in trials:
            values = trialValues(trial)  # (each at the value the trial trained with)
            duration = trial.duration.total_seconds() if trial.duration is not None else ""
            writer.writerow([trial.number, trial.state.name.lower(), "" if trial.value is None else trial.value,
                             "" if trial.last_step is None else trial.last_step, duration,
                             trial.user_attrs.get("run_dir", ""), trialError(trial),
                             trial.user_attrs.get("pruned_before_start", ""),
                             *(formatValue(values[n]) if n in values else "" for n in names)])


def saveSearchPlot(path: str, study: Any, title: str) -> None:
    """
    PNG with the optimisation history (value per trial, best so far, pruned trials at their last intermediate
    value) and the parameter importances (PED-ANOVA, which needs no scikit-learn).

    :param path: the PNG file
    :param study: the study
    :param title: the figure's title
    """
    optuna = importOptuna()
    TrialState = optuna.trial.TrialState

    figure = Figure(figsize=(13, 5), dpi=100)
    FigureCanvasAgg(figure)
    history, importance = figure.subplots(1, 2)
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    pruned = [t for t in study.get_trials(deepcopy=False, states=(TrialState.PRUNED,)) if t.last_step is not None]
    if complete:
        numbers = [t.number for t in complete]
        values = [t.value for t in complete]
        history.scatter(numbers, values, color="tab:blue", label="completed")
        history.step(numbers, np.maximum.accumulate(values), where="post", color="tab:red", label="best so far")
    if pruned:
        history.scatter([t.number for t in pruned], [t.intermediate_values[t.last_step] for t in pruned],
                        color="gray", marker="x", label="pruned (last intermediate value)")
    if complete or pruned:
        history.legend(loc="best")
    history.set_xlabel("trial")
    history.xaxis.set_major_locator(MaxNLocator(integer=True))
    history.set_ylabel("mean episode reward")
    history.set_title("optimisation history")
    history.grid(True, alpha=0.3)
    importance.set_title("hyperparameter importance")
    importances, reason = _importances(optuna, study, [t.value for t in complete])
    if importances:
        names = list(importances)[::-1]
        importance.barh(names, [importances[n] for n in names], color="tab:green")
        importance.set_xlabel("importance (PED-ANOVA, normalised)")
    else:
        importance.text(0.5, 0.5, reason, ha="center", va="center", transform=importance.transAxes)
    figure.suptitle(title)
    figure.tight_layout()
    with atomicPath(path) as tmp_path:
        figure.savefig(tmp_path, format="png")


def _importances(optuna: Any, study: Any, values: list[float]) -> tuple[dict[str, float], str]:
    """
    :param optuna: the optuna module
    :param study: the study
    :param values: its completed trials' values
    :return: the hyperparameters' importances (PED-ANOVA, normalised; empty when undefined), and why they are
        undefined: fewer than two completed trials, values without variance (every trial scored the same: PED-ANOVA
        would split the importance evenly), or an evaluator that failed or gave no finite importance
    """
    if len(values) < 2:
        return {}, "needs two completed trials"
    if np.ptp(values) == 0:
        return {}, "importance undefined: every trial scored the same"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # PED-ANOVA needs no scikit-learn (Optuna's default from 5.0; older versions default to fANOVA, which does)
        evaluator = getattr(optuna.importance, "PedAnovaImportanceEvaluator", None)
        try:
            importances = optuna.importance.get_param_importances(
                study, evaluator=evaluator() if evaluator is not None else None)
        except (ImportError, ValueError, RuntimeError, ZeroDivisionError):
            return {}, "not computable (scikit-learn missing?)"
    if not importances or not all(math.isfinite(value) for value in importances.values()):
        return {}, "importance undefined (no finite importance computed)"
    return importances, ""
