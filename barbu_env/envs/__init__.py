"""The environments: PettingZoo AEC, Gymnasium (single and vector), an SB3 ``VecEnv``
(``make_sb3_vec``, from ``sb3_vec``), RLlib and OpenSpiel adapters, and the versions of
each. Import the game, view, agents and util."""


def __getattr__(name: str):
    # make_sb3_vec is imported on first use: its module needs stable-baselines3 (the train extra).
    if name == "make_sb3_vec":
        from .sb3_vec import make_sb3_vec

        return make_sb3_vec
    raise AttributeError(f"module 'barbu_env.envs' has no attribute {name!r}")
