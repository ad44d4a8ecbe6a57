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
