"""The hands head (``hands_coef``): an auxiliary loss in which the policy's trunk learns
which other seat holds each card its player cannot see, from the privileged view's hands.
The loss reads only the cards another seat holds, a head added to a network changes
neither its policy nor its value, PPO's updates with the term teach the head, a run with it
starts from a network without one and its checkpoints play, and what cannot work is
refused before anything trains."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import tiny_runs
import torch

from barbu_env import belief
from barbu_env.agents.registry import make_agent
from barbu_env.evaluation.tournament import evaluate
from barbu_env.game.cards import NUM_CARDS
from barbu_env.game.observation import OBS_DIM, PRIVILEGED_DIM
from barbu_models.policy import (
    BarbuActorCritic,
    PolicyConfig,
    checked_config,
    hands_loss,
    load_checkpoint,
    with_hands_head,
)
from barbu_training import config, config_cli, ppo
from barbu_training.run import Trainer
from barbu_training.stages import stage_args

ROOT = Path(__file__).resolve().parent.parent


def tiny(**changes) -> dict:
    """The tests' tiny run, its rollouts eight single hands (about 360 decisions)."""
    return tiny_runs.tiny(**(dict(episode="hand", num_games=8) | changes))


def _random_hands(gen: torch.Generator, rows: int) -> torch.Tensor:
    """Rows of three disjoint hands over some of the 52 cards (the rest held by nobody else)."""
    who = torch.randint(0, 4, (rows, NUM_CARDS), generator=gen)  # 3: the observer's or played
    return torch.stack([(who == s).float() for s in range(3)], dim=1)


def test_the_hands_loss_is_the_cross_entropy_of_the_seat_holding_each_hidden_card_and_ignores_the_rest():
    gen = torch.Generator().manual_seed(0)
    hands, logits = _random_hands(gen, 8), torch.randn(8, 3, NUM_CARDS, generator=gen)
    loss, accuracy = hands_loss(logits, hands)
    terms, hits = [], []
    for b in range(8):
        for c in range(NUM_CARDS):
            if hands[b, :, c].sum():
                seat = int(hands[b, :, c].argmax())
                terms.append(-torch.log_softmax(logits[b, :, c], 0)[seat])
                hits.append(float(logits[b, :, c].argmax() == seat))
    assert loss.item() == pytest.approx(torch.stack(terms).mean().item(), rel=1e-5)
    assert accuracy.item() == pytest.approx(np.mean(hits))
    # a card no other seat holds (the observer's, or played) has no answer: its logits count for nothing
    nobody = hands.sum(1, keepdim=True) == 0
    changed = torch.where(nobody, logits + 50 * torch.randn(logits.shape, generator=gen), logits)
    assert torch.equal(hands_loss(changed, hands)[0], loss)
    # the loss falls as the right seat's logit rises
    assert hands_loss(logits + 5 * hands, hands)[0] < loss - 1
    assert hands_loss(logits, torch.zeros_like(hands))[0].item() == 0.0  # nothing hidden: nothing to learn


def test_a_hands_head_added_to_a_network_keeps_its_policy_and_value_and_only_the_head_is_new():
    torch.manual_seed(1)
    model = BarbuActorCritic(PolicyConfig(hidden=32, card_embed=4))
    grown = with_hands_head(model)
    assert grown.config == dataclasses.replace(model.config, hands_head=1)
    obs = torch.rand(5, OBS_DIM)
    logits, value = model(obs)
    grown_logits, grown_value, hands = grown.heads(obs)
    assert torch.equal(logits, grown_logits) and torch.equal(value, grown_value)
    assert hands.shape == (5, 3, NUM_CARDS)
    assert model.heads(obs)[2] is None  # no head, no hands
    assert set(grown.state_dict()) - set(model.state_dict()) == {"hands_head.weight", "hands_head.bias"}


@pytest.fixture(scope="module")
def hands_trainer(tmp_path_factory):
    """A tiny trainer with a privileged critic and the hands term, and its first rollout."""
    args = config.Args(
        run_dir=str(tmp_path_factory.mktemp("h")), exp_name="h", central_critic=True, hands_coef=1.0, **tiny()
    )
    trainer = Trainer(args)
    return trainer, trainer.collect()


