"""The SRL + RL benchmark's report: the section "Does SRL help?" of docs/srl.md, the figures and the speed table.

A report archives the finished runs of the bench folder, completes them with the archived records of the same
settings, and writes the section (between :data:`START_MARKER` and :data:`END_MARKER`, replaced atomically through
benchmarks.documents), one learning-curve PNG per env and, once no run of the chosen envs is missing, the steps/s of
ppo2 per observation in docs/benchmarks.md. Invariants:

- the report covers every env of the plan set that has runs (the ``--env`` ones always); the tables, the figures and
  the section say which runs came from the archive and when;
- nothing is written to the docs when no run of this configuration has finished or is archived (the docs keep their
  last results);
- the speed table is appended only by the invocation that finished the last missing run;
- with ``--compare-to FILE`` each env's table is followed by its comparison with the runs of ``FILE`` made with other
  train settings or another physics version (benchmarks.srl_rl.compare), read after this report archived its runs;
- with ``--renderer NAME`` the section says once which envs do not offer it (they keep their default);
- a run continued after a stop is counted in its row (``(1 continued)``) and named above its env's table with what
  such a run is (benchmarks.srl_rl.runs.continuedNote).
"""
from __future__ import annotations

import math
import os
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from benchmarks.documents import BENCH_FILE, appendReport, makeNote, replaceMarkedSection, rewriteDocument, shownPath
from benchmarks.srl_rl import plans
from benchmarks.srl_rl.analysis import envTable, plotEnv, reportedModels, summariseEnv, verdicts
from benchmarks.srl_rl.archive import archivedMatches, archiveNote, collectRuns, measuredModels, recordFromArchive, recordRuns
from benchmarks.srl_rl.compare import comparisonSection, loadComparison
from benchmarks.srl_rl.env_plans import BUDGET_NOTE, PLANS, EnvPlan
from benchmarks.srl_rl.overview import overviewSection, scoredTasks
from benchmarks.srl_rl.plans import (
    ANCHOR_NOTE,
    END_MARKER,
    IMAGE_DIR,
    OBSERVATIONS,
    ROOT,
    SECTION_TITLE,
    START_MARKER,
    SUMMARY_IMAGE,
    THRESHOLD_FRACTION,
    VARIANTS,
    Settings,
    displayPath,
    modelName,
    specObservation,
)
from benchmarks.srl_rl.runs import RunRecord, continuedNote
from srl_toolbox.files import readJson


def replaceMarked(text: str, body: str) -> str:
    """
    :param text: a markdown document
    :param body: the section's new content (without its heading)
    :return: the document with the benchmark's section replaced, or appended under :data:`SECTION_TITLE`
        (benchmarks.documents.replaceMarkedSection)
    """
    return replaceMarkedSection(text, body, SECTION_TITLE, START_MARKER, END_MARKER)


def writeMarked(path: str, body: str) -> None:
    """
    Replace (or append) the benchmark's section of a markdown file atomically; the file is created when missing.

    :param path: the markdown file
    :param body: the section's content, without its heading
    """
    rewriteDocument(path, lambda text: replaceMarked(text, body))


def processors(records: Sequence[RunRecord], here: str) -> list[str]:
    """
    :param records: runs
    :param here: this machine's description (that of the runs not archived)
    :return: the processor names of the machines they ran on, sorted, without the unknown ones
    """
    return sorted({(record.machine or here).split(",")[0] for record in records if record.machine or here})


