"""The game: cards, rules, actions, the observation layout, the kernels (the one implementation of
the rules), one game's state, the batched engine, positions, worlds and the play driver. Imports only
``barbu_env.util``; loads no RL framework."""
