"""ACER and ACKTR, written here in torch: the pieces of their updates against hand-computed numbers and direct
computations, learning on CartPole, the train command, and their model files."""
from __future__ import annotations

import os

import gymnasium as gym
import numpy as np
import pytest
import torch
from conftest import runFolder, runTrain, trainArgs
from stable_baselines3.common.env_util import make_vec_env
from torch import nn

from rl_baselines.rl_algorithm.acer import (
    ACERModel,
    acerLoss,
    retraceTargets,
    truncatedImportanceWeights,
    trustRegionProjection,
)
from rl_baselines.rl_algorithm.acktr import ACKTRModel
from rl_baselines.rl_algorithm.kfac import KFACOptimizer
from rl_baselines.runs.train_checks import baseParser

BOX_OBS = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
IMAGE_OBS = gym.spaces.Box(0, 255, (40, 40, 3), np.uint8)


@pytest.fixture(autouse=True)
def _oneThread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the machine is shared; one thread is also what the train command uses
    yield
    torch.set_num_threads(threads)


# --- ACER pieces ---------------------------------------------------------------------------------------------------


def test_retrace_targets_hand_computed():
    # Two envs with the same numbers; the second one ends its episode after step 1.
    rewards = torch.tensor([[1.0, 0.0, 2.0], [1.0, 0.0, 2.0]])
    dones = torch.tensor([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    q_taken = torch.tensor([[0.5, 1.0, 1.5]] * 2)
    values = torch.tensor([[0.4, 0.8, 1.2, 2.0]] * 2)
    rho = torch.tensor([[0.5, 2.0, 0.25]] * 2)  # truncated at 1: 0.5, 1.0, 0.25
    targets = retraceTargets(rewards, dones, q_taken, values, rho, gamma=0.5)
    # env 0: t=2: 2 + .5*2 = 3;  carry .25*(3 - 1.5) + 1.2 = 1.575
    #        t=1: 0 + .5*1.575 = .7875;  carry 1*(.7875 - 1) + .8 = .5875
    #        t=0: 1 + .5*.5875 = 1.29375
    # env 1: t=2: 3;  t=1: done -> 0;  carry 1*(0 - 1) + .8 = -.2;  t=0: 1 + .5*(-.2) = .9
    np.testing.assert_allclose(targets.numpy(), [[1.29375, 0.7875, 3.0], [0.9, 0.0, 3.0]], rtol=1e-6)


def test_truncated_importance_weights_hand_computed():
    rho = torch.tensor([[0.5, 20.0, 5.0], [2.0, 40.0, 0.1]])
    truncated, correction = truncatedImportanceWeights(rho, torch.tensor([1, 0]), c=10.0)
    np.testing.assert_allclose(truncated.numpy(), [10.0, 2.0])  # min(c, rho) of the taken actions
    # [1 - c/rho]+ : only the ratios above c leave something for the bias correction
    np.testing.assert_allclose(correction.numpy(), [[0.0, 0.5, 0.0], [0.0, 0.75, 0.0]], atol=1e-6)


def test_acer_loss_gradients_hand_computed():
    """One env, one step, two actions: the truncated term, the bias correction and the Q regression by hand."""
    pi = torch.tensor([[[0.8, 0.2], [0.5, 0.5]]], requires_grad=True)  # states s0, s1
    q = torch.tensor([[[1.0, 3.0], [2.0, 2.0]]], requires_grad=True)
    mu = torch.tensor([[[0.01, 0.99]]])  # rho = [80, 0.202]: action 0 truncated at c = 10
    loss, stats = acerLoss(pi, q, avg_pi=pi.detach()[:, :1], mu=mu, actions=torch.tensor([[0]]),
                           rewards=torch.tensor([[1.0]]), dones=torch.tensor([[0.0]]), gamma=0.9,
                           correction_term=10.0, ent_coef=0.0, q_coef=0.5, trust_region=False, delta=1.0)
    # V(s0) = .8*1 + .2*3 = 1.4;  V(s1) = 2;  Q_ret = 1 + .9*2 = 2.8;  advantage 1.4
    # truncated term: -log pi(0) * 1.4 * min(10, 80) -> d/dpi(0) = -14 / .8 = -17.5
    # bias correction: weights [1 - 10/80, 0] = [.875, 0]; (Q - V) = [-.4, 1.6]
    #   loss_bc = -log(.8) * (-.4 * .875 * .8) = .28 log(.8) -> d/dpi(0) = .28 / .8 = .35
    # Q regression: .5 * .5 * (2.8 - 1)^2 -> d/dQ(s0, 0) = .5 * (1 - 2.8) = -.9
    assert stats["loss_bias"] == pytest.approx(0.28 * np.log(0.8), rel=1e-4)
    assert stats["loss_q"] == pytest.approx(0.5 * 1.8**2, rel=1e-5)
    loss.backward()
    np.testing.assert_allclose(pi.grad[0, 0].numpy(), [-17.5 + 0.35, 0.0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(pi.grad[0, 1].numpy(), [0.0, 0.0])  # the bootstrap state only enters as a target
    np.testing.assert_allclose(q.grad[0, 0].numpy(), [-0.9, 0.0], rtol=1e-5)


def test_trust_region_projection_hand_computed():
    pi = avg_pi = torch.tensor([[0.5, 0.5], [0.5, 0.5]])  # k = -avg/pi = [-1, -1]
    grad = torch.tensor([[2.0, 0.0], [-3.0, 1.0]])
    projected = trustRegionProjection(grad, pi, avg_pi, delta=1.0)
    # row 0: k.g = -2 <= delta: unchanged.  row 1: k.g = 2 > 1: g - (2 - 1)/|k|^2 k = g + .5 = [-2.5, 1.5]
    np.testing.assert_allclose(projected.numpy(), [[2.0, 0.0], [-2.5, 1.5]], rtol=1e-5)
    k = -avg_pi / pi
    assert float((k[1] * projected[1]).sum()) == pytest.approx(1.0, rel=1e-5)  # on the trust region's border


def _klAfterOneUpdate(trust_region: bool) -> tuple[float, float]:
    """KL(average || policy) before and after one ACER update, the average policy kept apart from the policy."""
    torch.manual_seed(0)
    model = ACERModel()
    model.setup(BOX_OBS, gym.spaces.Discrete(3), {"trust_region": trust_region, "delta": 0.1, "ent_coef": 0.0})
    with torch.no_grad():
        for param in model.average_policy.parameters():
            param.add_(torch.randn_like(param) * 0.5)
    average_weights = {k: v.clone() for k, v in model.average_policy.state_dict().items()}
    rng = np.random.default_rng(0)
    n_envs, n_steps = 4, 5
    obs = rng.normal(size=(n_envs, n_steps + 1, 4)).astype(np.float32)
    flat = torch.as_tensor(obs[:, :n_steps]).reshape(-1, 4)

    def kl() -> float:
        with torch.no_grad():
            average, current = model.average_policy(flat)[0], model.policy(flat)[0]
        return float((average * (average.log() - current.log())).sum(-1).mean())

    before = kl()
    with torch.no_grad():
        mus = model.policy(flat)[0].reshape(n_envs, n_steps, 3).numpy()
    model.update(obs, rng.integers(0, 3, size=(n_envs, n_steps)), 5 * rng.normal(size=(n_envs, n_steps)).astype(np.float32),
                 np.zeros((n_envs, n_steps), np.float32), mus, learning_rate=1e-3)
    model.average_policy.load_state_dict(average_weights)  # measure against the same average policy
    return before, kl()


def test_trust_region_limits_kl_to_average_policy():
    before, with_region = _klAfterOneUpdate(True)
    _, without_region = _klAfterOneUpdate(False)
    assert without_region > before  # the unconstrained step moves away from the average policy
    assert with_region < without_region - 0.01 * (without_region - before)


# --- K-FAC ---------------------------------------------------------------------------------------------------------


def _sampledFisherLoss(logits: torch.Tensor, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean negative log-likelihood of actions sampled from the network's own softmax."""
    with torch.no_grad():
        sampled = torch.multinomial(torch.softmax(logits, -1), 1, generator=generator).squeeze(1)
    return nn.functional.cross_entropy(logits, sampled), sampled


def test_kfac_factors_match_direct_computation_linear():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    optimizer = KFACOptimizer(net)
    x = torch.randn(6, 3)
    with optimizer.recordStats():
        fisher_loss, sampled = _sampledFisherLoss(net(x), torch.Generator().manual_seed(1))
        fisher_loss.backward()
    # Direct: per sample, the input with a 1 appended and the gradient of -log p(sampled) w.r.t. the pre-activation.
    first_inputs, second_inputs, first_grads, second_grads = [], [], [], []
    for index in range(len(x)):
        pre1 = net[0](x[index:index + 1])
        hidden = torch.tanh(pre1)
        pre2 = net[2](hidden)
        loss = nn.functional.cross_entropy(pre2, sampled[index:index + 1])
        grad1, grad2 = torch.autograd.grad(loss, (pre1, pre2))
        first_inputs.append(torch.cat([x[index], torch.ones(1)]))
        second_inputs.append(torch.cat([hidden[0].detach(), torch.ones(1)]))
        first_grads.append(grad1[0])
        second_grads.append(grad2[0])
    for layer, inputs, grads in ((net[0], first_inputs, first_grads), (net[2], second_inputs, second_grads)):
        a, g = torch.stack(inputs), torch.stack(grads)
        factor_a, factor_g = optimizer.factors(layer)
        torch.testing.assert_close(factor_a, a.t() @ a / len(x))
        torch.testing.assert_close(factor_g, g.t() @ g / len(x))


def test_kfac_factors_match_direct_computation_conv():
    torch.manual_seed(0)
    conv = nn.Conv2d(2, 3, kernel_size=2, stride=1)
    net = nn.Sequential(conv, nn.ReLU(), nn.Flatten(), nn.Linear(3 * 3 * 3, 2))
    optimizer = KFACOptimizer(net)
    x = torch.randn(4, 2, 4, 4)
    with optimizer.recordStats():
        fisher_loss, sampled = _sampledFisherLoss(net(x), torch.Generator().manual_seed(1))
        fisher_loss.backward()
    patches, grad_sum = [], torch.zeros(3, 3)
    for index in range(len(x)):
        pre = conv(x[index:index + 1])
        loss = nn.functional.cross_entropy(net[1:](pre), sampled[index:index + 1])
        (grad,) = torch.autograd.grad(loss, pre)
        for row in range(3):
            for col in range(3):
                patch = x[index, :, row:row + 2, col:col + 2].reshape(-1)  # channel-major, like the weight
                patches.append(torch.cat([patch, torch.ones(1)]))
                g = grad[0, :, row, col]
                grad_sum += torch.outer(g, g)
    patches = torch.stack(patches)
    factor_a, factor_g = optimizer.factors(conv)
    # A: mean over samples and output locations; G: summed over locations, mean over samples
    torch.testing.assert_close(factor_a, patches.t() @ patches / len(patches))
    torch.testing.assert_close(factor_g, grad_sum / len(x))


def _layerBlock(optimizer: KFACOptimizer, layer: nn.Linear) -> torch.Tensor:
    factor_a, factor_g = optimizer.factors(layer)
    # Weights and bias as one (out, in + 1) matrix flattened row by row: the Fisher block is G ⊗ A.
    return torch.kron(factor_g.double(), factor_a.double())


def test_kfac_step_is_damped_natural_gradient():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    damping, lr = 0.05, 0.1
    optimizer = KFACOptimizer(net, lr=lr, momentum=0.0, damping=damping, kl_clip=1e6, inverse_interval=1)
    x = torch.randn(8, 3)
    with optimizer.recordStats():
        logits = net(x)
        _sampledFisherLoss(logits, torch.Generator().manual_seed(1))[0].backward(retain_graph=True)
    optimizer.zero_grad()
    nn.functional.cross_entropy(logits, torch.randint(0, 2, (8,))).backward()
    before = [param.detach().clone() for param in net.parameters()]
    grads = [param.grad.detach().clone() for param in net.parameters()]
    optimizer.step()
    assert optimizer.last_kl_scale == 1.0
    for index, layer in ((0, net[0]), (2, net[2])):  # parameters: weight 0, bias 0, weight 2, bias 2
        grad = torch.cat([grads[index], grads[index + 1][:, None]], dim=1).double()
        block = _layerBlock(optimizer, layer)
        natural = torch.linalg.solve(block + damping * torch.eye(len(block), dtype=torch.float64),
                                     grad.reshape(-1)).reshape(grad.shape)
        step = torch.cat([before[index] - layer.weight.detach(), (before[index + 1] - layer.bias.detach())[:, None]],
                         dim=1).double()
        torch.testing.assert_close(step, lr * natural, rtol=1e-4, atol=1e-7)


def test_kfac_trust_region_scales_the_step_to_kl_clip():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    damping, lr, kl_clip = 0.05, 1.0, 1e-4
    optimizer = KFACOptimizer(net, lr=lr, momentum=0.0, damping=damping, kl_clip=kl_clip, inverse_interval=1)
    x = torch.randn(8, 3)
    with optimizer.recordStats():
        logits = net(x)
        _sampledFisherLoss(logits, torch.Generator().manual_seed(1))[0].backward(retain_graph=True)
    optimizer.zero_grad()
    (10 * nn.functional.cross_entropy(logits, torch.randint(0, 2, (8,)))).backward()
    before = [param.detach().clone() for param in net.parameters()]
    optimizer.step()
    assert optimizer.last_kl_scale < 1.0
    # The step's quadratic KL under the damped Kronecker Fisher, summed over the layers, is exactly kl_clip.
    predicted_kl = 0.0
    for index, layer in ((0, net[0]), (2, net[2])):
        step = torch.cat([before[index] - layer.weight.detach(), (before[index + 1] - layer.bias.detach())[:, None]],
                         dim=1).double().reshape(-1)
        block = _layerBlock(optimizer, layer) + damping * torch.eye(len(step), dtype=torch.float64)
        predicted_kl += float(step @ block @ step)
    assert predicted_kl == pytest.approx(kl_clip, rel=1e-3)


# --- learning --------------------------------------------------------------------------------------------------------


def _trainCartPole(algo_class: type, n_envs: int, max_steps: int, seed: int = 0) -> tuple[int, list[float]]:
    class OnCartPole(algo_class):
        @classmethod
        def makeEnv(cls, args, env_kwargs=None, load_path_normalise=None):
            return make_vec_env("CartPole-v1", n_envs=args.num_cpu, seed=args.seed)

    episode_rewards: list[float] = []

    def callback(_locals, _globals) -> bool:
        episode_rewards.extend(info["episode"]["r"] for info in _locals["infos"] if "episode" in info)
        # Stop once the last 20 episodes average 160 (CartPole-v1 caps episodes at 500; a random policy scores
        # about 22): that it gets there within the budget is the check.
        return not (len(episode_rewards) >= 20 and np.mean(episode_rewards[-20:]) >= 160)

    model = OnCartPole()
    args = trainArgs(seed=seed, num_timesteps=max_steps, num_cpu=n_envs, load_rl_model_path=None)
    model.train(args, callback)
    return model.num_timesteps, episode_rewards


@pytest.mark.slow
@pytest.mark.parametrize("algo_class, n_envs, max_steps", [(ACERModel, 8, 100_000), (ACKTRModel, 4, 60_000)])
def test_learns_cartpole(algo_class, n_envs, max_steps):
    # Measured (default hyperparameters, seeds 0-2): acer 29k-49k steps, acktr 18k-21k steps to a last-20 mean of
    # 160.
    steps, episode_rewards = _trainCartPole(algo_class, n_envs, max_steps)
    assert len(episode_rewards) >= 20
    assert np.mean(episode_rewards[-20:]) > 150, f"{algo_class.NAME}: {steps} steps, last rewards {episode_rewards[-20:]}"


# --- train command, model files ------------------------------------------------------------------------------------


# The step counts go past the first episode's end (250 steps in each env): the best model is saved.
@pytest.mark.slow
@pytest.mark.parametrize("algo, steps, extra", [("acer", 300, ["--hyperparam", "n_steps:10", "replay_start:100"]),
                                                ("acktr", 512, ["-c", "--num-cpu", "2", "--n-steps", "8"])])
def test_train_command(tmp_path, algo, steps, extra):
    run_dir = runFolder(runTrain("--algo", algo, "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth",
                                 "--num-timesteps", steps, "--log-dir", tmp_path, "--min-episodes-save", "1", *extra))
    for folder in (run_dir, os.path.join(run_dir, "best")):
        assert os.path.isfile(os.path.join(folder, f"{algo}_model.pt"))
        assert os.path.isfile(os.path.join(folder, "vecnormalize.npz"))
    assert os.path.isfile(os.path.join(run_dir, "progress.csv"))
    model_class = {"acer": ACERModel, "acktr": ACKTRModel}[algo]
    first = model_class.load(os.path.join(run_dir, f"{algo}_model.pt"))
    assert first.num_timesteps >= steps
    if algo != "acer":
        return
    # Continue training the saved model: the step count goes on, the weights move on, a given flag wins.
    result = runTrain("--algo", algo, "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth",
                      "--num-timesteps", "100", "--log-dir", tmp_path / "continued", "--learning-rate", "0.002",
                      "--load-rl-model-path", os.path.join(run_dir, f"{algo}_model.pt"))
    continued = model_class.load(os.path.join(runFolder(result), f"{algo}_model.pt"))
    assert continued.num_timesteps >= first.num_timesteps + 100
    assert continued.hyperparams["learning_rate"] == 0.002 and continued.hyperparams["n_steps"] == 10
    before, after = first.policy.state_dict(), continued.policy.state_dict()
    assert any(not torch.equal(before[name], after[name]) for name in before)


@pytest.mark.parametrize("algo_class, action_space", [
    (ACERModel, gym.spaces.Discrete(3)),
    (ACKTRModel, gym.spaces.Discrete(3)),
    (ACKTRModel, gym.spaces.Box(-1, 1, (2,), np.float32)),
])
@pytest.mark.parametrize("observation_space", [BOX_OBS, IMAGE_OBS], ids=["vector", "image"])
def test_save_load_gives_same_actions(tmp_path, algo_class, action_space, observation_space):
    torch.manual_seed(0)
    model = algo_class()
    model.setup(observation_space, action_space, {})
    model.num_timesteps = 1234
    observations = np.stack([observation_space.sample() for _ in range(5)])
    path = str(tmp_path / f"{algo_class.NAME}_model.pt")
    model.save(path)
    loaded = algo_class.load(path)
    assert loaded.num_timesteps == 1234 and loaded.hyperparams == model.hyperparams
    np.testing.assert_array_equal(model.getAction(observations, deterministic=True),
                                  loaded.getAction(observations, deterministic=True))
    np.testing.assert_allclose(model.getActionProba(observations), loaded.getActionProba(observations))
    torch.manual_seed(7)
    sampled = model.getAction(observations)
    torch.manual_seed(7)
    np.testing.assert_array_equal(sampled, loaded.getAction(observations))
    if isinstance(action_space, gym.spaces.Discrete):
        probabilities = loaded.getActionProba(observations)
        assert probabilities.shape == (5, 3)
        np.testing.assert_allclose(probabilities.sum(1), 1.0, rtol=1e-5)
    else:
        assert np.all(np.abs(loaded.getAction(observations)) <= 1.0)


def test_load_refuses_bad_files(tmp_path):
    model = ACKTRModel()
    model.setup(BOX_OBS, gym.spaces.Discrete(2), {})
    acktr_path = str(tmp_path / "acktr_model.pt")
    model.save(acktr_path)
    truncated = tmp_path / "truncated.pt"
    with open(acktr_path, "rb") as handle:
        truncated.write_bytes(handle.read()[:200])
    text = tmp_path / "text.pt"
    text.write_text("not a model")
    for path, message in ((acktr_path, "saved by algorithm 'acktr', not 'acer'"), (str(truncated), "acer model"),
                          (str(text), "acer model"), (str(tmp_path / "missing.pt"), "no model file")):
        with pytest.raises(ValueError, match=message) as error:
            ACERModel.load(path)
        assert "\n" not in str(error.value)


def test_hyperparameters_flags_and_search_space():
    for algo_class in (ACERModel, ACKTRModel):
        space = algo_class.getOptParam()
        assert set(space) - {"lr_schedule"} <= set(algo_class.DEFAULT_HYPERPARAMS)
        args = algo_class.customArguments(baseParser()).parse_args(["--n-steps", "7", "--lr-schedule", "linear"])
        assert args.hp_n_steps == 7 and args.hp_lr_schedule == "linear"
        assert algo_class.parserHyperParam({"gamma": "0.95", "lr_schedule": "linear"}) == {"gamma": 0.95,
                                                                                            "lr_schedule": "linear"}
        with pytest.raises(ValueError, match="must be > 0"):
            algo_class.parserHyperParam({"n_steps": "0"})
        with pytest.raises(ValueError, match="one of constant, linear"):
            algo_class.parserHyperParam({"lr_schedule": "cosine"})


def test_a_replay_start_the_memory_never_holds_is_refused():
    """buffer_size 10 keeps one 20-step trajectory per env: replay_start 100 would never replay, silently."""
    defaults = dict(ACERModel.DEFAULT_HYPERPARAMS)
    with pytest.raises(ValueError, match=r"replay_start \(100\) exceeds the 20 steps per env") as error:
        ACERModel.checkHyperparams({**defaults, "buffer_size": 10, "replay_start": 100})
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match=r"replay_start \(1001\) exceeds the 990 steps"):  # 33 trajectories of 30
        ACERModel.checkHyperparams({**defaults, "n_steps": 30, "buffer_size": 1000, "replay_start": 1001})
    ACERModel.checkHyperparams({**defaults, "n_steps": 30, "buffer_size": 1000, "replay_start": 990})
    ACERModel.checkHyperparams({**defaults, "buffer_size": 10, "replay_start": 100, "replay_ratio": 0})  # no replay
    ACERModel.checkHyperparams(defaults)
