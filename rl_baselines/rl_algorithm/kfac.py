"""K-FAC: Kronecker-factored approximate curvature, the natural-gradient optimizer of ACKTR (Wu et al., 2017).

For a Linear layer with input ``a`` (plus a 1 for the bias) and pre-activation gradient ``g``, the Fisher block of its
weights ``[W | b]`` (out x (in + 1), flattened row by row) is approximated by ``G ⊗ A`` with

    A = E[a aᵀ]        G = E[g gᵀ]

where ``g`` is the per-sample gradient of the log-likelihood of outputs *sampled from the model* (the "Fisher loss").
A Conv2d layer is handled the same way on its input patches (KFC, Grosse & Martens 2016): ``A`` averages the patch
outer products over the batch and the output locations, ``G`` sums the gradient outer products over the locations
and averages them over the batch, so that ``G ⊗ A`` still approximates the Fisher of the layer.

The natural gradient of a layer is ``(G ⊗ A + damping I)⁻¹ vec(∇W)``, computed from the eigendecompositions
``A = Q_A diag(d_A) Q_Aᵀ`` and ``G = Q_G diag(d_G) Q_Gᵀ`` as ``Q_G [(Q_Gᵀ ∇W Q_A) / (d_G d_Aᵀ + damping)] Q_Aᵀ``.
The step is then scaled so that its predicted KL stays under ``kl_clip`` (ACKTR's trust region) and applied with
momentum SGD. Parameters outside Linear/Conv2d layers (a Gaussian log std, for example) get their plain gradient.

Usage::

    optimizer = KFACOptimizer(model, lr=0.25)
    with optimizer.recordStats():                 # hooks record layer inputs and Fisher gradients
        outputs = model(obs)
        fisher_loss = ...                          # a *mean* over the batch of log p(sampled output)
        fisher_loss.backward(retain_graph=True)
    optimizer.zero_grad()
    loss = ...                                     # the training loss, from the same outputs
    loss.backward()
    optimizer.step()
"""
from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

SUPPORTED_LAYERS = (nn.Linear, nn.Conv2d)


def _withOnes(matrix: torch.Tensor) -> torch.Tensor:
    """Append a column of ones (the bias input) to a (n, d) matrix."""
    return torch.cat([matrix, matrix.new_ones(matrix.shape[0], 1)], dim=1)


def layerInputs(module: nn.Module, layer_input: torch.Tensor) -> torch.Tensor:
    """
    The rows whose outer products form A: one per sample (Linear) or per sample and output location (Conv2d).

    :param module: a Linear or Conv2d layer
    :param layer_input: its input batch
    :return: (rows, in_features [+ 1 with a bias])
    """
    if isinstance(module, nn.Conv2d):
        patches = F.unfold(layer_input, module.kernel_size, dilation=module.dilation, padding=module.padding,
                           stride=module.stride)  # (B, C*kh*kw, L), channel-major like weight.view(out, -1)
        rows = patches.transpose(1, 2).reshape(-1, patches.shape[1])
    else:
        rows = layer_input.reshape(-1, layer_input.shape[-1])
    return _withOnes(rows) if module.bias is not None else rows


def factorA(module: nn.Module, layer_input: torch.Tensor) -> torch.Tensor:
    """
    :param module: a Linear or Conv2d layer
    :param layer_input: its input batch
    :return: A = mean over samples (and output locations) of ā āᵀ
    """
    rows = layerInputs(module, layer_input)
    return rows.t() @ rows / rows.shape[0]


def factorG(module: nn.Module, output_grad: torch.Tensor) -> torch.Tensor:
    """
    :param module: a Linear or Conv2d layer
    :param output_grad: gradient of a batch-*mean* Fisher loss with respect to the layer output
    :return: G = mean over samples of g gᵀ (summed over output locations for Conv2d), with g the per-sample gradient
    """
    batch_size = output_grad.shape[0]
    if isinstance(module, nn.Conv2d):
        rows = output_grad.permute(0, 2, 3, 1).reshape(-1, output_grad.shape[1])
    else:
        rows = output_grad.reshape(-1, output_grad.shape[-1])
    rows = rows * batch_size  # undo the 1/B of the mean: per-sample gradients
    return rows.t() @ rows / batch_size