def speedRows(records: Sequence[RunRecord], here: str = "") -> list[dict[str, Any]]:
    """
    :param records: every finished run
    :param here: this machine's description, for the runs of the bench folder (an archived run names its own)
    :return: per (env, observation), envs in the order of the records and observations in that of
        :data:`OBSERVATIONS` (others after them): runs, steps per run, mean steps/s (monitor clock), mean wall time per
        run and the machines the runs ran on (their processor names; "" when not recorded)
    """
    keys = list(dict.fromkeys((r.env, r.observation) for r in records))
    envs = list(dict.fromkeys(env for env, _ in keys))
    keys.sort(key=lambda key: (envs.index(key[0]), OBSERVATIONS.index(key[1]) if key[1] in OBSERVATIONS
                               else len(OBSERVATIONS)))
    rows = []
    for key in keys:
        group = [r for r in records if (r.env, r.observation) == key]
        rates = [r.rate for r in group if not math.isnan(r.rate)]
        walls = [r.wall for r in group if not math.isnan(r.wall)]
        rows.append({"env": key[0], "observation": key[1], "runs": len(group), "steps": max(r.steps for r in group),
                     "rate": float(np.mean(rates)) if rates else math.nan,
                     "wall": float(np.mean(walls)) if walls else math.nan,
                     "machines": ", ".join(processors(group, here))})
    return rows


def speedTable(rows: Sequence[dict[str, Any]]) -> str:
    """
    :param rows: :func:`speedRows`
    :return: the markdown table
    """
    lines = ["| env | observation | runs | steps per run | ppo2 steps/s | wall time per run | machine |",
             "|---|---|---:|---:|---:|---:|---|"]
    for row in rows:
        rate = "n/a" if math.isnan(row["rate"]) else f"{row['rate']:,.0f}"
        wall = "n/a" if math.isnan(row["wall"]) else f"{row['wall'] / 60:.1f} min"
        lines.append(f"| {row['env']} | {row['observation']} | {row['runs']} | {row['steps']:,} | {rate} | {wall} | "
                     f"{row.get('machines') or 'n/a'} |")
    return "\n".join(lines)


def runTimeNote(records: dict[str, Sequence[RunRecord]], workers: int, here: str) -> str:
    """
    The benchmark's run time from the runs themselves: it covers the archived runs, whose invocations' stage times
    belong to other bench folders (another session, another machine).

    :param records: env -> the runs shown for it
    :param workers: runs at a time
    :param here: this machine's description (that of the runs not archived)
    :return: per env, the summed wall time of its runs' train commands and, for more than one run and worker, that
        sum divided by the runs at a time (``workers``, at most the runs); empty when no run has a recorded wall time
    """
    parts = []
    for env, group in records.items():
        walls = [record.wall for record in group if not math.isnan(record.wall)]
        if walls:
            machines = processors(group, here)
            together = min(workers, len(walls))  # (one run, or one at a time: its time is the sum)
            about = ([f"about {plans.duration(sum(walls) / together)} with {plans.counted(together, 'run')} at a time"]
                     if together > 1 else [])
            details = ", ".join([*about, *(["; ".join(machines)] if machines else [])])
            parts.append(f"{env} {plans.counted(len(walls), 'run')}, {plans.duration(sum(walls))} of train commands"
                         + (f" ({details})" if details else ""))
    return "; ".join(parts)


