"""Many runs: the pipeline's sweeps (specs, run ids, claims, executors, the state file) and the hyperparameter
search with Optuna (the study, its records, the trials' train processes, its outputs)."""
