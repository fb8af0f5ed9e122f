"""srl_toolbox.optimizers: multiTensorSteps (the same floats, the saved state unchanged) and fusedSteps."""
from __future__ import annotations

import pytest
import torch
import torch.optim.adam as adam_module
import torch.optim.rmsprop as rmsprop_module
from conftest import trainHere

from srl_toolbox.optimizers import fusedSteps, multiTensorSteps

OPTIMIZERS = {"adam": (torch.optim.Adam, {"lr": 2.5e-4, "eps": 1e-5}),
              "adam-decay": (torch.optim.Adam, {"lr": 1e-3, "weight_decay": 1e-4}),
              "rmsprop": (torch.optim.RMSprop, {"lr": 7e-4, "alpha": 0.99, "eps": 1e-5}),
              "sgd-momentum": (torch.optim.SGD, {"lr": 0.01, "momentum": 0.9})}


def network() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 8, 4), torch.nn.Flatten(), torch.nn.Linear(8 * 15 * 15, 32),
                               torch.nn.Linear(32, 4))


def stepped(name: str, hooked: bool, steps: int = 30) -> tuple[torch.nn.Module, torch.optim.Optimizer, list]:
    """:return: a network after ``steps`` steps of seeded random gradients, its optimizer, each step's foreach"""
    optimizer_class, options = OPTIMIZERS[name]
    net = network()
    optimizer = optimizer_class(net.parameters(), **options)
    if hooked:
        multiTensorSteps([optimizer])
    seen = []  # (registered after multiTensorSteps' hook: runs after it, before the step)
    optimizer.register_step_pre_hook(lambda opt, args, kwargs: seen.append(opt.param_groups[0]["foreach"]))
    generator = torch.Generator().manual_seed(1)
    for _ in range(steps):
        for parameter in net.parameters():
            parameter.grad = torch.randn(parameter.shape, generator=generator)
        optimizer.step()
    return net, optimizer, seen


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_multi_tensor_steps_give_the_same_parameters_and_save_the_same_state(name):
    plain_net, plain, plain_seen = stepped(name, hooked=False)
    net, optimizer, seen = stepped(name, hooked=True)
    assert plain_seen == [None] * 30 and seen == [True] * 30  # torch's loop, then the multi-tensor steps
    assert all(torch.equal(a, b) for a, b in zip(plain_net.parameters(), net.parameters(), strict=True))
    plain_state, state = plain.state_dict(), optimizer.state_dict()
    assert state["param_groups"] == plain_state["param_groups"]  # foreach back to None after each step
    for index, entry in plain_state["state"].items():
        assert all(torch.equal(torch.as_tensor(value), torch.as_tensor(state["state"][index][key]))
                   for key, value in entry.items())


def test_a_chosen_implementation_is_kept_and_a_second_call_hooks_nothing_more():
    net = network()
    chosen = torch.optim.Adam(net.parameters(), foreach=False)
    fused = torch.optim.Adam(net.parameters(), fused=True)
    multiTensorSteps([chosen, fused, chosen])
    assert len(chosen._optimizer_step_pre_hooks) == 1
    for optimizer in (chosen, fused):
        seen = []
        optimizer.register_step_pre_hook(lambda opt, args, kwargs: seen.append(opt.param_groups[0]["foreach"]))
        for parameter in net.parameters():
            parameter.grad = torch.ones_like(parameter)
        optimizer.step()
        assert seen == [False if optimizer is chosen else None]


def test_a_step_that_raised_gives_its_groups_back_at_the_next_step():
    net = network()
    optimizer = torch.optim.Adam(net.parameters())
    multiTensorSteps([optimizer])
    optimizer.register_step_pre_hook(lambda opt, args, kwargs: (_ for _ in ()).throw(RuntimeError("stop")))
    for parameter in net.parameters():
        parameter.grad = torch.ones_like(parameter)
    with pytest.raises(RuntimeError):
        optimizer.step()
    assert optimizer.param_groups[0]["foreach"] is True  # (the post-hook did not run)
    optimizer._optimizer_step_pre_hooks.popitem()  # the raising hook
    optimizer.step()
    assert optimizer.state_dict()["param_groups"][0]["foreach"] is None


@pytest.mark.parametrize("algo", ["ppo2", "a2c", "ppo1"])
def test_training_steps_the_optimizers_multi_tensor(tmp_path, monkeypatch, algo):
    """ppo2 (SB3's Adam), a2c (SB3's RMSprop) and ppo1 (the toolbox's own Adam) step through the multi-tensor code."""
    calls = {"single": 0, "multi": 0}
    for module, name in ((adam_module, "adam"), (rmsprop_module, "rmsprop")):
        for kind in ("single", "multi"):
            original = getattr(module, f"_{kind}_tensor_{name}")

            def counted(*args, _original=original, _kind=kind, **kwargs):
                calls[_kind] += 1
                return _original(*args, **kwargs)
            monkeypatch.setattr(module, f"_{kind}_tensor_{name}", counted)
    trainHere("--algo", algo, "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth", "--num-timesteps", "256",
              "--num-cpu", "1", "--seed", "0", "--log-dir", str(tmp_path))
    assert calls["multi"] > 0 and calls["single"] == 0


def test_within_fused_steps_adam_steps_fused_rmsprop_as_before_and_the_saved_state_is_the_default():
    """fusedSteps: Adam's step is torch's fused one (the same bits as an Adam built with fused=True), for the step
    alone (the saved state says torch's default); RMSprop, which has no fused step, keeps the multi-tensor one."""
    generator = torch.Generator().manual_seed(1)
    reference_net, net, rms_net = network(), network(), network()
    reference = torch.optim.Adam(reference_net.parameters(), lr=1e-3, fused=True)
    optimizer, rmsprop = torch.optim.Adam(net.parameters(), lr=1e-3), torch.optim.RMSprop(rms_net.parameters())
    multiTensorSteps([optimizer, rmsprop])
    seen = []
    for hooked in (optimizer, rmsprop):
        hooked.register_step_pre_hook(lambda opt, args, kwargs: seen.append(
            (type(opt).__name__, opt.param_groups[0].get("fused"), opt.param_groups[0]["foreach"])))
    with fusedSteps([optimizer, rmsprop]):
        for _ in range(20):
            for a, b, c in zip(reference_net.parameters(), net.parameters(), rms_net.parameters(), strict=True):
                a.grad = torch.randn(a.shape, generator=generator)
                b.grad, c.grad = a.grad.clone(), a.grad.clone()
            reference.step()
            optimizer.step()
            rmsprop.step()
    assert seen == [("Adam", True, None), ("RMSprop", None, True)] * 20
    assert all(torch.equal(a, b) for a, b in zip(reference_net.parameters(), net.parameters(), strict=True))
    assert optimizer.state_dict()["param_groups"][0]["fused"] is None
    seen.clear()
    optimizer.step()  # outside: the multi-tensor step again
    assert seen == [("Adam", None, True)]