def sectionText(env_plans: Sequence[EnvPlan], tables: dict[str, str], texts: dict[str, list[str]],
                images: dict[str, str], facts: dict[str, Any]) -> str:
    """
    :param env_plans: the envs' plans, in order
    :param tables: env -> markdown table
    :param texts: env -> verdict sentences
    :param images: env -> the PNG path relative to the document (an env without a finished run has none, nor any
        env when no figure is drawn)
    :param facts: command, seeds, envs (per run), machine, wall, thresholds (env -> value or None), commands (list
        of str), archived (env -> the sentence about its archived runs, for the envs that have some), archive (the
        archive file as shown, None without one), variants (name -> description, of the variants among the rows),
        overview (the subsections over the tasks, overview.overviewSection; optional), comparisons (env -> the
        subsection against earlier runs, compare.comparisonSection; optional), renderer (the sentence about the envs
        that do not offer ``--renderer``; optional), renderers (env -> the ``--renderer`` its commands get; optional),
        unplanned (the envs without a plan that have archived runs and are not reported; optional)
    :return: the section's content, without its heading (:data:`SECTION_TITLE`)
    """
    archive = facts.get("archive")
    planned = any(plan.env in PLANS for plan in env_plans)  # one of the paper's tasks, with a measured budget
    reuse = (f" Every finished run is recorded in `{archive}` and reused by later invocations with the same settings: "
             "an env whose runs are all there is neither prepared nor run again (`--rerun ENV` runs it again), and the "
             "section covers every planned env that has runs, in the bench folder or archived (counted as *archived* "
             "in the tables), and the envs without a plan given to `--env`." if archive else "")
    if facts.get("unplanned"):
        reuse += f" Archived and not covered here: {UNPLANNED_NOTE.format(envs=', '.join(facts['unplanned']))}."
    parts = [
        f"Written by `{facts['command']}`{makeNote('bench-srl-rl', facts['command'])}; re-running it replaces this "
        "section and does only "
        f"what is missing (datasets, models and runs whose settings did not change are reused).{reuse} ppo2 with its "
        f"default hyperparameters and {plans.counted(facts['envs'], 'env')} per run (train's --num-cpu) learns each "
        f"task from each observation, {plans.counted(facts['seeds'], 'seed')} each"
        f"{groundTruthSeedsNote(facts.get('ground_truth_seeds', {}))}; every learned "
        "model of an env is trained on the same dataset by `python -m srl_models.prepare`, with its per-env defaults. A "
        "deterministic evaluation (separate env, same wrappers, normalisation statistics of the training env) runs "
        "every `eval_freq` steps."
        + "".join(f" *{name}* is {description}." for name, description in facts.get("variants", {}).items()), "",
        "How to read the tables: *final eval reward* is the mean reward of the last evaluation's episodes, mean +/- "
        f"standard error over seeds; *threshold* = {THRESHOLD_FRACTION:.0%} of ground truth's mean final evaluation "
        "reward, and *steps to threshold* the first evaluation at or above it (median over the seeds that reached it, "
        "and how many did); *AUC / steps* is the area under the evaluation curve divided by the steps it spans (the "
        "mean evaluation reward over training: larger when a method learns sooner); *GTC* is the ground-truth "
        "correlation of the representation measured by prepare on its dataset, and *probe R^2* the R^2 of a ridge "
        "regression from the learned state to the ground truth, scored on episodes of that dataset held out from the "
        "probe's fit (not from the SRL model's training, which used the whole dataset; prepare's linear probe, mean "
        "over the ground truth's dimensions; `-` for raw pixels and their variants, which learn no "
        "state apart from the agent; `n/a` for a model "
        "evaluated before the probe existed); *p* is Welch's t-test "
        "(`scipy.stats.ttest_ind(equal_var=False)`) of the final rewards against raw pixels."
        + (" *Here vs paper* compares fractions of each side's ground truth: *agrees* when they differ by less than "
           "twice their combined standard error." if planned else "")
        + " A row marked missing has no finished run yet; *continued* counts the runs continued after "
        "a stop (resumed from a checkpoint), which the line above the table names."
        + (" *Against earlier runs* follows a table with the runs of the same observations, run settings and SRL "
           "settings in another archive, made with other train settings or another physics version of the env (the "
           "group with the most seeds when there are several): final eval reward now and then (mean +/- standard "
           "error over seeds), their difference, whether it is at most twice the combined standard error "
           "(sqrt(SE_now^2 + SE_earlier^2); n/a below 2 seeds on a side), and the settings that differ (earlier -> "
           "now)." if facts.get("comparisons") else ""), "",
        # the planned tasks' budgets and the paper: only beside one of them (an env without a plan has neither)
        *([BUDGET_NOTE, "", ANCHOR_NOTE, ""] if planned else []),
        f"- Machine of this invocation (archived runs: their own machines, in each task's line): {facts['machine']}",
        f"- Wall time of the benchmark: {facts['wall']}", "",
        f"Commands (from {facts.get('commands_in', 'the repository root')}):", "", "```bash", *facts["commands"],
        "```", "",
        *([facts["renderer"], ""] if facts.get("renderer") else []),
    ]
    for plan in env_plans:
        threshold = facts["thresholds"].get(plan.env)
        renderer = facts.get("renderers", {}).get(plan.env)
        flags = [*plan.flags, *plan.run_flags, *(["--renderer", renderer] if renderer else [])]
        budget = (f"{plan.steps:,} steps per run, an evaluation of {plans.counted(plan.eval_episodes, 'episode')} "
                  f"every {plan.eval_freq:,} steps" + (f" ({' '.join(flags)})" if flags else ""))
        threshold_text = (f"threshold {threshold:.2f}" if threshold is not None
                          else "no threshold (ground truth has no positive final reward yet)")
        notes = [note for note in (facts.get("archived", {}).get(plan.env), facts.get("continued", {}).get(plan.env))
                 if note]
        heading = f"### {plan.env}" + (f" ({plan.task})" if plan.task != plan.env else "")  # a plan's task
        parts += [heading, "", " ".join([f"{budget}; {threshold_text}.", *notes]), "",
                  tables[plan.env], "",
                  *([facts["comparisons"][plan.env], ""] if plan.env in facts.get("comparisons", {}) else []),
                  *texts[plan.env], "",
                  *([f"![ppo2 learning curves on {plan.env}]({images[plan.env]})", ""] if plan.env in images else [])]
    if facts.get("overview"):
        parts.append(facts["overview"])
    return "\n".join(parts)


