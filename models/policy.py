"""A masked actor-critic for Barbu observations (torch only).

The observation (``barbu_env/game/observation.py``) starts with 18 card rows of 52 values
(``NUM_CARD_ROWS``: hand, the trick by seat, cards played by seat, cards taken by seat,
Domino playable cards, cards each seat is known not to hold) followed by the small
public fields. Each card row gets its own linear encoder
(a block-diagonal layer: row r's 52 cards -> ``card_embed`` features); the encoded rows
and the small fields feed a shared MLP trunk, then one 85-way policy head and a value
head. With ``state_dim > 0`` the critic is a network of its own over a privileged view
(training only; acting never needs it): the observation followed by the other three
players' hands (``VectorBarbu.other_hands``), its card rows (the observation's 18
and the 3 hidden hands) encoded the same way. Seeing the hidden cards, it predicts a
hand's outcome far better, which lowers the variance of the advantages.

With ``belief_hidden > 0`` the network embeds a frozen belief network
(``barbu_models.belief.BeliefNet``) and the policy's trunk reads three more card rows,
computed inside the same forward pass (``BarbuActorCritic.belief_rows``): for each other
seat (relative seats 1, 2, 3), the probability that it holds each card, the belief
network's logits over the seats that may hold each unseen card (by their ``excluded``
rows and the cards they have left), then scaled in a few alternating passes so that each
seat's row sums toward its count of cards and each card's column to 1 (0 for a card the
observer has seen). That fit approximates the exact constraints ``barbu_env.belief``
applies (which need a dynamic programme per position, no tensor operation);
``with_belief_rows`` adds the rows to a network without changing its policy or value.

Masking touches only the distribution: illegal logits are replaced by the most negative
float, so their probability is exactly 0, and the entropy sums over legal actions only
(the approach of sb3-contrib's MaskableCategorical).

>>> import torch
>>> logits = torch.log(torch.tensor([[0.2, 0.2, 0.6]]))
>>> d = MaskedCategorical(logits, torch.tensor([[False, True, True]]))
>>> [round(p, 6) for p in d.probs[0].tolist()], round(d.entropy().exp().item(), 4)
([0.0, 0.25, 0.75], 1.7548)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from barbu_env.game.cards import NUM_CARDS
from barbu_env.util.extras import needs
from barbu_env.util.files import quote, replacing

with needs("train", "barbu_models.policy"):  # one line if the extra is missing
    import torch
    from torch import nn

from barbu_env.game.observation import CARDS_SCALE, OFFSETS
from barbu_models.belief import BeliefConfig, BeliefModel, BeliefNet
from barbu_models.device import resolve_device

#: Card rows the embedded belief network adds to the policy's (relative seats 1, 2, 3).
BELIEF_ROWS = 3
#: Passes that fit the belief rows to each other seat's count of cards (``belief_rows``).
BELIEF_FIT_PASSES = 8
#: The belief network's logits are clipped to this (an overconfident logit cannot rule a seat out).
BELIEF_CLIP = 10.0
_HAND_ROW = OFFSETS["hand"][0] // NUM_CARDS
_PLAYED_ROWS = slice(OFFSETS["played"][0] // NUM_CARDS, OFFSETS["played"][1] // NUM_CARDS)
_EXCLUDED_OTHERS = slice(OFFSETS["excluded"][0] // NUM_CARDS + 1, OFFSETS["excluded"][1] // NUM_CARDS)
_LEFT_OTHERS = slice(OFFSETS["cards_left"][0] + 1, OFFSETS["cards_left"][1])


@dataclass(frozen=True)
class PolicyConfig:
    """Everything needed to rebuild the network (saved in every checkpoint)."""

    obs_dim: int = 1132
    """Observation length."""
    num_actions: int = 85
    """Size of the action space."""
    card_rows: int = 18
    """Card rows of 52 at the start of the observation."""
    card_embed: int = 32
    """Features per encoded card row."""
    hidden: int = 256
    """Width of the trunk."""
    layers: int = 2
    """Hidden layers in the trunk."""
    state_dim: int = 0
    """Length of the privileged critic input: ``obs_dim`` plus 52 per hidden hand (0: the
    value head reads the policy's trunk)."""
    hands_head: int = 0
    """1: a head on the policy's trunk with logits ``[B, 3, 52]``, for each card which of the
    other three seats (relative seats 1, 2, 3) holds it (``BarbuActorCritic.heads``); 0: none."""
    belief_hidden: int = 0
    """Width of the embedded belief network's hidden layers (0: none, the trunk reads the
    observation alone; module docstring)."""
    belief_layers: int = 0
    """Hidden layers of the embedded belief network (0 without one)."""
    obs_layout: int = 2
    """The observation layout the network reads (``barbu_env.game.observation.OBS_LAYOUT``;
    checkpoints saved before layouts were numbered read layout 1). A checkpoint of another
    layout is refused by ``load_checkpoint``."""


def layer_init(layer: nn.Linear, std: float = np.sqrt(2), bias: float = 0.0) -> nn.Linear:
    """Orthogonal weights, constant bias (CleanRL's PPO initialisation)."""
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias)
    return layer


