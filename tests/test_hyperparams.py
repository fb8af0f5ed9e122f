"""The hyperparameter spec (rl_baselines.core.hyperparams): one declaration gives the flags, typing, range checks,
--hyperparam and the search space, for Stable-Baselines3-backed and torch algorithms alike; every built-in declares
HYPERPARAMS, and plugins declared the older way (API version 1) are read through the same spec."""
from __future__ import annotations

import argparse
import os

import pytest
from conftest import runModule

import rl_baselines as rl
from benchmarks.train_speed import timePlainSB3
from rl_baselines.core.base import OLDER_DECLARATIONS, BaseRLObject
from rl_baselines.core.hyperparams import DISCOUNT, POSITIVE, Hyperparam, Interval, NoneOrPositive, plainValue
from rl_baselines.core.registry import registered_rl
from rl_baselines.rl_algorithm.her import BASE_ALGOS
from rl_baselines.rl_algorithm.off_policy import replaySearchSpace
from rl_baselines.rl_algorithm.ppo2 import PPO2Model
from rl_baselines.rl_algorithm.torch_base import TorchRLObject
from rl_baselines.runs.hyperparam_sources import parseHyperparamPairs
from rl_baselines.runs.train import main
from rl_baselines.runs.train_checks import baseParser
from rl_baselines.runs.train_config import TrainConfig
from srl_toolbox.cli import CLIParser, UsageError

GT = ["--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth"]


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
                         ({"batch_episodes": "2.5"}, "'batch_episodes' needs an int value"),
                         ({"nope": "1"}, "unknown hyperparameter 'nope'")):
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
            SpecAgent.parserHyperParam(raw)


def test_flags_and_which_setting_wins() -> None:
    parser = SpecAgent.customArguments(CLIParser(prog="train"))
    args = parser.parse_args(["--pg-lr", "0.01", "--baseline", "false", "--optimizer", "sgd", "--gamma", "0.9"])
    assert (args.hp_pg_lr, args.hp_baseline, args.hp_optimizer, args.hp_batch_episodes) == (0.01, False, "sgd", None)
    assert parser.parse_args(["--baseline"]).hp_baseline is True
    for argv, message in ((["--pg-lr", "-1"], "'pg_lr' must be > 0"), (["--optimizer", "rmsprop"], "invalid choice"),
                          (["--batch-episodes", "x"], "needs an int value")):
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
    # search spaces at odds with the spec were accepted, then failed the search's trials with train's refusal
    with pytest.raises(ValueError, match="search value 'rmsprop' must be one of adam, sgd"):
        Hyperparam("adam", choices=("adam", "sgd"), search=["adam", "rmsprop"])
    with pytest.raises(ValueError, match="search value 0 must be >= 1"):
        Hyperparam(4, bounds=(1, None), search=[0, 2])
    with pytest.raises(ValueError, match="low must be below high"):
        Hyperparam(4, search=(8, 1))
    with pytest.raises(ValueError, match="integer ends"):
        Hyperparam(4, search=(1.5, 8.5))
    with pytest.raises(ValueError, match="is for a number"):
        Hyperparam("adam", search=("a", "b"))
    # a list default was accepted, then any value of its flag crashed parserHyperParam with a KeyError
    for default in ([64, 64], None, (1, 2), {"a": 1}):
        with pytest.raises(ValueError, match="a hyperparameter's type is its default's: bool, int, float, str"):
            Hyperparam(default, "layers")
    # a log-scale range from 0 was accepted here and refused only later by check_plugin and hyperparam_search
    for low in (0.0, -1.0):
        with pytest.raises(ValueError, match="a log-scale range needs low > 0"):
            Hyperparam(0.05, search=(low, 1.0, "log"))
    with pytest.raises(TypeError, match="HYPERPARAMS\\['lr'\\] is a float"):
        type("Broken", (BaseRLObject,), {"HYPERPARAMS": {"lr": 0.1}})


def test_declaring_both_ways_at_once_is_refused() -> None:
    with pytest.raises(TypeError, match="declares HYPERPARAMS and DEFAULT_HYPERPARAMS"):
        type("Twice", (BaseRLObject,), {"HYPERPARAMS": {"lr": Hyperparam(0.1)}, "DEFAULT_HYPERPARAMS": {"lr": 0.2}})


