"""The KL anchor (``kl_anchor``, ``kl_coef``): the PPO loss pulls the policy toward a frozen
network's masked action distribution, KL(anchor || policy) over the legal actions; the term
is zero for the anchor itself and positive for any other policy, it pulls training toward
the anchor, a run resumes with it, and with ``kl_coef`` 0 training is exactly the one
without an anchor."""

from __future__ import annotations

import pytest
import torch
from tiny_runs import tiny

from barbu_env.agents.pretrained import checkpoint_path
from barbu_models.policy import BarbuActorCritic, MaskedCategorical, load_checkpoint
from barbu_training import config, ppo, preflight
from barbu_training.run import Trainer

#: The anchor: the shipped network (another shape than the tiny learner's: it need not match).
ANCHOR = "ppo-finetuned"


def _anchor_network() -> BarbuActorCritic:
    return load_checkpoint(checkpoint_path(ANCHOR))[0]


def _kl_to_anchor(model: BarbuActorCritic, anchor: BarbuActorCritic, rollout) -> float:
    obs, masks = torch.from_numpy(rollout.obs), torch.from_numpy(rollout.masks)
    with torch.no_grad():
        return ppo.anchor_kl(anchor.distribution(obs, masks), model.distribution(obs, masks)).mean().item()


def test_the_kl_term_is_zero_against_itself_positive_against_another_policy_and_reads_legal_actions_only():
    gen = torch.Generator().manual_seed(0)
    logits, other = torch.randn(64, 85, generator=gen), torch.randn(64, 85, generator=gen)
    masks = torch.rand(64, 85, generator=gen) < 0.3
    masks[:, 0] = True
    kl = ppo.anchor_kl(MaskedCategorical(logits, masks), MaskedCategorical(logits, masks))
    assert kl.abs().max() < 1e-6
    kl = ppo.anchor_kl(MaskedCategorical(other, masks), MaskedCategorical(logits, masks))
    assert (kl[masks.sum(-1) > 1] > 1e-4).all()
    # the definition, on the legal actions renormalized
    for row in range(4):
        legal = masks[row]
        p, q = torch.softmax(other[row, legal], -1), torch.softmax(logits[row, legal], -1)
        assert torch.isclose(kl[row], (p * (p / q).log()).sum(), atol=1e-5)
    # what the policy puts on illegal actions does not count: they are masked out of both
    changed = torch.where(masks, logits, logits + 10 * torch.randn(64, 85, generator=gen))
    again = ppo.anchor_kl(MaskedCategorical(other, masks), MaskedCategorical(changed, masks))
    assert torch.allclose(kl, again)


@pytest.fixture(scope="module")
def tiny_rollout(tmp_path_factory):
    """A tiny trainer's first rollout (two whole games of its untrained policy)."""
    trainer = Trainer(config.Args(run_dir=str(tmp_path_factory.mktemp("r")), exp_name="r", **tiny()))
    return trainer, trainer.collect()


def test_the_ppo_loss_adds_the_kl_to_the_anchor_and_logs_it(tiny_rollout):
    trainer, rollout = tiny_rollout
    batch, anchor = ppo.as_tensors(rollout, False), _anchor_network()
    # one minibatch of the whole rollout: the logged KL is the one before the step
    args = config.Args(**tiny(minibatch_size=len(rollout.actions), kl_anchor=ANCHOR, kl_coef=1.0))
    for against, expected in ((anchor, _kl_to_anchor(trainer.model, anchor, rollout)), (trainer.model, 0.0)):
        model = BarbuActorCritic(trainer.model.config)
        model.load_state_dict(trainer.model.state_dict())
        frozen = BarbuActorCritic(against.config)
        frozen.load_state_dict(against.state_dict())
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
        stats = ppo.ppo_update(model, optimizer, batch, args, torch.Generator().manual_seed(0), torch.float32, frozen)
        assert stats["losses/kl_anchor"] == pytest.approx(expected, abs=1e-5)
        assert not any(p.grad is not None for p in frozen.parameters())  # the anchor stays as it was
    assert expected == 0.0 and _kl_to_anchor(trainer.model, anchor, rollout) > 0.1
    plain = ppo.ppo_update(model, optimizer, batch, config.Args(**tiny()), torch.Generator().manual_seed(0))
    assert "losses/kl_anchor" not in plain