def gumbel_argmax(logits: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """The argmax of ``logits`` plus the Gumbel noise ``-log(-log u)`` of uniforms ``u`` in
    [0, 1) (overwritten). A ``u`` of exactly 0, which ``torch.rand`` can draw, is taken as
    the smallest positive float, so that its noise stays finite and a row's only legal
    action is never outranked by a masked one."""
    u.clamp_(min=torch.finfo(u.dtype).tiny)
    return (logits - u.log_().neg_().log_()).argmax(dim=-1)


class MaskedCategorical:
    """A categorical distribution over the legal actions only."""

    def __init__(self, logits: torch.Tensor, mask: torch.Tensor):
        self.mask = mask.bool()
        self.logits = torch.where(self.mask, logits, torch.finfo(logits.dtype).min)
        self.log_probs_all = torch.log_softmax(self.logits, dim=-1)

    @property
    def probs(self) -> torch.Tensor:
        return self.log_probs_all.exp()

    def sample(self, generator: torch.Generator | None = None) -> torch.Tensor:
        """One action per row, by the Gumbel-max trick: the argmax of the logits plus
        Gumbel noise ``-log(-log U)``, ``U`` uniform, is an exact draw from the
        distribution, several times cheaper than ``torch.multinomial`` on CPU (and
        ``Tensor.exponential_``, slower still, is avoided). ``U`` is drawn on the
        generator's device and moved to the logits' (a CPU generator draws the same
        actions whatever device the network computes on)."""
        device = generator.device if generator is not None else self.logits.device
        u = torch.rand(self.logits.shape, generator=generator, device=device).to(self.logits.device)
        return gumbel_argmax(self.logits, u)

    def mode(self) -> torch.Tensor:
        return self.logits.argmax(dim=-1)

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        return self.log_probs_all.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)

    def entropy(self) -> torch.Tensor:
        p_log_p = torch.where(self.mask, self.probs * self.log_probs_all, torch.zeros_like(self.probs))
        return -p_log_p.sum(-1)


class CardRowEncoder(nn.Module):
    """Row r of ``[B, rows, 52]`` card values -> ``[B, rows * embed]`` with weights of its own."""

    def __init__(self, rows: int, embed: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(rows, NUM_CARDS, embed))
        self.bias = nn.Parameter(torch.zeros(rows, embed))
        for r in range(rows):
            nn.init.orthogonal_(self.weight.data[r], np.sqrt(2))

    def forward(self, cards: torch.Tensor) -> torch.Tensor:
        out = torch.einsum("brc,rce->bre", cards, self.weight) + self.bias
        return torch.relu(out).flatten(1)