def gradientMatrix(module: nn.Module) -> torch.Tensor:
    """
    :param module: a Linear or Conv2d layer with gradients
    :return: the weight gradient as (out, in [+ 1]) with the bias gradient as the last column
    """
    grad = module.weight.grad.reshape(module.weight.shape[0], -1)
    if module.bias is not None:
        grad = torch.cat([grad, module.bias.grad.reshape(-1, 1)], dim=1)
    return grad


def preconditionedGradient(grad: torch.Tensor, eig_a: tuple[torch.Tensor, torch.Tensor],
                           eig_g: tuple[torch.Tensor, torch.Tensor], damping: float) -> torch.Tensor:
    """
    :param grad: a layer's gradient matrix (out, in [+ 1])
    :param eig_a: eigenvalues and eigenvectors of A
    :param eig_g: eigenvalues and eigenvectors of G
    :param damping: added to every eigenvalue of G ⊗ A
    :return: the matrix of (G ⊗ A + damping I)⁻¹ vec(grad)
    """
    values_a, vectors_a = eig_a
    values_g, vectors_g = eig_g
    rotated = vectors_g.t() @ grad @ vectors_a
    rotated = rotated / (values_g[:, None] * values_a[None, :] + damping)
    return vectors_g @ rotated @ vectors_a.t()


