"""Synthetic run and model folders for the SRL + RL benchmark's tests (tests/test_srl_rl_benchmark.py,
tests/test_srl_rl_archive.py): nothing is trained."""
from __future__ import annotations

import json
import os

import numpy as np

from benchmarks.srl_rl import env_plans, plans
from rl_baselines.sweeps import recorded

MOBILE = env_plans.MOBILE
STEPS = np.array([1000, 2000, 3000, 4000])
# observation -> per seed, the mean evaluation reward at each of STEPS
CURVES = {
    "ground_truth": [[50, 180, 220, 230], [60, 190, 225, 232], [40, 170, 215, 228]],
    "raw_pixels": [[0, 20, 60, 100], [5, 30, 90, 140], [0, 10, 40, 80]],
    "vae": [[10, 100, 200, 226], [20, 150, 210, 229], [0, 80, 190, 225]],
    "autoencoder": [[0, 10, 20, 30], [0, 5, 10, 15]],  # one seed missing
}


def writeRun(folder: str, observation: str, seed: int, curve: list[float] | None, env: str = MOBILE,
              finished_at: str | None = None, spec: object | None = None) -> str:
    """A finished run folder: args.json (the train settings of ``spec`` when given), env_globals.json (the env's
    physics version now), a monitor CSV, done.json (with ``finished_at`` when given) and (unless ``curve`` is None)
    evaluations.npz whose episodes average to ``curve`` (3 episodes per evaluation, spread around the mean)."""
    os.makedirs(os.path.join(folder, "monitor"))
    with open(os.path.join(folder, "env_globals.json"), "w") as handle:
        json.dump({"constants": {"PHYSICS_VERSION": recorded.envPhysics(env)}}, handle)
    args = {"env": env, "srl_model": observation, "algo": "ppo2", "seed": seed, "num_timesteps": 4000}
    with open(os.path.join(folder, "args.json"), "w") as handle:
        json.dump(recorded.specSettings(spec) if spec is not None else args, handle)
    with open(os.path.join(folder, "monitor", "0.monitor.csv"), "w") as handle:
        handle.write('#{"t_start": 0}\nr,l,t\n' + "".join(f"{r},1000,{10.0 * (i + 1)}\n"
                                                         for i, r in enumerate(curve or [0, 0, 0, 0])))
    with open(os.path.join(folder, "done.json"), "w") as handle:
        json.dump({"wall_time_s": 50.0, **({"finished_at": finished_at} if finished_at else {})}, handle)
    if curve is not None:
        means = np.asarray(curve, dtype=np.float64)
        results = np.stack([means - 1.0, means, means + 1.0], axis=1)
        np.savez(os.path.join(folder, "evaluations.npz"), timesteps=STEPS, results=results,
                 ep_lengths=np.full(results.shape, 250))
    return folder


def writeModel(folder: str, name: str, gtc: float, state_dim: int = 8, env: str = MOBILE) -> str:
    """A fake prepared model folder (exp_config.json, gt_correlation.json); its hash follows ``state_dim``."""
    os.makedirs(folder)
    with open(os.path.join(folder, "exp_config.json"), "w") as handle:
        json.dump({"srl_model": name, "state_dim": state_dim, "env": env, "img_shape": [3, 64, 64], "weights": []},
                  handle)
    with open(os.path.join(folder, "gt_correlation.json"), "w") as handle:
        json.dump({"mean": gtc, "per_dimension": [gtc, gtc]}, handle)
    return folder


def writeGrid(settings: plans.Settings, env: str, curves: dict[str, dict[int, list[float]]], finished_at: str,
              vae_hash: str, state_dim: int = 8) -> None:
    """Every run of the env's planned grid finished in the settings' bench folder, with ``curves[observation][seed]``
    as its evaluations (a seed past an observation's curves takes ``seed % len(curves)``'s: ground truth's own seeds
    on Nav 2D); the vae runs name the model of hash ``vae_hash`` as theirs."""
    plan = next(plan for plan in settings.reportPlans() if plan.env == env)
    for spec in settings.specs(plan):
        run = writeRun(os.path.join(spec.parent, f"26-11-20_10h00_00_{spec.run_id}"), spec.srl_model, spec.seed,
                       curves[spec.srl_model][spec.seed % len(curves[spec.srl_model])], env, finished_at, spec)
        if spec.srl_model == "vae":
            with open(os.path.join(run, "srl_model.json"), "w") as handle:
                json.dump({"name": "vae", "hash": vae_hash, "state_dim": state_dim}, handle)
