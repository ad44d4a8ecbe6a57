"""Helpers with no knowledge of the game: files written whole and read within bounds, optional
extras named in one line, the ranges of the numbers a user gives
(options and agent parameters). Imports nothing of ``barbu_env``."""