class KFACOptimizer(torch.optim.Optimizer):
    """
    K-FAC with ACKTR's trust region, for the Linear and Conv2d layers of ``model`` (its other parameters take plain
    gradient steps). The running factors and their eigendecompositions live in the optimizer state, so
    ``state_dict()`` saves them with the momentum buffers.

    :param model: the network whose layers are preconditioned (all its parameters are optimised)
    :param lr: learning rate
    :param momentum: momentum of the SGD step (the effective rate is ``lr * (1 - momentum)``, as in ACKTR)
    :param stat_decay: running-average decay of the factors A and G
    :param damping: Tikhonov damping added to the eigenvalues of G ⊗ A
    :param kl_clip: the step is scaled down so that ``lr² vᵀ∇`` (its predicted KL) stays below this
    :param inverse_interval: optimizer steps between eigendecompositions of the factors
    """

    def __init__(
        self,
        model: nn.Module,
        lr: float = 0.25,
        momentum: float = 0.9,
        stat_decay: float = 0.99,
        damping: float = 1e-2,
        kl_clip: float = 1e-3,
        inverse_interval: int = 10,
    ) -> None:
        if lr <= 0 or damping <= 0 or kl_clip <= 0 or not 0 <= momentum < 1 or not 0 <= stat_decay < 1:
            raise ValueError("KFACOptimizer needs lr, damping, kl_clip > 0 and momentum, stat_decay in [0, 1)")
        defaults = {"lr": lr, "momentum": momentum, "stat_decay": stat_decay, "damping": damping,
                    "kl_clip": kl_clip, "inverse_interval": int(inverse_interval)}
        super().__init__(model.parameters(), defaults)
        self.layers = [module for module in model.modules() if isinstance(module, SUPPORTED_LAYERS)]
        for module in self.layers:
            if isinstance(module, nn.Conv2d) and (module.groups != 1 or module.padding_mode != "zeros"):
                raise ValueError("KFACOptimizer supports Conv2d layers with groups=1 and zero padding only")
        self._recording = False
        self._batch_a: dict[nn.Module, torch.Tensor] = {}
        self._batch_g: dict[nn.Module, torch.Tensor] = {}
        self._handles = [module.register_forward_hook(self._forwardHook) for module in self.layers]

    # --- statistics ------------------------------------------------------------------------------------------

    def _forwardHook(self, module: nn.Module, inputs: tuple[torch.Tensor, ...], output: torch.Tensor) -> None:
        if not self._recording:
            return
        self._batch_a[module] = factorA(module, inputs[0].detach())
        if output.requires_grad:
            # The gradient reaching this output during the Fisher backward pass gives G.
            output.register_hook(lambda grad, module=module: self._gradHook(module, grad))

    def _gradHook(self, module: nn.Module, grad: torch.Tensor) -> None:
        if self._recording:
            self._batch_g[module] = factorG(module, grad.detach())

    @contextlib.contextmanager
    def recordStats(self) -> Iterator[None]:
        """
        Within this block, forward passes record each layer's A and the backward pass of the Fisher loss (a batch
        mean of the log-likelihood of sampled outputs) records its G; on exit both enter the running averages.
        """
        self._batch_a.clear()
        self._batch_g.clear()
        self._recording = True
        try:
            yield
        finally:
            self._recording = False
        decay = self.defaults["stat_decay"]
        for module in self.layers:
            if module in self._batch_a and module in self._batch_g:
                state = self.state[module.weight]
                for name, batch in (("A", self._batch_a[module]), ("G", self._batch_g[module])):
                    if name not in state:
                        state[name] = batch.clone()  # the first batch starts the average
                    else:
                        state[name].mul_(decay).add_(batch, alpha=1 - decay)
        self._batch_a.clear()
        self._batch_g.clear()

    def factors(self, module: nn.Module) -> tuple[torch.Tensor, torch.Tensor]:
        """
        :param module: one of the model's Linear/Conv2d layers
        :return: its running (A, G)
        :raises KeyError: no statistics were recorded for it yet
        """
        state = self.state[module.weight]
        return state["A"], state["G"]

    # --- step ------------------------------------------------------------------------------------------------

    def _updateInverses(self) -> None:
        for module in self.layers:
            state = self.state[module.weight]
            if "A" not in state:
                continue
            for name in ("A", "G"):
                values, vectors = torch.linalg.eigh(state[name].double())
                # Tiny negative eigenvalues are round-off of a positive semi-definite matrix.
                state[f"values_{name}"] = values.clamp(min=0).to(state[name].dtype)
                state[f"vectors_{name}"] = vectors.to(state[name].dtype)

    def naturalGradients(self) -> dict[torch.Tensor, torch.Tensor]:
        """
        :return: for every parameter with a gradient, its preconditioned gradient (plain gradient outside the
            supported layers, or while a layer has no factors yet)
        """
        damping = self.defaults["damping"]
        updates: dict[torch.Tensor, torch.Tensor] = {}
        for group in self.param_groups:
            for param in group["params"]:
                if param.grad is not None:
                    updates[param] = param.grad.detach().clone()
        for module in self.layers:
            state = self.state[module.weight]
            if "vectors_A" not in state or module.weight.grad is None:
                continue
            natural = preconditionedGradient(gradientMatrix(module), (state["values_A"], state["vectors_A"]),
                                             (state["values_G"], state["vectors_G"]), damping)
            if module.bias is not None:
                updates[module.bias] = natural[:, -1].reshape(module.bias.shape)
                natural = natural[:, :-1]
            updates[module.weight] = natural.reshape(module.weight.shape)
        return updates

    @torch.no_grad()
    def step(self, closure: Any = None) -> None:
        """Precondition the gradients, scale them into the KL trust region and take a momentum SGD step."""
        if closure is not None:
            raise ValueError("KFACOptimizer.step takes no closure")
        group0 = self.param_groups[0]
        step_count = self.state[self.layers[0].weight].get("step", 0) if self.layers else 0
        if step_count % group0["inverse_interval"] == 0:
            self._updateInverses()
        updates = self.naturalGradients()
        lr = group0["lr"]
        predicted_kl = sum(float((update * param.grad).sum()) for param, update in updates.items()) * lr * lr
        scale = min(1.0, math.sqrt(group0["kl_clip"] / predicted_kl)) if predicted_kl > 0 else 1.0
        for group in self.param_groups:
            momentum = group["momentum"]
            for param in group["params"]:
                if param not in updates:
                    continue
                update = updates[param] * scale
                state = self.state[param]
                if momentum > 0:
                    if "momentum_buffer" not in state:
                        state["momentum_buffer"] = update.clone()
                    else:
                        state["momentum_buffer"].mul_(momentum).add_(update)
                    update = state["momentum_buffer"]
                param.add_(update, alpha=-group["lr"] * (1 - momentum))
        if self.layers:
            self.state[self.layers[0].weight]["step"] = step_count + 1
        self.last_kl_scale = scale