def test_the_privileged_view_is_filled_in_the_warm_starts_games_too(tmp_path):
    args = config.Args(run_dir=str(tmp_path), exp_name="w", central_critic=True, bc_iterations=1, **tiny())
    trainer = Trainer(args)
    rollout = trainer.collect()  # iteration 0: the teacher's games
    assert trainer.teacher(0)
    assert np.array_equal(rollout.states[:, :OBS_DIM], rollout.obs)
    hidden = rollout.states[:, OBS_DIM:].reshape(-1, 3, NUM_CARDS)
    mine = rollout.obs[:, :NUM_CARDS]  # the observation's first row: the player's hand
    assert set(np.unique(hidden)) <= {0.0, 1.0}
    assert (hidden.sum(1) + mine <= 1).all()  # each card in one hand at most
    # before the player's first card the others hold the other 39, less what they have played (in Domino a player
    # who cannot play keeps 13 cards while the others play on)
    others = hidden[mine.sum(1) == 13].sum(axis=(1, 2))
    assert (others <= 39).all() and (others == 39).mean() > 0.5


def test_ppo_updates_with_the_hands_term_teach_the_head_where_the_hidden_cards_are(hands_trainer):
    trainer, rollout = hands_trainer
    batch = ppo.as_tensors(rollout, True)
    model = BarbuActorCritic(trainer.model.config)
    model.load_state_dict(trainer.model.state_dict())
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    args = config.Args(central_critic=True, hands_coef=1.0, **tiny(minibatch_size=len(rollout.actions)))
    gen = torch.Generator().manual_seed(0)
    first = ppo.ppo_update(model, optimizer, batch, args, gen)
    for _ in range(25):
        last = ppo.ppo_update(model, optimizer, batch, args, gen)
    assert first["losses/hands"] == pytest.approx(np.log(3), abs=0.05)  # a fresh head: a third each
    assert last["losses/hands"] < first["losses/hands"] - 0.05, (first["losses/hands"], last["losses/hands"])
    assert last["losses/hands_accuracy"] > first["losses/hands_accuracy"] + 0.02
    # the same update without the term neither logs it nor moves the head
    head = model.hands_head.weight.detach().clone()
    plain = ppo.ppo_update(model, optimizer, batch, dataclasses.replace(args, hands_coef=0.0), gen)
    assert "losses/hands" not in plain
    assert torch.equal(model.hands_head.weight, head)


def test_the_uniform_hands_batch_holds_drawn_positions_their_hands_and_the_exact_uniform_marginals(hands_trainer):
    _, rollout = hands_trainer
    batch = ppo.as_tensors(rollout, True)
    h = ppo.uniform_hands_batch(batch, 40, torch.Generator().manual_seed(1), OBS_DIM)
    assert h["obs"].shape == (40, OBS_DIM) and h["hidden"].shape == h["log_uniform"].shape == (40, 3, NUM_CARDS)
    rows = [int(np.flatnonzero((rollout.obs == o).all(1))[0]) for o in h["obs"].numpy()]
    assert len(set(rows)) > 30  # drawn from the whole rollout
    assert np.array_equal(h["hidden"].numpy(), rollout.states[rows, OBS_DIM:].reshape(-1, 3, NUM_CARDS))
    for o, lu in zip(h["obs"].numpy()[:5], h["log_uniform"].numpy()[:5], strict=True):
        expected = belief.probabilities(o, model=belief.UNIFORM)[:, 1:].T  # [3, 52], relative seats 1-3
        assert np.allclose(np.exp(lu), expected, atol=1e-6)
    held = h["hidden"] > 0  # every hidden card's true seat is one the uniform marginals allow
    assert (h["log_uniform"][held] > -1e3).all()
    assert len(ppo.uniform_hands_batch(batch, 10**6, torch.Generator(), OBS_DIM)["obs"]) == len(rollout.obs)


