"""The environments: PettingZoo AEC, Gymnasium (single and vector), RLlib and OpenSpiel adapters,
and the versions of each. Import the game, view, agents and util."""
