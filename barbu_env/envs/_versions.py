"""The environment's version and the refusal of the versions before it.

``ENV_VERSION`` is the version of ``barbu_env.env()`` (``barbu_v1``, ``"Barbu-v1"``). An
older name fails with the reason: ``barbu_env.barbu_v0`` is a PettingZoo
``DeprecatedModule`` whose ``env``/``raw_env``/``parallel_env`` raise PettingZoo's
``DeprecatedEnv`` (an ``ImportError``), and ``gymnasium.make("Barbu-v0")`` raises
Gymnasium's ``error.DeprecatedEnv``; both messages name the current version and what
changed since the old one (``CHANGES``). Nothing here imports a framework until a
refusal is raised.
"""

from __future__ import annotations

#: The version of the environment ``barbu_env.env()`` and ``"Barbu-v1"`` make.
ENV_VERSION = 1

#: PettingZoo-style module name and Gymnasium id of the current version.
PETTINGZOO_NAME = f"barbu_v{ENV_VERSION}"
GYM_ENV_ID = f"Barbu-v{ENV_VERSION}"

#: What changed since each old version, for its refusal message.
CHANGES = {
    0: (
        "the observation grew from 924 to 1132 values (observation layout 2: the `excluded` slice, "
        "what play has shown a seat does not hold), environments take an `episode` argument "
        "('game', 'round' or 'hand'), and an unseeded reset() continues the generator of the last "
        "seeded one; so what was learned on v0 does not carry over (barbu 0.2.0)"
    ),
}


def deprecation_message(old: str, new: str, version: int) -> str:
    """The message that refuses ``old`` (an id of ``version``) in favour of ``new``."""
    return f"{old} is now deprecated, use {new} instead. Changes since v{version}: {CHANGES[version]}"


def old_pettingzoo_module(name: str):
    """The stand-in PettingZoo's ``deprecated_handler`` gives for an old ``barbu_vN``
    (``DeprecatedModule``, its functions raising ``DeprecatedEnv`` with ``deprecation_message``'s
    message), or None if ``name`` is not an old version's name."""
    version = {f"barbu_v{v}": v for v in CHANGES}.get(name)
    if version is None:
        return None
    from pettingzoo.utils.deprecated_module import DeprecatedEnv, DeprecatedModule

    message = deprecation_message(name, PETTINGZOO_NAME, version)

    class _OldVersion(DeprecatedModule):
        def __init__(self) -> None:
            def refuse(*args, **kwargs):
                raise DeprecatedEnv(message)

            self.env = self.raw_env = self.parallel_env = self.manual_control = refuse

        def __repr__(self) -> str:
            return f"<deprecated barbu_env.{name}: {message}>"

    return _OldVersion()


def make_gym_v0(**kwargs):
    """The Gymnasium entry point of ``"Barbu-v0"``: raises ``gymnasium.error.DeprecatedEnv``
    with ``deprecation_message``'s message, whatever the arguments."""
    from gymnasium.error import DeprecatedEnv

    raise DeprecatedEnv(deprecation_message("Barbu-v0", GYM_ENV_ID, 0))


#: Gymnasium ids of the old versions and their entry points (each refuses, see above).
OLD_GYM_IDS = {"Barbu-v0": "barbu_env.envs._versions:make_gym_v0"}