def test_with_hands_uniform_the_term_is_the_uniform_marginals_log_loss_for_a_zero_head_and_falls_below_it(
    hands_trainer,
):
    trainer, rollout = hands_trainer
    batch = ppo.as_tensors(rollout, True)
    model = BarbuActorCritic(trainer.model.config)
    model.load_state_dict(trainer.model.state_dict())
    torch.nn.init.zeros_(model.hands_head.weight)
    torch.nn.init.zeros_(model.hands_head.bias)
    h = ppo.uniform_hands_batch(batch, 400, torch.Generator().manual_seed(2), OBS_DIM)
    held = h["hidden"] > 0
    uniform_loss = float(-h["log_uniform"][held].mean() * 3) / 3  # the uniform sampler's log-loss per hidden card
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    n = len(rollout.actions)
    args = config.Args(central_critic=True, hands_coef=1.0, hands_uniform=400, **tiny(minibatch_size=n))
    gen = torch.Generator().manual_seed(0)
    first = ppo.ppo_update(model, optimizer, batch, dataclasses.replace(args, update_epochs=1), gen, hands_batch=h)
    assert first["losses/hands"] == pytest.approx(uniform_loss, abs=1e-4)
    assert first["losses/hands"] < np.log(3) - 0.01  # counting knows more than nothing
    for _ in range(30):
        last = ppo.ppo_update(model, optimizer, batch, args, gen, hands_batch=h)
    assert last["losses/hands"] < first["losses/hands"] - 0.02, (first["losses/hands"], last["losses/hands"])


def test_a_run_with_hands_uniform_logs_the_term_below_knowing_nothing(tmp_path):
    args = config.Args(
        run_dir=str(tmp_path), exp_name="u", central_critic=True, hands_coef=1.0, hands_uniform=64, **tiny()
    )
    trainer = Trainer(args)
    trainer.iteration += 1  # as ``iterate`` does: iteration 0 would be the warm start's
    stats = trainer.update(trainer.collect())
    assert 0 < stats["losses/hands"] < np.log(3) - 0.01  # a fresh head on the uniform marginals: near counting


def test_a_run_with_the_hands_term_starts_from_a_network_without_the_head_and_its_checkpoint_plays(tmp_path):
    plain = Trainer(config.Args(run_dir=str(tmp_path), exp_name="a", **tiny()))
    start = plain.checkpoint(tmp_path / "a.pt")
    grown = Trainer(
        config.Args(run_dir=str(tmp_path), exp_name="b", init=str(start), central_critic=True, hands_coef=0.5, **tiny())
    )
    assert grown.model.config.hands_head == 1
    for name, weights in plain.model.state_dict().items():
        if not name.startswith("critic"):
            assert torch.equal(grown.model.state_dict()[name], weights), name
    grown.iterate()
    path = grown.checkpoint(tmp_path / "b.pt")
    assert load_checkpoint(path)[0].config.hands_head == 1
    assert make_agent(str(path), seed=0).name  # an agent like any checkpoint's
    result = evaluate([str(path), "random", "random", "random"], games=4, seed=0, workers=1)
    assert result.games == 4
    # a run without the term starts from it with the head dropped, the policy and the value the same
    bare = Trainer(config.Args(run_dir=str(tmp_path), exp_name="c", init=str(path), central_critic=True, **tiny()))
    assert bare.model.config == dataclasses.replace(grown.model.config, hands_head=0)
    obs, state = torch.rand(3, OBS_DIM), torch.rand(3, PRIVILEGED_DIM)
    assert all(torch.equal(a, b) for a, b in zip(bare.model(obs, state), grown.model(obs, state), strict=True))
    # a run without the privileged critic cannot take it: refused with the checkpoint's network as it is
    with pytest.raises(ValueError, match="checkpoint.s network .*a privileged critic, a hands head"):
        Trainer(config.Args(run_dir=str(tmp_path), exp_name="d", init=str(path), **tiny()))
    # nor resume a run with the head without the term: the message tells the two networks apart
    with pytest.raises(config.ConfigError, match="a hands head.*not a training checkpoint of .*no hands head"):
        Trainer(config.Args(run_dir=str(tmp_path), exp_name="e", resume=str(path), central_critic=True, **tiny()))


def test_what_the_hands_term_cannot_work_with_is_refused():
    with pytest.raises(ValueError, match="hands_coef and belief_rows are PPO's"):
        config.Args(init="ppo", expert={"games": 2}, central_critic=True, hands_coef=0.5)
    with pytest.raises(ValueError, match="hands_head 0 or 1"):
        checked_config({"hands_head": 2})


def test_the_ppo_belief_recipe_teaches_ppo_expert_from_the_belief_search_then_adds_the_hands_term():
    first, second = stage_args(config_cli.load_args(str(ROOT / "configs/train/ppo-belief.yaml")))
    assert first.init == "ppo-expert" and first.expert["searcher"] == "pimc-ppo:rollout=ppo-expert,worlds_from=belief"
    assert second.init == "runs/ppo-belief-1/expert.pt" and second.kl_anchor == "init"
    assert second.central_critic and second.hands_coef > 0 and second.total_decisions == 20_000_000