UNPLANNED_NOTE = ("{envs} (an env without a plan is reported when given to `--env` with its `--budget ENV=STEPS`, "
                  "`--eval-freq` and `--eval-episodes`)")


def rendererNote(settings: Settings, env_plans: Sequence[EnvPlan]) -> str:
    """
    :param settings: the benchmark's settings
    :param env_plans: the envs of the report
    :return: the sentence naming the envs that do not offer ``--renderer`` and keep their default (empty when every
        env offers it or no renderer is given)
    """
    if settings.renderer is None:
        return ""
    kept = [plan.env for plan in env_plans if settings.envRenderer(plan.env) is None]
    if not kept:
        return ""
    return (f"`--renderer {settings.renderer}`: {', '.join(kept)} {'does' if len(kept) == 1 else 'do'} not offer it "
            f"and {'keeps its' if len(kept) == 1 else 'keep their'} default renderer "
            f"({', '.join(dict.fromkeys(settings.drawnBy(env) for env in kept))}).")


def groundTruthSeedsNote(counts: dict[str, int]) -> str:
    """:return: the clause after "N seeds each" naming ground truth's own seeds (empty when it has none)"""
    if not counts:
        return ""
    return (f" (ground truth {', '.join(f'{count} on {task}' for task, count in counts.items())}, where some of its "
            "own seeds never learn the task: its mean final reward sets the threshold and the normalised scores)")


