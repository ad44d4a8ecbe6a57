"""Policies trained with other RL libraries as agents: ``barbu eval --agents FILE,...``.

=========================================  ==================================================
spec                                       loader
=========================================  ==================================================
``runs/sb3/model.zip``                     ``load_sb3_agent``: an sb3-contrib ``MaskablePPO``
                                           model (``training/sb3_maskable_ppo.py``)
``runs/rllib/checkpoint`` (a folder)       ``load_rllib_agent``: an RLlib algorithm or
                                           RLModule checkpoint whose module reads
                                           ``{"observations", "action_mask"}``
                                           (``training/rllib_ppo.py``)
=========================================  ==================================================

Both are declared under the ``barbu.agent_loaders`` entry point (``pyproject.toml``)
and import their library only when they recognise a file, so that other agents never
pay for SB3 or Ray. Each returns None for a file that is not its own.

Both formats are pickle-based (an SB3 ``.zip``'s ``data`` holds cloudpickled objects, an
RLlib checkpoint's ``*.pkl`` files are pickles): loading one runs code its author chose.
So each loader recognises its files by their structure only (zip member names, file
names; the SB3 ``data`` is read as JSON, which runs nothing) and, unless called with
``trust=True`` (the spec parameter ``trust=true``, ``barbu eval --trust-pickled``),
raises ``barbu_env.agents.UntrustedFileError`` before anything is unpickled or the
library is imported.

Either network is put behind the ``distribution(obs, mask)`` method that
``training.policy_agent.PolicyAgent`` uses, so these agents act like trained
checkpoints: greedy by default (``deterministic=False`` samples), and one forward pass
for all the games of a tournament job that share a network.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from barbu_env.agents.registry import UntrustedFileError
from barbu_env.extras import require

#: (kind, resolved path, mtime) -> network adapter: tournaments build agents for every game.
_CACHE: dict[tuple[str, str, float], Any] = {}
#: The policy id ``training/rllib_ppo.py`` trains (one policy shared by the four seats).
RLLIB_POLICY_ID = "shared"


def _cached(kind: str, path: Path, build) -> Any:
    key = (kind, str(path.resolve()), path.stat().st_mtime)
    if key not in _CACHE:
        _CACHE[key] = build(path)
    return _CACHE[key]


def _policy_agent(network: Any, seed: int, deterministic: bool, name: str):
    import torch

    from training.policy_agent import PolicyAgent

    torch.set_num_threads(1)
    return PolicyAgent(network, seed=seed, deterministic=deterministic, name=name)


# ---------------------------------------------------------------------- stable-baselines3


def is_sb3_model(path: Path) -> bool:
    """True for an SB3 ``.zip`` saved by ``model.save`` (it holds ``data`` and ``policy.pth``)."""
    if path.suffix != ".zip" or not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as z:
        return {"data", "policy.pth"} <= set(z.namelist())


def check_maskable(path: Path) -> None:
    """A ValueError unless the SB3 model at ``path`` is a MaskablePPO one, read from the
    ``data`` member as JSON (which unpickles nothing)."""
    with zipfile.ZipFile(path) as z:
        try:
            data = json.loads(z.read("data"))
        except (ValueError, UnicodeDecodeError):
            raise ValueError(f"{path} is not an SB3 model (its data is not JSON)") from None
    policy_class = data.get("policy_class", {}) if isinstance(data, dict) else {}
    if "Maskable" not in str(policy_class):
        raise ValueError(f"{path} is an SB3 model but not a MaskablePPO one: only masked policies can play Barbu")


class SB3MaskablePolicy:
    """A MaskablePPO model's policy as ``distribution(obs, mask) -> .probs`` (loading it
    unpickles the model's ``data``: for trusted files only)."""

    def __init__(self, path: Path):  # load_sb3_agent has checked that it is a MaskablePPO model
        from sb3_contrib import MaskablePPO

        self.model = MaskablePPO.load(path, device="cpu")
        self.model.policy.set_training_mode(False)

    def distribution(self, obs, mask):
        return self.model.policy.get_distribution(obs, action_masks=mask.numpy()).distribution


def load_sb3_agent(path: str | Path, seed: int = 0, deterministic: bool = True, trust: bool = False, **_: Any):
    """An agent playing a MaskablePPO ``.zip`` (greedy unless ``deterministic=False``);
    None for other files; ``UntrustedFileError`` without ``trust`` (the file is pickled)."""
    path = Path(path)
    if not is_sb3_model(path):
        return None
    check_maskable(path)
    if not trust:
        raise UntrustedFileError(path, "a stable-baselines3 model")
    require("sb3_contrib", "train", f"the stable-baselines3 model {path.name}", package="sb3-contrib")
    return _policy_agent(_cached("sb3", path, SB3MaskablePolicy), seed, deterministic, path.stem)


# ---------------------------------------------------------------------- RLlib


def rllib_module_dir(path: Path, policy_id: str = RLLIB_POLICY_ID) -> Path | None:
    """The RLModule checkpoint inside an RLlib checkpoint folder: the folder itself if it
    is one, else the module ``policy_id`` of an algorithm checkpoint; None otherwise."""
    if not path.is_dir():
        return None
    for candidate in (
        path / "learner_group" / "learner" / "rl_module" / policy_id,
        path / policy_id,
        path,
    ):
        if (candidate / "class_and_ctor_args.pkl").exists() and (candidate / "module_state.pkl").exists():
            return candidate
    return None


class RLlibMaskedPolicy:
    """An RLModule reading ``{"observations", "action_mask"}`` as ``distribution(obs, mask)``
    (loading it unpickles the checkpoint's ``*.pkl`` files: for trusted folders only)."""

    def __init__(self, module_dir: Path):
        from ray.rllib.core.rl_module.rl_module import RLModule

        self.module = RLModule.from_checkpoint(module_dir.resolve())
        self.module.eval()

    def distribution(self, obs, mask):
        from models.policy import MaskedCategorical

        out = self.module.forward_inference({"obs": {"observations": obs, "action_mask": mask.float()}})
        return MaskedCategorical(out["action_dist_inputs"], mask)


def load_rllib_agent(path: str | Path, seed: int = 0, deterministic: bool = True, trust: bool = False, **_: Any):
    """An agent playing the shared policy of an RLlib checkpoint folder (greedy unless
    ``deterministic=False``); None for other paths; ``UntrustedFileError`` without
    ``trust`` (the checkpoint is pickled), checked before Ray is imported."""
    module_dir = rllib_module_dir(Path(path))
    if module_dir is None:
        return None
    if not trust:
        raise UntrustedFileError(path, "an RLlib checkpoint")
    require("ray.rllib", "rllib", f"the RLlib checkpoint {Path(path).name}", package="ray[rllib]")
    return _policy_agent(_cached("rllib", module_dir, RLlibMaskedPolicy), seed, deterministic, Path(path).name)
