"""One training run: the train command's settings and steps, its callbacks, evaluations, resume, logging, the
monitor files, loading a run back (loaded_run) and playing its policy."""
