"""Evaluation: game records, the tournament (duplicate evaluation) and the league. Imports the
game, view, agents, envs and util."""