def report(settings: Settings, command: str, machine: str, doc: str | None, image_dir: str | None,
           append: bool, rerun: Collection[str] = (), compare_to: str | None = None,
           results_file: str = BENCH_FILE) -> int:
    """
    Archive the finished runs of the bench folder (archive.recordRuns), then analyse the runs of every env of the
    report (:meth:`Settings.reportPlans`: the chosen envs, and the others that have runs), those of the bench folder
    completed by the archived records with the same settings; write the section, the figures and (when ``append``
    and no run of the chosen envs is missing) the speed table of the bench folder's runs. Nothing is written to the
    docs when no run of this configuration has finished or is archived (the docs keep their last results).

    :param settings: the benchmark's settings
    :param command: the benchmark's command line, as recorded
    :param machine: the machine's description
    :param doc: the markdown file whose block is replaced (None: print the section)
    :param image_dir: the folder of the PNGs (None: no figure)
    :param append: append the speed table to ``results_file`` when every run has finished
    :param rerun: envs whose archived records are not used (they are being run again)
    :param compare_to: an archive file whose runs of other settings each env's table is compared with (None: no
        comparison; benchmarks.srl_rl.compare)
    :param results_file: the markdown file of the speed table (docs/benchmarks.md)
    :return: 1 when some expected run of the chosen envs has neither finished nor been archived, else 0
    """
    chosen = {plan.env for plan in settings.plans}
    candidates = settings.reportPlans()
    found, models = collectRuns(settings, candidates)
    archive = recordRuns(settings, candidates, found, models, machine)
    measured = measuredModels(archive)
    earlier = loadComparison(compare_to) if compare_to else None  # read after the runs archived (the same file?)
    used: dict[str, list[RunRecord]] = {}
    expected: dict[str, int] = {}
    specs_of: dict[str, list[Any]] = {}
    for plan in candidates:
        specs = specs_of[plan.env] = settings.specs(plan)
        records = list(found[plan.env])
        if archive and plan.env not in rerun:
            have = {(record.observation, record.seed) for record in records}
            matches = archivedMatches(archive, settings, plan,
                                      [spec for spec in specs if (specObservation(spec), int(spec.seed)) not in have],
                                      models[plan.env])
            records += [recordFromArchive(entry) for entry in matches.values()]
        if records or plan.env in chosen:
            used[plan.env], expected[plan.env] = records, len(specs)
    # an env without a plan has its budget and evaluation only on the command line: its archived runs are covered when
    # it is given to --env again (also said when nothing else is reported)
    unplanned = sorted({entry["env"] for entry in archive.values()} - set(PLANS) - set(used))
    if unplanned:
        print(f"Archived, not reported: {UNPLANNED_NOTE.format(envs=', '.join(unplanned))}")
    if not any(used.values()):
        print(f"No run of this configuration has finished in {settings.runs_dir}"
              + (f" or is archived in {displayPath(settings.archive_file)}" if settings.archive_file else "")
              + ": nothing written")
        return 1
    reported = [plan for plan in candidates if plan.env in used]
    fresh, listed, tables, texts, images, thresholds, notes_archive, comparisons = [], [], {}, {}, {}, {}, {}, {}
    rows_by_task, models_by_task, notes_continued = {}, {}, {}
    missing = 0
    for plan in reported:
        records = used[plan.env]
        facts = reportedModels(records, models[plan.env], measured)
        notes = {name: "not prepared" for name in settings.learned
                 if name not in facts and modelName(name) not in facts}
        absent = expected[plan.env] - len(records)
        if plan.env in chosen:
            missing += absent
            fresh += [record for record in records if not record.archived]
            listed += records
        elif absent:
            print(f"{plan.env} (not among --env): {absent} run(s) neither finished in {settings.runs_dir} nor "
                  "archived")
        if any(record.archived for record in records):
            notes_archive[plan.env] = archiveNote(records, str(settings.archive_file))
        notes_continued[plan.env] = continuedNote([f"{record.observation} seed {record.seed}" for record in records
                                                   if record.continued], len(records))
        rows, threshold = summariseEnv(records, settings.observations, settings.seedCounts(plan), notes)
        rows_by_task[plan.env], models_by_task[plan.env] = rows, facts
        thresholds[plan.env] = threshold
        tables[plan.env] = envTable(plan.env, rows, threshold, facts)
        texts[plan.env] = verdicts(rows, threshold, settings.learned)
        if earlier is not None and compare_to is not None:
            comparisons[plan.env] = comparisonSection(earlier, displayPath(compare_to), settings, plan,
                                                      specs_of[plan.env], rows)
        png = os.path.join(image_dir or IMAGE_DIR, f"srl_rl_{plan.env}.png")
        if image_dir is not None and any(row.runs for row in rows):
            os.makedirs(image_dir, exist_ok=True)
            plotEnv(png, plan, rows, threshold)
            print(f"Figure: {shownPath(png)}")
        if image_dir is not None and any(row.runs for row in rows):  # a figure is linked only where it was drawn
            images[plan.env] = os.path.relpath(png, os.path.dirname(doc) if doc else ROOT)
        print(f"\n{plan.env}\n{tables[plan.env]}\n" + (f"{comparisons[plan.env]}\n" if plan.env in comparisons else "")
              + "\n".join(texts[plan.env])
              + (f"\n{notes_archive[plan.env]}" if plan.env in notes_archive else "")
              + (f"\n{notes_continued[plan.env]}" if notes_continued[plan.env] else ""), flush=True)
    stages = readJson(settings.timing_file).get(settings.fingerprint(), {}) if os.path.isfile(
        settings.timing_file) else {}
    wall = (f"{plans.duration(sum(stages.values()))} in all ("
            + ", ".join(f"{stage} {plans.duration(seconds)}" for stage, seconds in stages.items())
            + f"), {plans.counted(settings.workers, 'run')} at a time, niceness {settings.nice}, summed over the invocations"
            + ("; the archived runs are not included" if notes_archive else "")
            if stages else "not measured (no stage has run with these settings"
            + (" in this bench folder; the archived runs are not included)" if notes_archive else ")"))
    runs_time = runTimeNote(used, settings.workers, machine)
    if runs_time:
        wall += f". Run time of the runs shown, from their own records: {runs_time}"
    commands = []
    for plan in reported:
        if settings.learned:
            commands.append(plans.shown(settings.prepareCommand(plan), settings.nice))
        commands += [plans.shown(command, settings.nice) for command in settings.gridCommands(plan)]
    summary_png = os.path.join(image_dir or IMAGE_DIR, SUMMARY_IMAGE)
    overview = overviewSection(rows_by_task, models_by_task, settings.learned,
                               os.path.relpath(summary_png, os.path.dirname(doc) if doc else ROOT)
                               if image_dir is not None else None,
                               summary_png if image_dir is not None else None)
    if overview:
        print(f"\n{overview}", flush=True)
        if image_dir is not None and scoredTasks(rows_by_task):  # drawn only over tasks with a reference
            print(f"Figure: {shownPath(summary_png)}")
    facts = {"command": command, "seeds": settings.seeds, "envs": settings.envs, "machine": machine, "wall": wall,
             "ground_truth_seeds": {plan.task: count for plan, count in settings.groundTruthSeeds(reported).items()},
             "thresholds": thresholds, "commands": commands, "archived": notes_archive, "continued": notes_continued,
             # where the commands ran (their paths are relative to it): the repository root, or the folder the bench
             # folder lies in outside it (Settings.base)
             "commands_in": ("the repository root" if os.path.abspath(settings.base) == ROOT
                             else os.path.abspath(settings.base)),
             "archive": displayPath(settings.archive_file) if settings.archive_file else None,
             "variants": {name: VARIANTS[name].description for name in settings.observations if name in VARIANTS},
             "overview": overview, "comparisons": comparisons, "unplanned": unplanned,
             "renderer": rendererNote(settings, reported),
             "renderers": {plan.env: renderer for plan in reported if (renderer := settings.envRenderer(plan.env))}}
    if facts["renderer"]:
        print(facts["renderer"])
    section = sectionText(reported, tables, texts, images, facts)
    if doc is None:
        print(f"\n{SECTION_TITLE}\n\n{section}")
    else:
        writeMarked(doc, section)
        print(f"\nWrote the section {SECTION_TITLE[3:]!r} of {displayPath(doc)}")
    print(f"Wall time: {wall}")
    if missing:
        print(f"{missing} expected run(s) have not finished: the same command again runs only those")
    elif append and fresh:
        notes = (f"ppo2 (default hyperparameters, {plans.counted(settings.envs, 'env')} and one torch thread per run, "
                 f"{plans.counted(settings.workers, 'run')} at a time, niceness {settings.nice}) on each observation, "
                 "as the command ran it: steps/s = training steps per second of the run's monitor clock (env "
                 "creation to the last episode, the periodic evaluations included; runs continued after a stop left "
                 "out), wall time = the whole train command (start-up, SRL model loading and evaluations included; "
                 f"a continued run's attempts summed), means over the runs. Wall time of the whole benchmark: {wall}. "
                 f"Load average at the end: {os.getloadavg()[0]:.1f} (other work shared the machine when it is above "
                 f"{settings.workers}).")
        if any(record.archived for record in listed):
            notes += (" The runs of these envs archived by earlier invocations (a benchmark longer than a session) are "
                      "included: the machine column says where each group ran, and rates of different machines do "
                      "not compare.")
        appendReport("ppo2 on SRL representations (the SRL + RL benchmark)", command, notes,
                     speedTable(speedRows(listed, machine)), packages=("torch", "stable_baselines3", "pybullet"),
                     target="bench-srl-rl", path=results_file)
    return 1 if missing else 0
