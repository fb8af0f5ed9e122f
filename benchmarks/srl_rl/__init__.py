"""SRL + RL benchmark: does a learned state representation help ppo2 learn? One table and one figure per env.

For each env of :data:`env_plans.PLANS` (the four tasks of Raffin et al. 2019: MobileRobotGymEnv-v0 and
MobileRobot1DGymEnv-v0, navigation in 2-D and 1-D; KukaButtonGymEnv-v0 with a random target and
KukaMovingButtonGymEnv-v0, the arm), or any registered env with ground truth named by ``--env`` (its plan from
``--budget``, ``--eval-freq`` and ``--eval-episodes``: env_plans.derivedPlan), ``python -m benchmarks.srl_rl``
(``make bench-srl-rl``)

1. prepares every learned model with ``python -m srl_models.prepare`` (one call per env with all the model names:
   one dataset per env, every model trained on it, evaluated (GTC, KNN-MSE) and registered in the benchmark's own
   SRL config file ``<bench-dir>/srl_models.yaml``, so that the user's config/srl_models.yaml is never touched);
2. trains ppo2 on every observation, ``--seeds`` seeds each, with ``python -m rl_baselines.pipeline``: a fixed step
   budget per env and a deterministic evaluation every ``eval_freq`` steps (``evaluations.npz`` in each run folder);
3. analyses the finished runs of this configuration (exactly the runs the pipeline's grid names) completed by the
   archived ones, and writes the section ``Does SRL help?`` of docs/srl.md (with the statistics over the tasks), one
   learning-curve PNG per env and one summary PNG in docs/images/, and the steps/s of ppo2 per observation in
   docs/benchmarks.md.

The modules, in dependency order (the import-linter contract ``benchmarks-srl-rl-layers`` checks it):

- :mod:`~benchmarks.srl_rl.cli` (and ``__main__``): the command line;
- :mod:`~benchmarks.srl_rl.running` (prepare and the pipeline, the time estimate) and
  :mod:`~benchmarks.srl_rl.report` (the docs section, the figures, the speed table);
- :mod:`~benchmarks.srl_rl.overview`: over the tasks, the IQM of the normalised scores with stratified bootstrap
  intervals, the performance profiles, the summary figure, and the metric correlation;
  :mod:`~benchmarks.srl_rl.compare`: each env's runs against the earlier runs of an archive made with other train
  settings or another physics version (``--compare-to FILE``);
- :mod:`~benchmarks.srl_rl.analysis`: tables, verdicts and figures from the runs;
- :mod:`~benchmarks.srl_rl.archive`: the archive of finished runs (``benchmarks/srl_rl_runs.json``) and its keys;
- :mod:`~benchmarks.srl_rl.runs` (finished runs and their train settings) and :mod:`~benchmarks.srl_rl.models` (the
  registered learned models, stale runs);
- :mod:`~benchmarks.srl_rl.plans`: what runs, the commands, the constants; :mod:`~benchmarks.srl_rl.bootstrap`: the
  statistics (IQM, stratified bootstrap, performance profile, Spearman's interval), in numpy;
- :mod:`~benchmarks.srl_rl.env_plans`: each env's plan (budget, evaluation, flags) and the time estimate's rates.

``--quick`` checks the whole chain (prepare on tiny datasets, about a thousand steps per run, 2 seeds, 3
observations) in a few minutes, in its own folder and with its own archive, writing the section and the figures
there rather than into docs/. ``--report-only`` archives the finished runs and rewrites the section and the figures
without running anything. ``--compare-to FILE`` follows each env's table with its runs against those of an archive
made with other settings (another renderer, Kuka's physics version 1); ``--renderer NAME`` draws the datasets and the
runs of the envs that offer it with that renderer.

The bench folder (``--bench-dir``, default ``logs/bench_srl_rl``) is relative to the current directory. The commands
run in the repository root with paths relative to it when the folder lies there; a folder in the current directory
outside the repository (another checkout's, whose runs were named after its relative paths) keeps its relative
paths: the commands then run there, importing this checkout's code. The archive and the docs are always this
checkout's.

Usage: ``python -m benchmarks.srl_rl [--quick] [--env ENV ...] [--observations OBS ...] [--seeds 3] [--budget
ENV=STEPS ...] [--workers 2] [--executor ray [--ray-address HOST:PORT]] [--report-only] [--no-doc] [--no-append]
[--rerun ENV ...] [--runs-file FILE] [--compare-to FILE] [--renderer NAME] [--features-extractor NAME] [--precision
P]``, from the repository root.
"""
