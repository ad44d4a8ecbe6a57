"""Policies trained with other RL libraries as agents: ``barbu eval --agents FILE,...``.

=========================================  ==================================================
spec                                       loader
=========================================  ==================================================
``runs/sb3/model.zip``                     ``load_sb3_agent``: an sb3-contrib ``MaskablePPO``
                                           model (``examples/sb3_maskable_ppo.py``)
``runs/rllib/checkpoint`` (a folder)       ``load_rllib_agent``: an RLlib algorithm or
                                           RLModule checkpoint whose module reads
                                           ``{"observations", "action_mask"}``
                                           (``examples/rllib_ppo.py``)
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

An SB3 ``.zip`` is a stranger's file until trusted, so it is read with caps: at most
``SB3_ZIP_LIMIT`` bytes on disk, ``SB3_MAX_MEMBERS`` members, and each member at most its
``SB3_MEMBER_LIMITS`` bytes once decompressed (checked against the zip's header first, then
read with a bounded read, since a header can lie). The ``data`` member is all that is read
before the trust refusal; with trust, SB3 loads the capped copy of the members read so, never
the file itself. A zip bomb is refused in one line without decompressing it.

Either network is put behind the ``distribution(obs, mask)`` method that
``barbu_training.policy_agent.PolicyAgent`` uses, so these agents act like trained
checkpoints: greedy by default (``deterministic=False`` samples), and one forward pass
for all the games of a tournament job that share a network.
"""

from __future__ import annotations

import io
import json
import zipfile
import zlib
from pathlib import Path
from typing import Any

from barbu_env.agents.registry import UntrustedFileError
from barbu_env.util.extras import require

#: (kind, resolved path, mtime) -> network adapter: tournaments build agents for every game.
_CACHE: dict[tuple[str, str, float], Any] = {}
#: The policy id ``examples/rllib_ppo.py`` trains (one policy shared by the four seats).
RLLIB_POLICY_ID = "shared"


def _cached(kind: str, path: Path, build) -> Any:
    """The adapter ``build`` makes of ``path``, made once per file version, with torch on
    one thread while it loads (``one_thread``: the caller's setting is left as it was)."""
    from barbu_models.device import one_thread

    key = (kind, str(path.resolve()), path.stat().st_mtime)
    if key not in _CACHE:
        with one_thread():
            _CACHE[key] = build(path)
    return _CACHE[key]


def _policy_agent(network: Any, seed: int, deterministic: bool, name: str):
    from barbu_training.policy_agent import PolicyAgent

    return PolicyAgent(network, seed=seed, deterministic=deterministic, name=name)


# ---------------------------------------------------------------------- stable-baselines3


#: The most bytes each member of an SB3 ``.zip`` may decompress to: room for policy and value
#: networks of two layers of 4,096 (``policy.pth``) and Adam's moments of them.
SB3_MEMBER_LIMITS = {
    "data": 8_000_000,
    "policy.pth": 256_000_000,
    "policy.optimizer.pth": 512_000_000,
    "pytorch_variables.pth": 1_000_000,
    "_stable_baselines3_version": 1_000,
    "system_info.txt": 100_000,
}
#: The cap of a member ``SB3_MEMBER_LIMITS`` does not name.
SB3_OTHER_MEMBER_LIMIT = 1_000_000
#: The most members an SB3 ``.zip`` may have (``model.save`` writes six).
SB3_MAX_MEMBERS = 32
#: The most bytes an SB3 ``.zip`` may hold on disk: every member at its cap.
SB3_ZIP_LIMIT = sum(SB3_MEMBER_LIMITS.values()) + SB3_MAX_MEMBERS * SB3_OTHER_MEMBER_LIMIT


def is_sb3_model(path: Path) -> bool:
    """True for an SB3 ``.zip`` saved by ``model.save`` (it holds ``data`` and ``policy.pth``);
    a pipe or a device named ``.zip`` is not one (it is not opened). A ``.zip`` over the caps
    of an SB3 model (its size, its number of members) is a ValueError, before its list of
    members is read."""
    if path.suffix != ".zip" or not path.is_file() or not zipfile.is_zipfile(path):
        return False
    _check_zip_size(path)
    with zipfile.ZipFile(path) as z:
        return {"data", "policy.pth"} <= set(z.namelist())