class BarbuActorCritic(nn.Module):
    """Policy logits over 85 actions and a value, from observations (and optionally states)."""

    def __init__(self, config: PolicyConfig = PolicyConfig()):
        super().__init__()
        self.config = config
        c = config
        self.card_end = c.card_rows * NUM_CARDS
        extra_rows = BELIEF_ROWS if c.belief_hidden else 0
        self.cards = CardRowEncoder(c.card_rows + extra_rows, c.card_embed)
        if c.belief_hidden:
            self.belief = BeliefNet(BeliefConfig(c.obs_dim, c.belief_hidden, c.belief_layers)).requires_grad_(False)
        trunk_in = (c.card_rows + extra_rows) * c.card_embed + (c.obs_dim - self.card_end)
        layers: list[nn.Module] = []
        for i in range(c.layers):
            layers += [layer_init(nn.Linear(trunk_in if i == 0 else c.hidden, c.hidden)), nn.ReLU()]
        self.trunk = nn.Sequential(*layers)
        self.policy_head = layer_init(nn.Linear(c.hidden, c.num_actions), std=0.01)
        if c.hands_head:
            self.hands_head = layer_init(nn.Linear(c.hidden, 3 * NUM_CARDS), std=0.01)
        if c.state_dim:
            self.hidden_rows = (c.state_dim - c.obs_dim) // NUM_CARDS
            self.critic_cards = CardRowEncoder(c.card_rows + self.hidden_rows, c.card_embed)
            critic_layers: list[nn.Module] = []
            for i in range(c.layers):
                critic_in = trunk_in + (self.hidden_rows - extra_rows) * c.card_embed
                critic_layers += [layer_init(nn.Linear(critic_in if i == 0 else c.hidden, c.hidden)), nn.ReLU()]
            self.critic = nn.Sequential(*critic_layers, layer_init(nn.Linear(c.hidden, 1), std=1.0))
        else:
            self.critic = layer_init(nn.Linear(c.hidden, 1), std=1.0)

    def features(self, obs: torch.Tensor) -> torch.Tensor:
        cards = obs[:, : self.card_end].reshape(obs.shape[0], self.config.card_rows, NUM_CARDS)
        if self.config.belief_hidden:
            cards = torch.cat([cards, self.belief_rows(obs).to(cards.dtype)], dim=1)
        return self.trunk(torch.cat([self.cards(cards), obs[:, self.card_end :]], dim=1))

    def belief_rows(self, obs: torch.Tensor) -> torch.Tensor:
        """``[B, 3, 52]``: for relative seats 1, 2, 3 the probability that each card is in
        their hand, from the embedded belief network and the counting prior (module
        docstring); each unseen card's column sums to 1 over the seats that may hold it."""
        cards = obs[:, : self.card_end].reshape(obs.shape[0], self.config.card_rows, NUM_CARDS).float()
        seen = cards[:, _HAND_ROW] + cards[:, _PLAYED_ROWS].sum(1)  # [B, 52]
        left = obs[:, _LEFT_OTHERS].float() * CARDS_SCALE  # [B, 3]: cards each other seat holds
        may = (seen < 0.5)[:, None, :] & (cards[:, _EXCLUDED_OTHERS] < 0.5) & (left > 0.5)[:, :, None]
        score = self.belief(obs).float().transpose(1, 2).clamp(-BELIEF_CLIP, BELIEF_CLIP)
        p = torch.softmax(score.masked_fill(~may, -1e9), dim=1) * may
        for _ in range(BELIEF_FIT_PASSES):  # each seat's row toward its count, each card's column back to 1
            p = p * (left / p.sum(2).clamp_min(1e-12))[:, :, None]  # finite: p <= 1, so at most 1.3e13
            p = p / p.sum(1, keepdim=True).clamp_min(1e-12)
        return p

    def critic_features(self, state: torch.Tensor) -> torch.Tensor:
        """The privileged critic's input: all card rows encoded, then the small fields."""
        c = self.config
        rows = torch.cat([state[:, : self.card_end], state[:, c.obs_dim :]], dim=1)
        cards = rows.reshape(state.shape[0], c.card_rows + self.hidden_rows, NUM_CARDS)
        return torch.cat([self.critic_cards(cards), state[:, self.card_end : c.obs_dim]], dim=1)

    def forward(self, obs: torch.Tensor, state: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(logits [B, 85], value [B]); ``state`` is the privileged view when the config
        has a ``state_dim``."""
        logits, value, _ = self.heads(obs, state, hands=False)
        return logits, value

    def heads(
        self, obs: torch.Tensor, state: torch.Tensor | None = None, hands: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """(logits [B, 85], value [B], hands [B, 3, 52] or None): ``forward`` and, with
        ``hands`` and a ``hands_head``, the hidden hands' logits from the same trunk."""
        h = self.features(obs)
        value = self.critic(self.critic_features(state) if self.config.state_dim else h).squeeze(-1)
        where = self.hands_head(h).view(-1, 3, NUM_CARDS) if hands and self.config.hands_head else None
        return self.policy_head(h), value, where

    def distribution(self, obs: torch.Tensor, mask: torch.Tensor) -> MaskedCategorical:
        """The masked policy (acting needs no critic: ``barbu_training.policy_agent.PolicyAgent``
        plays a network as an agent)."""
        return MaskedCategorical(self.policy_head(self.features(obs)), mask)


def hands_loss(logits: torch.Tensor, hands: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The hands head's loss and accuracy: ``logits`` ``[B, 3, 52]`` against the other
    three hands ``hands`` (0/1, ``[B, 3, 52]``, relative seats 1-3: the privileged view's
    last rows). Over the cards some other seat holds (those the observer cannot see; a card
    already played or in its own hand has no answer and counts for nothing), the mean
    cross-entropy of the seat that holds it, and the share where the most likely seat is
    that one. Positions where every other hand is empty count for nothing (both 0 if there
    are none).

    >>> hands = torch.zeros(1, 3, NUM_CARDS)
    >>> hands[0, 0, 5] = hands[0, 2, 7] = 1
    >>> logits = torch.zeros(1, 3, NUM_CARDS)
    >>> logits[0, 0, 5] = logits[0, 0, 7] = 20.0
    >>> [round(x.item(), 4) for x in hands_loss(logits, hands)]
    [10.0, 0.5]
    """
    held = hands.sum(1) > 0  # [B, 52]: cards an other seat holds
    if not held.any():
        zero = logits.sum() * 0.0
        return zero, zero.detach()
    logp = torch.log_softmax(logits.float(), dim=1)  # over the three seats
    who = hands.argmax(1)  # [B, 52]
    picked = logp.gather(1, who.unsqueeze(1)).squeeze(1)  # [B, 52]
    loss = -picked[held].mean()
    accuracy = (logits.argmax(1) == who)[held].float().mean()
    return loss, accuracy.detach()


def with_hands_head(model: BarbuActorCritic, head: bool = True) -> BarbuActorCritic:
    """A copy of ``model`` with a fresh ``hands_head`` (``head``) or without its own (acting
    never reads it); its other weights ``model``'s: the policy and the value unchanged."""
    made = BarbuActorCritic(dataclasses.replace(model.config, hands_head=int(head)))
    kept = {k: v for k, v in model.state_dict().items() if not k.startswith("hands_head.")}
    made.load_state_dict(kept, strict=False)
    return made


def with_privileged_critic(model: BarbuActorCritic, state_dim: int) -> BarbuActorCritic:
    """A copy of ``model`` (whose value head reads the policy's trunk) with a privileged
    critic of input ``state_dim`` that starts out computing exactly ``model``'s value (but
    for a network with belief rows, below): its
    card encoder and layers are the trunk's, the hidden hands' rows enter through weights
    of zero (so they learn from there), its last layer is the old value head. The policy is
    ``model``'s, unchanged. (The critic never reads belief rows: for a network whose trunk
    has learnt to read them, it starts from the trunk's other weights, near the old value.)"""
    c = model.config
    wide = BarbuActorCritic(dataclasses.replace(c, state_dim=state_dim))
    wide.load_state_dict(model.state_dict(), strict=False)  # all but the critic, whose shapes differ
    cards, hidden_cols = c.card_rows * c.card_embed, wide.hidden_rows * c.card_embed
    with torch.no_grad():
        wide.critic_cards.weight[: c.card_rows] = model.cards.weight[: c.card_rows]  # the observation's rows
        wide.critic_cards.bias[: c.card_rows] = model.cards.bias[: c.card_rows]
        trunk = [m for m in model.trunk if isinstance(m, nn.Linear)]
        critic = [m for m in wide.critic if isinstance(m, nn.Linear)]
        first, rest = critic[0], zip(critic[1:-1], trunk[1:], strict=True)
        first.weight.zero_()
        first.weight[:, :cards] = trunk[0].weight[:, :cards]
        small = c.obs_dim - c.card_rows * NUM_CARDS  # the small fields: the trunk's last columns (belief rows first)
        first.weight[:, cards + hidden_cols :] = trunk[0].weight[:, -small:]
        first.bias.copy_(trunk[0].bias)
        for new, old in rest:
            new.weight.copy_(old.weight)
            new.bias.copy_(old.bias)
        critic[-1].weight.copy_(model.critic.weight)
        critic[-1].bias.copy_(model.critic.bias)
    return wide


def with_belief_rows(model: BarbuActorCritic, belief: BeliefModel) -> BarbuActorCritic:
    """A copy of ``model`` that embeds ``belief``'s network (its temperature folded into the
    last layer; frozen) and reads its three card rows (``BarbuActorCritic.belief_rows``)
    through encoders of their own and trunk weights of zero: the policy, the value and any
    hands head are ``model``'s, unchanged, until training moves those weights."""
    c = model.config
    net = belief.net
    made = BarbuActorCritic(dataclasses.replace(c, belief_hidden=net.config.hidden, belief_layers=net.config.layers))
    old = model.state_dict()
    kept = {k: v for k, v in old.items() if k not in ("cards.weight", "cards.bias", "trunk.0.weight")}
    made.load_state_dict(kept, strict=False)
    encoded = c.card_rows * c.card_embed
    added = BELIEF_ROWS * c.card_embed
    with torch.no_grad():
        made.cards.weight[: c.card_rows] = old["cards.weight"]
        made.cards.bias[: c.card_rows] = old["cards.bias"]
        first = made.trunk[0].weight
        first.zero_()
        first[:, :encoded] = old["trunk.0.weight"][:, :encoded]
        first[:, encoded + added :] = old["trunk.0.weight"][:, encoded:]
    return load_belief(made, belief)


def load_belief(model: BarbuActorCritic, belief: BeliefModel) -> BarbuActorCritic:
    """``model`` (which embeds a belief network of ``belief``'s shape) with ``belief``'s
    weights in it, the temperature folded into the last layer; returns ``model``."""
    mine = [m for m in model.belief.body if isinstance(m, nn.Linear)]
    theirs = [m for m in belief.net.body if isinstance(m, nn.Linear)]  # its dropout layers hold no weights
    if [m.weight.shape for m in mine] != [m.weight.shape for m in theirs]:
        raise ValueError("the belief network is not of the shape the model embeds")
    with torch.no_grad():
        for new, old in zip(mine, theirs, strict=True):
            new.weight.copy_(old.weight)
            new.bias.copy_(old.bias)
        mine[-1].weight /= belief.temperature
        mine[-1].bias /= belief.temperature
    return model


# ---------------------------------------------------------------------- checkpoints


def _on_cpu(value: Any) -> Any:
    """``value`` with every tensor in it (in dicts, lists and tuples) moved to the CPU."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {k: _on_cpu(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_on_cpu(v) for v in value)
    return value


def save_checkpoint(path: str | Path, model: BarbuActorCritic, **extra: Any) -> None:
    """The weights with the config that rebuilds them, and any plain extras (optimizer
    state, training config, step counters). Every tensor is saved on the CPU, whatever
    device the model or the optimizer is on, so the checkpoint loads anywhere. The file is
    replaced whole or not at all (``barbu_env.util.files.replacing``): a failed save leaves the
    old checkpoint as it was and is an ``OutputError`` naming the file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = _on_cpu({"model_config": dataclasses.asdict(model.config), "state_dict": model.state_dict(), **extra})
    with replacing(path) as tmp, open(tmp, "wb") as f:  # to a file object, a failed write is an OSError
        try:
            torch.save(payload, f)
        except RuntimeError as e:  # torch's zip writer, closing after a failed write, hides its OSError
            if isinstance(e.__context__, OSError):
                raise e.__context__ from None
            raise


#: The largest network a checkpoint or a training config may ask for: each size field's
#: ``(lowest, highest)`` (``barbu_training.config.Args`` takes its ranges from here).
SIZE_LIMITS = {"hidden": (1, 8192), "layers": (1, 64), "card_embed": (1, 1024)}


def checked_config(config: Any, where: str = "checkpoint") -> PolicyConfig:
    """The ``PolicyConfig`` of a stranger's ``model_config`` if this barbu can build and feed
    it: a mapping of ``PolicyConfig`` fields (missing ones take their defaults), integers, the
    sizes within ``SIZE_LIMITS`` (the belief network's both 0 or within them too), today's
    observation and actions, ``hands_head`` 0 or 1, ``state_dim`` 0 or the privileged view's.
    A ValueError of one line naming ``where`` and the first rule broken otherwise; nothing is built."""
    try:
        made = PolicyConfig(**config)
    except TypeError:  # not a mapping, or a field PolicyConfig has not
        raise ValueError(f"{where}: its model_config {quote(config)} is not a mapping of network fields") from None
    fields = dataclasses.asdict(made)
    wrong = next((n for n, v in fields.items() if type(v) is not int), None)
    if wrong is not None:
        raise ValueError(f"{where}: its model_config's {wrong} is {quote(fields[wrong])}, not an integer")
    today, belief = PolicyConfig(), (made.belief_hidden, made.belief_layers)
    for n, (lo, hi) in SIZE_LIMITS.items():
        if not lo <= fields[n] <= hi:
            raise ValueError(f"{where}: its model_config's {n} is {fields[n]:,}, outside {lo} to {hi:,}")
    rules = {
        "today's observation and actions": all(
            getattr(made, n) == getattr(today, n) for n in ("obs_dim", "card_rows", "num_actions")
        ),
        "hands_head 0 or 1": made.hands_head in (0, 1),
        "state_dim 0 or the privileged view's": made.state_dim in (0, made.obs_dim + 3 * NUM_CARDS),
        "belief sizes both 0 or within the sizes": belief == (0, 0)
        or (0 < belief[0] <= SIZE_LIMITS["hidden"][1] and 0 < belief[1] <= SIZE_LIMITS["layers"][1]),
    }
    broken = [rule for rule, ok in rules.items() if not ok]
    if broken:
        raise ValueError(f"{where}: its model_config breaks the rule of {broken[0]}")
    return made


def shapes(config: PolicyConfig) -> dict[str, tuple[int, ...]]:
    """Each weight's shape in the network of ``config`` (built on the meta device: nothing
    allocated, nothing initialised)."""
    with torch.device("meta"):
        model = BarbuActorCritic(config)
    return {name: tuple(w.shape) for name, w in model.state_dict().items()}


def check_weights(state_dict: Any, expected: dict[str, tuple[int, ...]], where: str = "checkpoint") -> None:
    """A ValueError of one line naming ``where`` unless ``state_dict`` maps exactly the names
    of ``expected`` (``shapes``) to finite floating-point tensors of those shapes."""
    tensors = state_dict if isinstance(state_dict, dict) else {}
    got = {k: tuple(w.shape) for k, w in tensors.items() if isinstance(w, torch.Tensor) and w.is_floating_point()}
    if got != expected or len(got) != len(tensors):
        wrong = next((k for k in [*expected, *tensors] if got.get(k) != expected.get(k)), None)
        raise ValueError(f"{where}: its weights are not this network's (first wrong: {quote(wrong)})")
    if not all(torch.isfinite(w).all() for w in tensors.values()):
        raise ValueError(f"{where}: its weights are not all finite")


def load_checkpoint(path: str | Path, device: str | torch.device = "cpu") -> tuple[BarbuActorCritic, dict[str, Any]]:
    """The network, on ``device`` (``barbu_models.device.resolve_device``: ``cpu``, ``auto``,
    ``cuda``, ``cuda:N``, ``mps``), and the checkpoint's other contents, on the CPU. A
    checkpoint may be a stranger's: ``weights_only=True``, so it cannot run code; its
    network's config is checked (``checked_config``) and its weights' names, shapes and values
    (``check_weights``) before any network is built, which then takes the file's weights
    without initialising its own: a crafted file of a few bytes asking for a huge network is
    refused at once. A missing file is a FileNotFoundError; a file that is not a barbu
    checkpoint of today's observation layout, or a device this machine does not have, a ValueError."""
    path = Path(path)
    device = resolve_device(device)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such checkpoint")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises pickle, zip and runtime errors alike for a foreign file
        raise ValueError(f"{path}: not a barbu checkpoint (torch cannot load it: {type(e).__name__})") from e
    if (
        not isinstance(payload, dict)
        or not isinstance(payload.get("model_config"), dict)
        or "state_dict" not in payload
    ):
        raise ValueError(f"{path}: not a barbu checkpoint (no model_config and state_dict)")
    layout = payload["model_config"].get("obs_layout", 1)  # checkpoints before layouts were numbered: layout 1
    if layout != PolicyConfig.obs_layout:
        raise ValueError(
            f"{path}: this network reads observation layout {quote(layout)}, this barbu's observations are layout "
            f"{PolicyConfig.obs_layout}: train it again"
        )
    config = checked_config(payload["model_config"], str(path))
    check_weights(payload["state_dict"], shapes(config), str(path))
    with torch.device("meta"):  # the file's weights replace these: none allocated or initialised
        model = BarbuActorCritic(config)
    model.load_state_dict({k: v.float() for k, v in payload["state_dict"].items()}, assign=True)
    model.to(device)
    model.eval()
    return model, payload