# --- plugins declared before HYPERPARAMS (API version 1, docs/plugins.md of then) ---------------------------------


class OlderPlugin(BaseRLObject):
    """A plugin written before HYPERPARAMS: defaults, choices, bounds and search space declared apart, its own flags
    added by hand and read from the Namespace (abstract: only its class methods are used here)."""

    DEFAULT_HYPERPARAMS = {"step_size": 0.05, "population": 8, "mode": "fast", "noisy": False}
    HYPERPARAM_CHOICES = {"mode": ("fast", "slow")}
    HYPERPARAM_BOUNDS = {"step_size": (0.0, None), "population": Interval(1, None)}

    @classmethod
    def customArguments(cls, parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
        parser.add_argument("--step-size", type=float, default=cls.DEFAULT_HYPERPARAMS["step_size"])
        return parser

    @classmethod
    def getOptParam(cls) -> dict:
        return {"step_size": (float, (1e-3, 1.0), "log"), "population": (list, [4, 8, 16]),
                "mode": (list, ["fast", "slow"])}


def test_older_plugin_is_read_through_the_spec() -> None:
    assert OlderPlugin.declaresOldStyle() and not OlderPlugin.HYPERPARAMS
    spec = OlderPlugin.hyperparamSpec()
    assert {name: h.default for name, h in spec.items()} == OlderPlugin.DEFAULT_HYPERPARAMS
    assert spec["mode"].choices == ("fast", "slow") and spec["population"].interval == Interval(1, None)
    assert spec["step_size"].search == (1e-3, 1.0, "log") and spec["population"].search == [4, 8, 16]
    assert spec["noisy"].search is None
    # its own search space and flags, unchanged
    assert OlderPlugin.getOptParam() == {"step_size": (float, (1e-3, 1.0), "log"), "population": (list, [4, 8, 16]),
                                         "mode": (list, ["fast", "slow"])}
    args = OlderPlugin.customArguments(CLIParser(prog="train")).parse_args(["--step-size", "0.2"])
    assert vars(args) == {"step_size": 0.2}
    # --hyperparam: typed by its search space and defaults, checked against its choices and bounds
    assert OlderPlugin.parserHyperParam({"step_size": "0.1", "population": "12", "mode": "slow", "noisy": "true"}) == {
        "step_size": 0.1, "population": 12, "mode": "slow", "noisy": True}
    for raw, message in (({"population": "0"}, "'population' must be >= 1, got 0"),
                         ({"mode": "medium"}, "'mode' must be one of fast, slow, got 'medium'"),
                         ({"step_size": "-1"}, "'step_size' must be >= 0.0, got -1.0"),
                         ({"other": "1"}, "unknown hyperparameter 'other'")):
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
            OlderPlugin.parserHyperParam(raw)
    values = OlderPlugin.hyperparamsFromArgs(args, {"population": 4})
    assert values == {"step_size": 0.05, "population": 4, "mode": "fast", "noisy": False}


def test_older_subclasses_of_the_bases_keep_their_flags() -> None:
    class OlderTorch(TorchRLObject):
        NAME = "older_torch"
        DEFAULT_HYPERPARAMS = {"lr": 0.1, "layers": 2}
        HYPERPARAM_BOUNDS = {"lr": POSITIVE}

    parser = OlderTorch.customArguments(CLIParser(prog="train"))
    assert (parser.parse_args(["--lr", "0.5"]).hp_lr, parser.parse_args([]).hp_layers) == (0.5, None)
    with pytest.raises(UsageError, match="'lr' must be > 0"):
        parser.parse_args(["--lr", "0"])

    class TunedPPO(PPO2Model):  # a plugin changing a built-in's defaults the older way
        DEFAULT_HYPERPARAMS = {**PPO2Model.DEFAULT_HYPERPARAMS, "n_steps": 256}

    assert TunedPPO.declaresOldStyle() and not PPO2Model.declaresOldStyle()
    spec = TunedPPO.hyperparamSpec()
    assert spec["n_steps"].default == 256 and spec["n_steps"].help == PPO2Model.HYPERPARAMS["n_steps"].help
    assert TunedPPO.getOptParam() == PPO2Model.getOptParam()
    parser = TunedPPO.customArguments(CLIParser(prog="train"))
    assert "[256]" in parser.format_help()
    assert TunedPPO.hyperparamsFromArgs(parser.parse_args([]), None)["n_steps"] == 256
    with pytest.raises(UsageError, match="'gamma' must be in"):
        parser.parse_args(["--gamma", "2"])


# --- the built-in algorithms ---------------------------------------------------------------------------------------


def builtinClasses() -> dict[str, type]:
    """:return: every built-in algorithm class (the registered ones and her's learners), by name"""
    classes = {name: cls for name, (cls, _, _) in registered_rl.items() if cls.__module__.startswith("rl_baselines.")}
    classes.update({f"her-{name}": cls for name, cls in BASE_ALGOS.items()})
    return classes


def test_every_builtin_declares_each_hyperparameter_once() -> None:
    classes = builtinClasses()
    assert {"ppo2", "sac", "deepq", "acer", "ars", "cma-es", "her", "her-deepq", "random_agent"} <= set(classes)
    for name, cls in classes.items():
        assert not cls.declaresOldStyle(), name
        assert cls.hyperparamSpec() == cls.HYPERPARAMS, name
        assert bool(cls.HYPERPARAMS) == (name != "random_agent"), name
        for klass in cls.__mro__[:cls.__mro__.index(BaseRLObject)]:  # the class and its bases in this project
            if klass.__dict__.get("HYPERPARAMS"):
                continue  # its DEFAULT_HYPERPARAMS... are derived (and declaring both is refused)
            older = set(OLDER_DECLARATIONS) & set(klass.__dict__)
            assert not older, f"{name}: {klass.__name__} declares {sorted(older)} instead of HYPERPARAMS"
        # the derived views
        spec = cls.HYPERPARAMS
        assert cls.DEFAULT_HYPERPARAMS == {n: h.default for n, h in spec.items()}, name
        assert cls.HYPERPARAM_CHOICES == {n: h.choices for n, h in spec.items() if h.choices is not None}, name
        assert cls.HYPERPARAM_BOUNDS == {n: h.interval for n, h in spec.items() if h.bounds is not None}, name


def test_every_builtin_search_space_is_its_specs() -> None:
    for name, cls in builtinClasses().items():
        from_spec = {n: h.optParam() for n, h in cls.hyperparamSpec().items() if h.search is not None}
        space = cls.getOptParam() or {}
        if name == "her":  # the learners' shared ranges, then its own (learner defaults depend on --her-algo)
            shared = list(space.items())[:len(space) - len(from_spec)]
            assert list(space.items())[len(shared):] == list(from_spec.items())
            assert shared and all(replaySearchSpace()[n] == entry for n, entry in shared)
            continue
        assert list(space.items()) == list(from_spec.items()), name  # the sampler draws in this order
        for hyperparameter, entry in space.items():  # the search space's values read back as themselves
            value = entry[1][-1]
            assert cls.parserHyperParam({hyperparameter: str(value)})[hyperparameter] == value, (name, hyperparameter)


def test_sb3_and_torch_algorithms_share_one_flag_path() -> None:
    for name in ("ppo2", "sac", "deepq", "acer"):
        cls = registered_rl[name][0]
        parser = cls.customArguments(CLIParser(prog="train"))
        assert parser.parse_args(["--gamma", "0.95"]).hp_gamma == 0.95
        with pytest.raises(UsageError, match="argument --gamma: hyperparameter 'gamma' must be in"):
            parser.parse_args(["--gamma", "2"])
        with pytest.raises(ValueError, match="'gamma' must be in"):
            cls.parserHyperParam({"gamma": "2"})


def test_none_or_a_positive_number() -> None:
    assert NoneOrPositive("none") == NoneOrPositive("None") == NoneOrPositive(None) == "none"
    assert NoneOrPositive("null") == NoneOrPositive("NULL") == NoneOrPositive("~") == "none"  # YAML's, as written
    assert NoneOrPositive("none").number is None and plainValue(NoneOrPositive("none")) is None
    assert NoneOrPositive("0.20") == NoneOrPositive(0.2) == "0.2" and plainValue(NoneOrPositive("2e-2")) == 0.02
    assert plainValue(0.5) == 0.5 and plainValue("auto") == "auto"  # any other value as it is
    for bad in ("0", "-0.1", "nan", "inf", "off", ""):
        with pytest.raises(argparse.ArgumentTypeError, match="is not none or a positive number"):
            NoneOrPositive(bad)


@pytest.mark.parametrize("algo", ["ppo2", "ppo_lstm", "maskable_ppo", "gail"])
def test_ppo_value_clipping_and_target_kl_reach_the_library(algo: str) -> None:
    cls = registered_rl[algo][0]
    args = cls.customArguments(baseParser()).parse_args([*GT, "--algo", algo, "--clip-range-vf", "0.2"])
    assert args.hp_clip_range_vf == "0.2"
    # hyperparams.yaml writes SB3's None as YAML's null: the command line takes that value as it is written
    copied = cls.customArguments(baseParser()).parse_args([*GT, "--algo", algo, "--clip-range-vf", "null",
                                                            "--hyperparam", "target_kl:null"])
    assert copied.hp_clip_range_vf == "none"
    assert cls.parserHyperParam(parseHyperparamPairs(copied.hyperparam)) == {"target_kl": "none"}
    settings = TrainConfig.fromValues(vars(args)).runSettings()
    given = cls.parserHyperParam({"clip_range_vf": "0.2", "target_kl": "none"})
    kwargs = cls.makeModelKwargs(settings, given, None)
    assert kwargs["clip_range_vf"] == 0.2 and isinstance(kwargs["clip_range_vf"], float)
    assert kwargs["target_kl"] is None  # SB3's "off"
    defaults = (cls if algo != "gail" else PPO2Model).DEFAULT_HYPERPARAMS  # (gail: its default learner's)
    assert defaults["clip_range_vf"] == defaults["target_kl"] == "none"  # SB3's


@pytest.mark.parametrize("argv,words", [
    (["--algo", "ppo2", "--hyperparam", "gamma:2"], ["--hyperparam", "'gamma'", "(0, 1]", "2.0"]),
    (["--algo", "ppo2", "--clip-range-vf", "0"], ["--clip-range-vf", "'clip_range_vf'", "'0' is not none or"]),
    (["--algo", "ppo2", "--hyperparam", "target_kl:-1"], ["'target_kl'", "'-1' is not none or a positive number"]),
    (["--algo", "a2c", "--gamma", "2"], ["--gamma", "'gamma'", "(0, 1]"]),
    (["--algo", "trpo", "--n-steps", "0"], ["--n-steps", "'n_steps'", ">= 1"]),
    (["--algo", "sac", "-c", "--hyperparam", "batch_size:0"], ["'batch_size'", ">= 1", "got 0"]),
    (["--algo", "td3", "-c", "--learning-rate", "-0.1"], ["--learning-rate", "'learning_rate'", "> 0"]),
    (["--algo", "qrdqn", "--hyperparam", "exploration_fraction:1.5"], ["'exploration_fraction'", "[0, 1]"]),
    (["--algo", "qrdqn", "--hyperparam", "n_quantiles:1.5"], ["'n_quantiles'", "int", "'1.5'"]),
    (["--algo", "qrdqn", "--n-quantiles", "0"], ["--n-quantiles", "'n_quantiles'", "in [1, 1000]"]),
    (["--algo", "ppo_lstm", "--hyperparam", "activation_fn:gelu"], ["'activation_fn'", "tanh, relu", "'gelu'"]),
    (["--algo", "her", "-c", "--hyperparam", "tau:2"], ["'tau'", "[0, 1]", "2.0"]),
], ids=["ppo2-hyperparam", "ppo2-clip-range-vf", "ppo2-target-kl", "a2c-flag", "trpo-flag", "sac-hyperparam",
        "td3-flag", "qrdqn-hyperparam", "qrdqn-quantiles-type", "qrdqn-quantiles-flag", "ppo_lstm-choice",
        "her-learner"])
def test_sb3_hyperparameters_out_of_range_are_refused_before_anything_is_written(tmp_path, argv, words) -> None:
    with pytest.raises(UsageError) as error:  # the train command prints it as one line, exit code 2
        main([*GT, "--num-timesteps", "64", *argv, "--log-dir", str(tmp_path), "--no-vis"])  # (short if accepted)
    message = str(error.value)
    assert "\n" not in message
    for word in words:
        assert word in message, (word, message)
    assert os.listdir(tmp_path) == []


# Values SB3 / sb3-contrib meet with an assertion or NaN losses once training started (their advantage normalisation
# needs 2 samples in the rollout and, for PPO, in each minibatch: rl_baselines.rl_algorithm.sb3_base).
TOO_FEW_SAMPLES = [
    ("ppo2", {"batch_size": 1}, 1, ["'batch_size'", ">= 2", "got 1"]),
    ("ppo2", {"n_steps": 1}, 1, ["n_steps 1 x --num-cpu 1", "n_steps >= 2"]),
    ("trpo", {"n_steps": 1}, 1, ["n_steps 1 x --num-cpu 1", "n_steps >= 2"]),
    ("ppo_lstm", {"n_steps": 1}, 1, ["n_steps 1 x --num-cpu 1", "n_steps >= 2"]),
    ("ppo_lstm", {"n_steps": 65, "batch_size": 64}, 1, ["batch_size 64", "last minibatch of 1 sample", "65"]),
    ("maskable_ppo", {"n_steps": 33, "batch_size": 65}, 2, ["batch_size 65", "last minibatch of 1 sample", "66"]),
]
TOO_FEW_IDS = ["ppo2-batch", "ppo2-rollout", "trpo-rollout", "ppo_lstm-rollout", "ppo_lstm-last-minibatch",
               "maskable_ppo-last-minibatch"]


@pytest.mark.parametrize("algo,hyperparams,num_cpu,words", TOO_FEW_SAMPLES, ids=TOO_FEW_IDS)
def test_too_few_samples_to_normalise_are_refused_on_the_command_line(tmp_path, algo, hyperparams, num_cpu,
                                                                       words) -> None:
    pairs = [f"{name}:{value}" for name, value in hyperparams.items()]
    result = runModule("rl_baselines.train", *GT, "--algo", algo, "--num-timesteps", "64", "--num-cpu", num_cpu,
                       "--hyperparam", *pairs, "--log-dir", tmp_path, "--no-vis")
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("algo,hyperparams,num_cpu,words", TOO_FEW_SAMPLES, ids=TOO_FEW_IDS)
def test_too_few_samples_to_normalise_are_refused_in_python(tmp_path, algo, hyperparams, num_cpu, words) -> None:
    log_dir = tmp_path / "logs"
    with pytest.raises(UsageError) as error:
        rl.trainAgent(algo=algo, env="MobileRobotGymEnv-v0", srl_model="ground_truth", num_timesteps=64,
                      num_cpu=num_cpu, log_dir=str(log_dir), hyperparams=hyperparams)
    for word in words:
        assert word in str(error.value), (word, str(error.value))
    assert not log_dir.exists() or os.listdir(log_dir) == []


def test_enough_samples_to_normalise_are_accepted() -> None:
    # more envs make a rollout of 2 (SB3 skips a last minibatch of 1 sample for ppo2; maskable: 2 x 33 % 32 = 2)
    for algo, hyperparams, num_cpu in [("ppo2", {"n_steps": 1}, 2), ("ppo2", {"n_steps": 65, "batch_size": 64}, 1),
                                       ("maskable_ppo", {"n_steps": 33, "batch_size": 32}, 2),
                                       ("a2c", {"n_steps": 1}, 1), ("trpo", {"batch_size": 1}, 1)]:
        config = rl.makeConfig(algo=algo, env="MobileRobotGymEnv-v0", srl_model="ground_truth", num_timesteps=64,
                               num_cpu=num_cpu, hyperparams=hyperparams)
        assert dict(config.args.hyperparams) == hyperparams


def test_plain_sb3_ppo_builds_from_ppo2s_defaults(tmp_path) -> None:
    # benchmarks.train_speed's reference: SB3's PPO given ppo2's defaults as SB3 takes them (none: None)
    assert timePlainSB3(128, str(tmp_path)) > 0
    assert os.path.isfile(tmp_path / "ppo_model.zip")