@pytest.mark.slow  # a training run
def test_training_with_a_kl_coefficient_pulls_the_policy_toward_the_anchor(tmp_path, tiny_rollout):
    _, rollout = tiny_rollout
    anchor, kls = _anchor_network(), {}
    for coef in (0.0, 10.0):  # the same seed, the same first rollout
        args = config.Args(
            run_dir=str(tmp_path),
            exp_name=f"k{coef}",
            kl_anchor=ANCHOR,
            kl_coef=coef,
            learning_rate=1e-3,
            **tiny(update_epochs=2),
        )
        trainer = Trainer(args)
        start = _kl_to_anchor(trainer.model, anchor, rollout)
        for _ in range(2):
            trainer.iterate()
        kls[coef] = _kl_to_anchor(trainer.model, anchor, rollout)
    assert kls[10.0] < start - 0.05 and kls[10.0] < kls[0.0] - 0.05, (start, kls)


@pytest.mark.slow  # two training runs
def test_a_kl_coefficient_of_zero_trains_exactly_as_a_run_without_an_anchor(tmp_path):
    runs = []
    for extra in ({}, {"kl_anchor": ANCHOR, "kl_coef": 0.0}):
        trainer = Trainer(config.Args(run_dir=str(tmp_path), exp_name=f"z{len(runs)}", **tiny(**extra)))
        assert trainer.anchor is None
        trainer.iterate()
        runs.append(trainer.model.state_dict())
    plain, anchored = runs
    assert all(torch.equal(plain[k], anchored[k]) for k in plain)


@pytest.mark.slow  # two training runs
def test_a_run_with_an_anchor_checkpoints_its_fields_and_resumes_with_the_anchor_reloaded(tmp_path):
    args = config.Args(run_dir=str(tmp_path), exp_name="a", kl_anchor=ANCHOR, kl_coef=0.5, **tiny())
    trainer = Trainer(args)
    assert next(trainer.anchor.parameters()).device == trainer.device
    assert not any(p.requires_grad for p in trainer.anchor.parameters())
    trainer.iterate()
    path = trainer.checkpoint(tmp_path / "a.pt")
    saved = load_checkpoint(path)[1]["args"]
    assert (saved["kl_anchor"], saved["kl_coef"]) == (ANCHOR, 0.5)
    again = Trainer(
        config.Args(run_dir=str(tmp_path), exp_name="a", kl_anchor=ANCHOR, kl_coef=0.5, resume=str(path), **tiny())
    )
    assert all(torch.equal(a, b) for a, b in zip(again.anchor.parameters(), trainer.anchor.parameters(), strict=True))
    for t in (trainer, again):
        t.iterate()
    assert all(torch.equal(a, b) for a, b in zip(again.model.parameters(), trainer.model.parameters(), strict=True))


def test_a_kl_coefficient_without_an_anchor_and_an_anchor_that_is_not_a_checkpoint_are_refused(tmp_path):
    with pytest.raises(ValueError, match="kl_coef 0.1 needs a kl_anchor"):
        config.Args(kl_coef=0.1)
    with pytest.raises(config.ConfigError, match="kl_anchor: 'heuristic' is not a checkpoint file or a shipped policy"):
        preflight.prepare(config.Args(kl_anchor="heuristic", kl_coef=0.1))
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(config.ConfigError, match="kl_anchor: .*not a barbu checkpoint"):
        preflight.prepare(config.Args(kl_anchor=str(bad)))  # checked even with kl_coef 0: a typo is caught


def test_a_uniform_draw_of_exactly_zero_never_picks_a_masked_action():
    from barbu_models.policy import gumbel_argmax

    masks = torch.zeros(3, 85, dtype=torch.bool)
    masks[:, 40] = True  # one legal action a row
    logits = MaskedCategorical(torch.randn(3, 85), masks).logits
    u = torch.rand(3, 85)
    u[:, 40] = 0.0  # torch.rand's smallest draw, at the legal action
    assert gumbel_argmax(logits, u).tolist() == [40, 40, 40]