#: The end of a zip's central directory: its signature, and where its entry count and size are.
_END_SIGNATURE, _END_LENGTH = b"PK\x05\x06", 22


def _check_zip_size(path: Path) -> None:
    """Refuse a zip larger than ``SB3_ZIP_LIMIT`` bytes, or whose central directory (read
    from its end record, before ``zipfile`` parses it) lists over ``SB3_MAX_MEMBERS`` members."""
    from barbu_env.util.files import InputError

    size = path.stat().st_size
    if size > SB3_ZIP_LIMIT:
        raise InputError(f"{path} is {size:,} bytes, over the {SB3_ZIP_LIMIT:,} of an SB3 model: refused unread")
    with open(path, "rb") as f:
        f.seek(max(0, size - (_END_LENGTH + 65_535)))  # the end record, and a comment of at most 64 KB
        tail = f.read()
    at = tail.rfind(_END_SIGNATURE)
    if at < 0 or len(tail) < at + _END_LENGTH:
        return  # zipfile says what is wrong with it
    entries = int.from_bytes(tail[at + 10 : at + 12], "little")  # 0xFFFF: see the Zip64 record, a zip too big
    if entries > SB3_MAX_MEMBERS:
        raise InputError(f"{path} lists {entries:,} members, an SB3 model at most {SB3_MAX_MEMBERS}: refused unread")


def _member_limit(name: str) -> int:
    return SB3_MEMBER_LIMITS.get(name, SB3_OTHER_MEMBER_LIMIT)


def read_sb3_members(path: Path, names: list[str] | None = None) -> dict[str, bytes]:
    """The members ``names`` (default: every member) of the SB3 ``.zip`` at ``path``, each
    read with its cap (``SB3_MEMBER_LIMITS``); a ValueError naming the file and the member
    for a file or member over its cap (refused unread where the header says so), too many
    members, or a damaged zip."""
    from barbu_env.util.files import InputError, quote

    _check_zip_size(path)
    out: dict[str, bytes] = {}
    try:
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
            if len(infos) > SB3_MAX_MEMBERS:
                raise InputError(f"{path} has {len(infos):,} members, an SB3 model at most {SB3_MAX_MEMBERS}: refused")
            for info in infos:
                if names is not None and info.filename not in names:
                    continue
                limit = _member_limit(info.filename)
                over = f"{path}: its member {quote(info.filename)} is over {limit:,} bytes decompressed"
                if info.file_size > limit:
                    raise InputError(f"{over} ({info.file_size:,} by its header): refused unread")
                with z.open(info) as member:
                    data = member.read(limit + 1)  # the header can lie: never more than the cap
                if len(data) > limit:
                    raise InputError(f"{over}: refused")
                out[info.filename] = data
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as e:
        # RuntimeError: an encrypted member; BadZipFile: a bad CRC, a truncated member
        raise InputError(f"{path} is not a readable zip ({str(e).splitlines()[0] if str(e) else e})") from None
    return out


def check_maskable(path: Path) -> None:
    """A ValueError unless the SB3 model at ``path`` is a MaskablePPO one, read from the
    ``data`` member (at most its cap) as JSON (which unpickles nothing)."""
    raw = read_sb3_members(path, ["data"]).get("data", b"")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError; RecursionError: nested deep
        raise ValueError(f"{path} is not an SB3 model (its data is not JSON)") from None
    policy_class = data.get("policy_class", {}) if isinstance(data, dict) else {}
    if "Maskable" not in str(policy_class):
        raise ValueError(f"{path} is an SB3 model but not a MaskablePPO one: only masked policies can play Barbu")


def _capped_copy(path: Path) -> io.BytesIO:
    """The SB3 ``.zip`` at ``path`` rebuilt in memory from its members read with their caps
    (stored uncompressed): what SB3 loads, so that it decompresses nothing itself."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as z:
        for name, data in read_sb3_members(path).items():
            z.writestr(name, data)
    buffer.seek(0)
    return buffer


class SB3MaskablePolicy:
    """A MaskablePPO model's policy as ``distribution(obs, mask) -> .probs`` (loading it
    unpickles the model's ``data``: for trusted files only)."""

    def __init__(self, path: Path):  # load_sb3_agent has checked that it is a MaskablePPO one
        from sb3_contrib import MaskablePPO

        self.model = MaskablePPO.load(_capped_copy(path), device="cpu")
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
        from barbu_models.policy import MaskedCategorical

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
