"""A chain of runs in one config (``stages``): each stage's ``Args`` and the checkpoints
that join them.

``stage_args`` gives each stage's ``Args`` — the top level, then the stage's own fields
(already in the command line's flags' hands: ``barbu_training.config.load_args``) — each
stage after the first starting from the previous stage's ``latest.pt`` (or ``best.pt``:
``init_from``; after a stage of expert iteration, its ``expert.pt``: ``stage_checkpoint``)
unless it names its own ``init``, each named ``<exp_name>-<k>`` unless it names itself.
Each stage's ``Args`` is made (and so checked) once, here; ``Args`` itself checked the
stages' form when it was made. ``resume_path``: the checkpoint a run's ``resume`` names.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from barbu_models.policy import PolicyConfig
from barbu_training.config import Args, ConfigError, ValidationError, config_error, model_config

#: What a stage may name besides the fields: which checkpoint of the previous stage it
#: starts from (``latest.pt``, the default, or ``best.pt``, the best periodic evaluation's).
INIT_FROM = ("latest", "best")


def stage_args(args: Args) -> list[Args]:
    """The ``Args`` of each of ``args.stages``, in order: the top level's fields (but
    ``stages`` and ``resume``, the chain's, and ``expert``, a stage's own), then the
    stage's own; stage k named ``<exp_name>-<k>`` unless it names itself; each stage after
    the first starting from the previous stage's checkpoint (``stage_checkpoint``) unless it
    names its own ``init``. A ConfigError naming the stage and the field otherwise: a bad
    value, a ``resume``, ``stages`` or ``init_from`` it may not name, a ``best.pt`` the
    previous stage will not write (no periodic evaluations), a network shape other than the
    previous stage's (but for a privileged critic or the belief
    rows added; an expert stage trains its init's network as it is), two stages in one
    folder."""
    base = {
        f.name: getattr(args, f.name) for f in dataclasses.fields(Args) if f.name not in ("stages", "resume", "expert")
    }
    out: list[Args] = []
    # whether each stage's network has a privileged critic and reads the belief rows (an expert stage keeps its init's)
    critic: list[bool] = []
    rows: list[bool] = []
    folders: dict[Path, int] = {}
    n = len(args.stages)
    for k, stage in enumerate(args.stages, 1):
        where = f"stages: stage {k} of {n} ({stage.get('exp_name', f'{args.exp_name}-{k}')!r})"
        init_from = stage.get("init_from", "latest")
        chained = k > 1 and "init" not in stage
        for key in ("stages", "resume"):
            if key in stage:
                raise ConfigError(f"{where}: {key} is not a stage's field (a chain resumes whole, with --resume auto)")
        if init_from not in INIT_FROM or ("init_from" in stage and not chained):
            raise ConfigError(f"{where}: init_from is latest or best, on a stage after the first that names no init")
        values = base | {key: v for key, v in stage.items() if key != "init_from"}
        if "exp_name" not in stage:
            values["exp_name"] = f"{args.exp_name}-{k}"
        if chained:
            prev = out[-1]
            if prev.expert and "init_from" in stage:
                raise ConfigError(f"{where}: init_from: stage {k - 1} makes one network by expert iteration")
            values["init"] = stage_checkpoint(prev, init_from)
        try:
            made = Args(**values)
        except ValidationError as e:
            raise config_error(e, f"{where}: ") from None
        if chained:
            if init_from == "best" and not prev.eval_every:
                raise ConfigError(
                    f"{where}: init_from best needs stage {k - 1}'s best.pt, which only its periodic "
                    "evaluations write, and its eval_every is 0"
                )
            mine, theirs = model_config(made), model_config(prev)
            if (mine.hidden, mine.layers, mine.card_embed) != (theirs.hidden, theirs.layers, theirs.card_embed):
                raise ConfigError(
                    f"{where}: hidden/layers/card_embed build another network than stage {k - 1}'s, "
                    f"which it starts from ({mine.hidden}x{mine.layers}, {mine.card_embed} against "
                    f"{theirs.hidden}x{theirs.layers}, {theirs.card_embed})"
                )
            if critic[-1] and not made.central_critic and not made.expert:
                raise ConfigError(f"{where}: central_critic false cannot start from stage {k - 1}'s privileged critic")
            if rows[-1] and not made.belief_rows and not made.expert:
                raise ConfigError(f"{where}: belief_rows false cannot start from stage {k - 1}'s belief rows")
        folder = Path(made.run_dir) / made.exp_name
        if folder in folders:
            raise ConfigError(f"{where}: exp_name runs in stage {folders[folder]}'s folder {folder}")
        folders[folder] = k
        out.append(made)
        critic.append((chained and critic[-1]) if made.expert else made.central_critic)
        rows.append((chained and rows[-1]) if made.expert else made.belief_rows)
    return out


def stage_checkpoint(args: Args, which: str = "latest") -> str:
    """The checkpoint the stage after a run of ``args`` starts from: its ``expert.pt`` (a run
    of expert iteration, ``expert``), else its ``checkpoints/<which>.pt`` (``INIT_FROM``)."""
    folder = Path(args.run_dir) / args.exp_name
    return str(folder / "expert.pt" if args.expert else folder / "checkpoints" / f"{which}.pt")


def resume_path(args: Args) -> str:
    """The checkpoint ``resume`` names: ``auto`` is the run's own ``latest.pt``."""
    if args.resume == "auto":
        return str(Path(args.run_dir) / args.exp_name / "checkpoints" / "latest.pt")
    return args.resume


def describe_network(c: PolicyConfig) -> str:
    """A network's shape in words (refusals name the two networks that differ)."""
    critic = "a privileged critic" if c.state_dim else "no privileged critic"
    head = "a hands head" if c.hands_head else "no hands head"
    rows = f"belief rows ({c.belief_hidden}x{c.belief_layers})" if c.belief_hidden else "no belief rows"
    return f"hidden {c.hidden}, layers {c.layers}, card_embed {c.card_embed}, {critic}, {head}, {rows}"


def check_startable(theirs: PolicyConfig, wanted: PolicyConfig) -> None:
    """A ValueError of one line unless a run that builds ``wanted`` can start (``init``) from
    a network of ``theirs``: the same but that a privileged critic or the belief rows may be
    added (never dropped) and a hands head added or dropped (``barbu_training.run.Trainer._init_from``)."""
    grown = dataclasses.replace(
        theirs,
        state_dim=wanted.state_dim,
        hands_head=wanted.hands_head,
        belief_hidden=wanted.belief_hidden,
        belief_layers=wanted.belief_layers,
    )
    rows_kept = (theirs.belief_hidden, theirs.belief_layers) in ((0, 0), (wanted.belief_hidden, wanted.belief_layers))
    if grown != wanted or theirs.state_dim > wanted.state_dim or not rows_kept:
        raise ValueError(
            f"the checkpoint's network ({describe_network(theirs)}) is not the one this config builds "
            f"({describe_network(wanted)}): set hidden/layers/card_embed/central_critic/hands_coef/belief_rows to "
            "the checkpoint's"
        )
