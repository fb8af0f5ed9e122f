"""The hyperparameter spec (rl_baselines.core.hyperparams): one declaration gives the flags, typing, range checks,
--hyperparam and the search space; algorithms declared the older way are read through the same spec."""
from __future__ import annotations

import argparse

import pytest

from rl_baselines.core.base import BaseRLObject
from rl_baselines.core.hyperparams import DISCOUNT, Hyperparam, Interval
from srl_toolbox.cli import CLIParser, UsageError


class SpecAgent(BaseRLObject):
    NAME = "spec_agent"
    HYPERPARAMS = {
        "pg_lr": Hyperparam(1e-3, "policy learning rate", bounds=Interval(0, None, low_open=True),
                            search=(1e-5, 1e-1, "log")),
        "gamma": Hyperparam(0.99, "discount", bounds=DISCOUNT, search=(0.9, 0.9999)),
        "batch_episodes": Hyperparam(4, "episodes per update", bounds=(1, None), search=[1, 2, 4, 8]),
        "baseline": Hyperparam(True, "subtract a value baseline"),
        "optimizer": Hyperparam("adam", choices=("adam", "sgd"), search=["adam", "sgd"]),
    }


def test_one_declaration_gives_defaults_checks_and_search_space() -> None:
    assert SpecAgent.DEFAULT_HYPERPARAMS == {"pg_lr": 1e-3, "gamma": 0.99, "batch_episodes": 4, "baseline": True,
                                             "optimizer": "adam"}
    assert SpecAgent.HYPERPARAM_CHOICES == {"optimizer": ("adam", "sgd")}
    assert SpecAgent.getOptParam() == {"pg_lr": (float, (1e-5, 1e-1), "log"), "gamma": (float, (0.9, 0.9999)),
                                       "batch_episodes": (list, [1, 2, 4, 8]), "optimizer": (list, ["adam", "sgd"])}
    assert SpecAgent.parserHyperParam({"pg_lr": "0.01", "batch_episodes": "3", "baseline": "false",
                                       "optimizer": "sgd"}) == {"pg_lr": 0.01, "batch_episodes": 3,
                                                                "baseline": False, "optimizer": "sgd"}
    for raw, message in (({"pg_lr": "0"}, "'pg_lr' must be > 0, got 0.0"),
                         ({"gamma": "1.5"}, "'gamma' must be in (0, 1], got 1.5"),
                         ({"batch_episodes": "0"}, "'batch_episodes' must be >= 1, got 0"),
                         ({"optimizer": "rmsprop"}, "'optimizer' must be one of adam, sgd, got 'rmsprop'"),
                         ({"batch_episodes": "2.5"}, "'batch_episodes' needs a int value"),
                         ({"nope": "1"}, "unknown hyperparameter 'nope'")):
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
            SpecAgent.parserHyperParam(raw)


def test_flags_and_which_setting_wins() -> None:
    parser = SpecAgent.customArguments(CLIParser(prog="train"))
    args = parser.parse_args(["--pg-lr", "0.01", "--baseline", "false", "--optimizer", "sgd", "--gamma", "0.9"])
    assert (args.hp_pg_lr, args.hp_baseline, args.hp_optimizer, args.hp_batch_episodes) == (0.01, False, "sgd", None)
    assert parser.parse_args(["--baseline"]).hp_baseline is True
    for argv, message in ((["--pg-lr", "-1"], "'pg_lr' must be > 0"), (["--optimizer", "rmsprop"], "invalid choice"),
                          (["--batch-episodes", "x"], "needs a int value")):
        with pytest.raises(UsageError, match=message):
            parser.parse_args(argv)
    assert "policy learning rate [0.001]" in parser.format_help()
    # default < saved model's < flag < --hyperparam
    values = SpecAgent.hyperparamsFromArgs(args, {"gamma": 0.95}, saved={"batch_episodes": 8, "gamma": 0.5})
    assert values == {"pg_lr": 0.01, "gamma": 0.95, "batch_episodes": 8, "baseline": False, "optimizer": "sgd"}
    assert SpecAgent.hyperparamsFromArgs(argparse.Namespace(), None) == SpecAgent.DEFAULT_HYPERPARAMS


def test_declaration_mistakes_fail_when_the_class_is_defined() -> None:
    with pytest.raises(ValueError, match="default 0 must be > 0"):
        Hyperparam(0, bounds=Interval(0, None, low_open=True))
    with pytest.raises(ValueError, match="search range .* leaves the bounds"):
        Hyperparam(0.5, bounds=DISCOUNT, search=(0.0, 1.0))
    with pytest.raises(ValueError, match="must be one of a, b"):
        Hyperparam("c", choices=("a", "b"))
    with pytest.raises(ValueError, match="is not \\(low, high\\)"):
        Hyperparam(1.0, search=(0.1, 2.0, "linear"))
    with pytest.raises(TypeError, match="HYPERPARAMS\\['lr'\\] is a float"):
        type("Broken", (BaseRLObject,), {"HYPERPARAMS": {"lr": 0.1}})


def test_older_declarations_are_read_through_the_spec() -> None:
    from rl_baselines.core.registry import registered_rl

    ars = registered_rl["ars"][0]
    spec = ars.hyperparamSpec()
    assert set(spec) == set(ars.DEFAULT_HYPERPARAMS)
    assert spec["algo_type"].choices == ("v1", "v2")
    assert all(spec[name].default == default for name, default in ars.DEFAULT_HYPERPARAMS.items())
    searched = {name for name, h in spec.items() if h.search is not None}
    assert searched == set(ars.getOptParam()) & set(spec)
    ppo2 = registered_rl["ppo2"][0]
    assert ppo2.hyperparamSpec()["n_steps"].optParam() == ppo2.getOptParam()["n_steps"]
    # cma-es declares its hyperparameters with the spec: same flags and search space as before
    cma_es = registered_rl["cma-es"][0]
    assert cma_es.HYPERPARAMS and list(cma_es.getOptParam()) == ["num_population", "sigma", "mu"]
    with pytest.raises(ValueError, match="'num_population' must be >= 2"):
        cma_es.parserHyperParam({"num_population": "1"})
