"""Running ordinary ``nn.Module`` stacks as spiking networks over time, and their energy."""

from __future__ import annotations

import torch
from torch import nn

from iclr26 import validation as V

from .neurons import FractionalLIF
from .solvers import check_alpha


def _check_sequence(x) -> None:
    V.check_tensor(x, "x", floating=True)
    if x.dim() < 3:
        raise ValueError(f"x must have shape (T, B, features...), got {tuple(x.shape)}")


class SNNWrapper(nn.Module):
    """Runs ``base`` (an ``nn.Sequential`` of Linear/Conv/... layers and fractional neurons) on
    ``(T, B, ...)`` inputs: neuron layers see the whole time axis (they keep the history),
    every other layer is applied to all time steps at once. The output is the last layer's
    (non-spiking) value, averaged over the last ``readout_steps`` steps (all by default).

    ``alpha`` / ``per_layer_alpha`` override the order of every neuron layer; ``alpha = 1``
    turns the network into the ordinary LIF network. ``method`` and ``memory``, when given,
    set the solver and the history length of every neuron layer.
    """

    def __init__(
        self,
        base: nn.Sequential,
        alpha: float | None = None,
        per_layer_alpha: list[float | list[float]] | None = None,
        readout_steps: int | None = None,
        method: str | None = None,
        memory: int | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(base, nn.Sequential):
            raise TypeError(f"base must be an nn.Sequential, got {type(base).__name__}")
        readout_steps = V.check_int(readout_steps, "readout_steps", low=1, allow_none=True)
        self.base = base
        self.readout_steps = readout_steps
        neurons = self.neurons()
        for neuron in neurons:
            neuron.set_solver(method=method, memory=memory)
        if per_layer_alpha is not None:
            if len(per_layer_alpha) != len(neurons):
                raise ValueError(
                    f"per_layer_alpha needs {len(neurons)} orders, got {len(per_layer_alpha)}"
                )
            for neuron, a in zip(neurons, per_layer_alpha):
                neuron.set_alpha(a)
        elif alpha is not None:
            check_alpha(alpha)
            for neuron in neurons:
                neuron.set_alpha(alpha)

    def neurons(self) -> list[FractionalLIF]:
        return [m for m in self.base if isinstance(m, FractionalLIF)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_sequence(x)
        steps, batch = x.shape[:2]
        for layer in self.base:
            if isinstance(layer, FractionalLIF):
                x = layer(x)
            else:
                y = layer(x.reshape(steps * batch, *x.shape[2:]))
                x = y.reshape(steps, batch, *y.shape[1:])
        window = self.readout_steps or steps
        return x[-window:].mean(0)

    def reset_state(self) -> None:
        for neuron in self.neurons():
            neuron.reset_state()


def snn_energy(
    model: SNNWrapper,
    x: torch.Tensor,
    e_ac_pj: float = 0.9,
    e_mac_pj: float = 4.6,
) -> dict:
    """Energy estimate per sample: ``E = e_ac * SOP + e_mac * MAC(first layer)`` (45 nm
    convention). Synaptic operations of a layer fed by spikes = input spikes x fan-out;
    the first layer (analog input) costs dense MACs. Returns the total and its two parts
    (``spiking_energy_pj`` = ``e_ac * SOP``, which depends on the spike activity, and
    ``first_layer_energy_pj``, which does not), the counts and the firing rate per layer.
    """
    if not isinstance(model, SNNWrapper):
        raise TypeError(f"model must be an SNNWrapper, got {type(model).__name__}")
    _check_sequence(x)
    e_ac_pj = V.check_scalar(e_ac_pj, "e_ac_pj", low=0.0)
    e_mac_pj = V.check_scalar(e_mac_pj, "e_mac_pj", low=0.0)
    steps, batch = x.shape[:2]
    sop, mac, rates = 0.0, 0.0, []
    first = True
    with torch.no_grad():
        h = x
        for layer in model.base:
            if isinstance(layer, FractionalLIF):
                h = layer(h)
                rates.append(float(h.mean()))
                continue
            if isinstance(layer, (nn.Linear, nn.Conv1d, nn.Conv2d)):
                y = layer(h.reshape(steps * batch, *h.shape[2:]))
                if isinstance(layer, nn.Linear):
                    fan_out, dense = layer.out_features, layer.in_features * layer.out_features
                else:
                    kernel = int(torch.tensor(layer.kernel_size).prod())
                    fan_out = layer.out_channels * kernel
                    dense = y[0].numel() * layer.in_channels * kernel
                if first:
                    mac += dense * steps
                else:
                    sop += float((h != 0).sum()) / batch * fan_out
                first = False
                h = y.reshape(steps, batch, *y.shape[1:])
            else:
                h = layer(h.reshape(steps * batch, *h.shape[2:]))
                h = h.reshape(steps, batch, *h.shape[1:])
    energy = e_ac_pj * sop + e_mac_pj * mac
    return {
        "energy_pj": energy,
        "spiking_energy_pj": e_ac_pj * sop,
        "first_layer_energy_pj": e_mac_pj * mac,
        "sop": sop,
        "mac": mac,
        "firing_rates": rates,
    }
