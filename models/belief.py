"""The belief network: from one seat's observation, which of the three other seats holds
each card (torch only).

It reads the whole observation (``barbu_env/game/observation.py``, float [1132]: the card
rows, including the cards played by each seat and the ``excluded`` rows, and the public
fields) through a small MLP and outputs logits [52, 3]: for each card, over relative seats
1, 2, 3 (the observer's left, opposite, right), a *correction* to the logarithms of the
exact uniform marginals (what the counting and the exclusions alone say): the probabilities
are the softmax of the sum. Its last layer starts at zero, so an untrained network is the
uniform sampler, and training learns only what the play says beyond the counting. The
logits say nothing about cards that are not hidden, nor about the constraints;
``barbu_env.belief`` adds the uniform marginals and applies the constraints exactly after
it. ``BeliefModel`` is the network ready to use: its ``temperature`` (fitted on validation
games, 1 = none) divides the correction (a larger one moves toward uniform), and
``logits(obs)`` takes and returns numpy arrays.

A checkpoint (``BeliefModel.save``) is a dict of plain values and tensors, loaded with
``torch.load(weights_only=True)``: ``format`` (``"barbu-belief"``), ``obs_layout`` (the
observation layout it reads, ``observation.OBS_LAYOUT``: another layout is refused),
``config`` (``BeliefConfig``'s fields), ``temperature``, ``state_dict`` and ``meta``
(how it was trained: a dict of strings and numbers).

>>> import numpy as np
>>> m = BeliefModel(BeliefNet(BeliefConfig(hidden=8)))
>>> m.logits(np.zeros((2, 1132), np.float32)).shape
(2, 52, 3)
"""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from barbu_env.game.cards import NUM_CARDS
from barbu_env.game.observation import OBS_DIM, OBS_LAYOUT
from barbu_env.util.extras import needs
from barbu_env.util.files import replacing

with needs("train", "barbu_models.belief"):  # one line if the extra is missing
    import torch
    from torch import nn

    from barbu_models.device import one_thread

#: What a belief checkpoint says it is.
FORMAT = "barbu-belief"
#: The other seats, relative seats 1, 2, 3.
NUM_OTHERS = 3


@dataclass(frozen=True)
class BeliefConfig:
    """Everything needed to rebuild the network (saved in every checkpoint)."""

    obs_dim: int = OBS_DIM
    """Observation length."""
    hidden: int = 256
    """Width of each hidden layer."""
    layers: int = 2
    """Hidden layers."""
    dropout: float = 0.0
    """Dropout after each hidden layer, in training."""


class BeliefNet(nn.Module):
    """An MLP from observations [n, obs_dim] to logits [n, 52, 3]."""

    def __init__(self, config: BeliefConfig = BeliefConfig()):
        super().__init__()
        self.config = config
        sizes = [config.obs_dim] + [config.hidden] * config.layers
        layers: list[nn.Module] = []
        for a, b in zip(sizes, sizes[1:]):
            layers += [nn.Linear(a, b), nn.ReLU()] + ([nn.Dropout(config.dropout)] if config.dropout else [])
        layers.append(nn.Linear(sizes[-1], NUM_CARDS * NUM_OTHERS))
        nn.init.zeros_(layers[-1].weight)  # it starts as the uniform sampler: no correction
        nn.init.zeros_(layers[-1].bias)
        self.body = nn.Sequential(*layers)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.body(obs).view(-1, NUM_CARDS, NUM_OTHERS)


class BeliefModel:
    """A trained ``BeliefNet`` with its temperature, for inference (CPU, no gradients)."""

    def __init__(self, net: BeliefNet, temperature: float = 1.0, meta: dict[str, Any] | None = None):
        self.net = net.eval()
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not 1e-3 <= temperature <= 1e3:
            raise ValueError(f"a belief model's temperature is a number from 0.001 to 1000, not {temperature!r}")
        self.temperature = float(temperature)
        self.meta = dict(meta or {})
        self.source = ""

    def __repr__(self) -> str:
        return f"BeliefModel({self.source or 'in memory'})"

    @torch.no_grad()
    def logits(self, obs: np.ndarray) -> np.ndarray:
        """Float32 logits [n, 52, 3] (relative seats 1, 2, 3) of observations [n, 1132],
        divided by the temperature."""
        x = torch.as_tensor(np.asarray(obs, dtype=np.float32)).reshape(-1, self.net.config.obs_dim)
        with one_thread():
            return (self.net(x) / self.temperature).numpy()

    def save(self, path: str | Path) -> None:
        """Write the checkpoint (module docstring) to ``path``."""
        state = {
            "format": FORMAT,
            "obs_layout": OBS_LAYOUT,
            "config": dataclasses.asdict(self.net.config),
            "temperature": self.temperature,
            "state_dict": self.net.state_dict(),
            "meta": self.meta,
        }
        with replacing(path) as partial:  # whole or not at all: an old checkpoint survives a full disk
            torch.save(state, partial)

    @classmethod
    def load(cls, path: str | Path) -> BeliefModel:
        """The model saved at ``path``; ValueError if it is not a belief checkpoint of this
        observation layout."""
        try:
            data = torch.load(path, map_location="cpu", weights_only=True)
        except (OSError, EOFError, RuntimeError, ValueError, KeyError, TypeError, pickle.UnpicklingError) as e:
            if isinstance(e, OSError) and not Path(path).is_file():
                raise ValueError(f"{path}: no such belief network checkpoint file") from None
            raise ValueError(f"{path} is not a belief network checkpoint (torch could not read it)") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"{path} is not a belief network checkpoint")
        if data.get("obs_layout") != OBS_LAYOUT:
            raise ValueError(f"{path} reads observation layout {data.get('obs_layout')}, not {OBS_LAYOUT}")
        config = data.get("config")
        if not isinstance(config, dict) or config.get("obs_dim", OBS_DIM) != OBS_DIM:
            raise ValueError(
                f"{path} is a damaged belief network checkpoint: its network reads "
                f"{config.get('obs_dim') if isinstance(config, dict) else '?'} values, an observation has {OBS_DIM}"
            )
        try:
            net = BeliefNet(BeliefConfig(**config))
            net.load_state_dict(data["state_dict"])
            model = cls(net, data["temperature"], data.get("meta"))
        except (KeyError, TypeError, ValueError, RuntimeError) as e:
            why = " ".join(f"{type(e).__name__}: {e}".split())
            raise ValueError(f"{path} is a damaged belief network checkpoint ({why[:300]})") from None
        if not all(torch.isfinite(t).all() for t in net.state_dict().values()):
            raise ValueError(f"{path} is a damaged belief network checkpoint: its weights hold NaN or infinity")
        model.source = str(path)
        return model


def load_for_inference(path: str | Path) -> BeliefModel:
    """``BeliefModel.load`` with torch on one thread while it loads (``one_thread``), as the
    shipped policies' loaders do; ``logits`` computes on one thread too."""
    with one_thread():
        return BeliefModel.load(path)


__all__ = ["FORMAT", "BeliefConfig", "BeliefModel", "BeliefNet", "load_for_inference"]
