"""Mixed precision in training: the field, its resolution, and that it changes nothing but the arithmetic."""

import numpy as np
import pytest
import torch
from tiny_runs import tiny

from barbu_env.game.rules import load_rules
from barbu_models.policy import BarbuActorCritic
from barbu_training import ppo, precision, rollout
from barbu_training.config import Args, model_config
from barbu_training.run import Trainer


def test_auto_takes_bfloat16_only_where_the_device_multiplies_it_natively(monkeypatch):
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False, raising=False)
    assert precision.resolve_precision("auto", "cpu") == torch.float32
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: True, raising=False)
    assert precision.resolve_precision("auto", "cpu") == torch.bfloat16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert precision.resolve_precision("auto", "cuda") == torch.float32


def test_bfloat16_forward_passes_give_float32_outputs_close_to_float32_ones():
    torch.manual_seed(0)
    model = BarbuActorCritic(model_config(Args(hidden=64, card_embed=8)))
    obs = (torch.rand(64, model.config.obs_dim) < 0.1).float()
    with precision.autocast(torch.bfloat16):
        logits16, values16 = model(obs)
    logits, values = model(obs)
    assert logits16.dtype == torch.bfloat16  # the products ran in bfloat16 ...
    torch.testing.assert_close(logits16.float(), logits, atol=0.05, rtol=0.05)  # ... and say the same thing
    torch.testing.assert_close(values16.float(), values, atol=0.05, rtol=0.05)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_rollout_stores_log_probabilities_the_update_recomputes_in_its_precision(dtype):
    args = Args(num_games=2, minibatch_size=256, update_epochs=1, hidden=32, card_embed=4, torch_threads=1)
    torch.manual_seed(7)
    model = BarbuActorCritic(model_config(args))
    model.eval()
    r = rollout.Collector(args, load_rules("standard"), dtype=dtype).collect(
        model, {}, np.random.default_rng(7), torch.Generator().manual_seed(7)
    )
    with torch.no_grad():
        _, values = model(torch.from_numpy(r.obs))
    # the stored values are the model's in this precision: float32's exactly, bfloat16's only roughly
    assert np.allclose(r.values, values.numpy(), atol=1e-5) == (dtype == torch.float32)
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    stats = ppo.ppo_update(model, optimizer, ppo.as_tensors(r, False), args, torch.Generator().manual_seed(0), dtype)
    assert stats["losses/first_ratio_error"] < 1e-4


def test_a_training_run_in_bfloat16_saves_float32_weights(tmp_path):
    args = Args(
        run_dir=str(tmp_path), exp_name="bf16", total_decisions=50, precision="bfloat16", **tiny(episode="hand")
    )
    trainer = Trainer(args)
    assert trainer.dtype == torch.bfloat16 and trainer.collector.dtype == torch.bfloat16
    summary = trainer.run()
    weights = torch.load(summary["best_checkpoint"], weights_only=True)["state_dict"]
    assert all(w.dtype == torch.float32 for w in weights.values())
