"""``python_barbu``'s ``rewards`` parameter and what OpenSpiel's tools read with it:
under ``rewards=terminal`` the game declares terminal rewards, pays the episode's total at
its end and nothing before, and OpenSpiel's Python ``MCTSBot`` plays it through
``evaluate_bots``; the default (``rewards=hand``) is unchanged. OpenSpiel's PyTorch
``dqn`` and ``nfsp`` train on ``rl_environment.Environment`` of the game (the ``openspiel``
extra brings ``dm-tree``, which they import) and the returns reach them. Shimmy's
summed rewards: the example of docs/openspiel.md, run by tests/test_docs.py."""

from __future__ import annotations

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

from barbu_env.envs import openspiel as bo  # noqa: E402

TERMINAL, REWARDS = pyspiel.GameType.RewardModel.TERMINAL, pyspiel.GameType.RewardModel.REWARDS


def _play(state, rng: np.random.Generator, on_step=None) -> None:
    """Random play to the end (chance sampled); ``on_step(state, chance)`` after every move."""
    while not state.is_terminal():
        chance = state.is_chance_node()
        if chance:
            outcomes = state.chance_outcomes()
            state.apply_action(outcomes[rng.integers(len(outcomes))][0])
        else:
            legal = state.legal_actions()
            state.apply_action(legal[rng.integers(len(legal))])
        if on_step is not None:
            on_step(state, chance)


def test_rewards_terminal_declares_terminal_rewards_and_pays_the_episode_total_only_at_its_end():
    default = pyspiel.load_game("python_barbu(episode=round)")
    terminal = pyspiel.load_game("python_barbu(episode=round,rewards=terminal)")
    assert default.get_type().reward_model == REWARDS and default.get_parameters()["rewards"] == "hand"
    assert terminal.get_type().reward_model == TERMINAL
    assert bo.load_game("standard", "round", rewards="terminal").get_type().reward_model == TERMINAL
    assert pyspiel.load_game(str(terminal)).get_type().reward_model == TERMINAL
    # The same chance outcomes and moves in both: the per-hand game's rewards add up to the terminal game's payout.
    a, b = default.new_initial_state(), terminal.new_initial_state()
    hand_rewards = np.zeros(4)
    seen = []

    def follow(state, chance):
        nonlocal hand_rewards
        b.apply_action(state.history()[-1])
        if not chance:  # OpenSpiel's tools read a hand's rewards at the decisions (they stay through the deal)
            hand_rewards += state.rewards()
        if not b.is_terminal():
            seen.append(b.rewards() + b.returns())

    _play(a, np.random.default_rng(3), follow)
    assert b.is_terminal() and len(seen) > 7 * 52
    assert not np.any(seen), "rewards=terminal paid something before the end"
    assert b.rewards() == b.returns() == a.returns() == hand_rewards.tolist()
    assert any(a.returns())
    with pytest.raises(Exception, match="rewards"):
        pyspiel.load_game("python_barbu(rewards=trick)")


def test_openspiel_mcts_bot_refuses_per_hand_rewards_and_plays_a_whole_hand_under_terminal_rewards():
    from open_spiel.python.algorithms import evaluate_bots, mcts

    evaluator = mcts.RandomRolloutEvaluator(n_rollouts=1, random_state=np.random.RandomState(0))
    with pytest.raises(ValueError, match="terminal rewards"):
        mcts.MCTSBot(bo.load_game("standard", "hand"), uct_c=2.0, max_simulations=4, evaluator=evaluator)
    game = bo.load_game("standard", "hand", rewards="terminal")
    bots = [
        mcts.MCTSBot(game, uct_c=2.0, max_simulations=4, evaluator=evaluator, random_state=np.random.RandomState(p))
        for p in range(4)
    ]
    returns = evaluate_bots.evaluate_bots(game.new_initial_state(), bots, np.random.RandomState(0))
    assert len(returns) == 4 and any(returns) and max(abs(r) for r in returns) <= game.max_utility()


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["dqn", "nfsp"])
def test_openspiel_pytorch_dqn_and_nfsp_train_on_the_rl_environment_and_the_returns_reach_them(algorithm):
    import importlib

    from open_spiel.python import rl_environment

    pytest.importorskip("tree", reason="dm-tree (in the openspiel extra)")
    module = importlib.import_module(f"open_spiel.python.pytorch.{algorithm}")
    env = rl_environment.Environment(
        "python_barbu(episode=hand)",
        observation_type=rl_environment.ObservationType.OBSERVATION,
        chance_event_sampler=rl_environment.ChanceEventSampler(seed=0),
    )
    size, actions = env.observation_spec()["info_state"][0], env.action_spec()["num_actions"]
    common = dict(batch_size=16, min_buffer_size_to_learn=32, learn_every=8)
    if algorithm == "dqn":
        agents = [
            module.DQN(p, size, actions, hidden_layers_sizes=[32], replay_buffer_capacity=500, **common)
            for p in range(4)
        ]
    else:
        agents = [
            module.NFSP(p, size, actions, [32], reservoir_buffer_capacity=500, anticipatory_param=0.5, **common)
            for p in range(4)
        ]
    steps, episodes = 0, 0
    while steps < 300:
        seen = np.zeros(4)
        time_step = env.reset()
        while not time_step.last():
            p = time_step.observations["current_player"]
            seen[p] += time_step.rewards[p] if time_step.rewards else 0.0
            out = agents[p].step(time_step)
            time_step = env.step([out.action])
            steps += 1
        for p, agent in enumerate(agents):
            seen[p] += time_step.rewards[p]
            agent.step(time_step)  # the last step: each agent learns its reward
        episodes += 1
        assert seen.tolist() == env.get_state.returns() and any(seen)
    learned = [a.loss for a in agents] if algorithm == "dqn" else [a.loss[1] for a in agents]  # NFSP: its DQN's
    assert episodes >= 3 and all(loss is not None for loss in learned)


def _seen_by_rl_agents(game_string: str) -> tuple[list[float], list[float]]:
    """Random play of a round through ``rl_environment``: per player, the rewards of the time
    steps at which it acts, and of the last one (what OpenSpiel's RL agents learn from), and
    the game's returns."""
    from open_spiel.python import rl_environment

    env = rl_environment.Environment(
        game_string,
        observation_type=rl_environment.ObservationType.OBSERVATION,
        chance_event_sampler=rl_environment.ChanceEventSampler(seed=0),
    )
    rng = np.random.default_rng(0)
    seen = np.zeros(4)
    time_step = env.reset()
    while not time_step.last():
        p = time_step.observations["current_player"]
        seen[p] += time_step.rewards[p] if time_step.rewards else 0.0
        time_step = env.step([rng.choice(time_step.observations["legal_actions"][p])])
    seen += time_step.rewards
    return seen.tolist(), env.get_state.returns()


def test_rl_environment_agents_see_the_returns_under_terminal_rewards_but_miss_hands_under_per_hand_rewards():
    # What docs/openspiel.md says: an agent reads rewards only at its own turns, so over a round a hand's
    # rewards reach the player who acts next, not the others; rewards=terminal pays everyone at the last step.
    seen, returns = _seen_by_rl_agents("python_barbu(episode=round,rewards=terminal)")
    assert seen == returns and any(returns)
    seen, returns = _seen_by_rl_agents("python_barbu(episode=round)")
    assert seen != returns
