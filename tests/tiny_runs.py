"""The tests' tiny training runs: two games in lockstep (about 3,100 decisions an
iteration), a small network, one worker and one thread, evaluations against ``random``
on four games; ``tiny(**changes)`` gives the fields with some changed."""

TINY = dict(
    num_workers=1,
    num_games=2,
    minibatch_size=512,
    update_epochs=1,
    hidden=32,
    card_embed=4,
    eval_every=0,
    final_eval_games=4,
    eval_opponents="random",
    progress=False,
    torch_threads=1,
)


def tiny(**changes) -> dict:
    """The tiny run's fields with ``changes``."""
    return TINY | changes


def tiny_maskable_ppo(**changes):
    """A small sb3-contrib ``MaskablePPO`` on ``BarbuGymEnv`` (rotating seat, one 16-unit
    layer, 64-step rollouts, on the CPU), untrained; ``changes`` override its arguments."""
    from sb3_contrib import MaskablePPO

    from barbu_env.envs.gym_env import BarbuGymEnv

    kwargs = dict(n_steps=64, batch_size=64, seed=0, policy_kwargs={"net_arch": [16]}, device="cpu")
    return MaskablePPO("MlpPolicy", BarbuGymEnv(seat="rotate"), **(kwargs | changes))
