"""The oracle: the original pure-Python engine and observation encoder, kept as the tests' reference.

The product plays the rules and builds observations with compiled kernels (``barbu_env/game/_kernels.py``);
``barbu_env.game.engine`` and ``barbu_env.game.observation`` are thin views over them. The differential tests
(``tests/test_oracle.py``, ``tests/test_golden.py``) play the same seeded games through this package and
through the product and compare every decision: legal mask, observation, rewards, scores, hand results.

``engine.py`` and ``observation.py`` here are the Python implementation as it stood before the kernels
became the only one, kept verbatim apart from their imports (and ``BarbuState.__str__``, which tests do not
need). They import only modules of the product that hold no rules logic (``barbu_env.game.cards``,
``constants``, ``rules``, ``actions``), never ``barbu_env.game.engine``/``observation``/``render``: so the
oracle stays the old, independently written implementation whatever the product becomes.
``information_state.py`` is newer, written apart from the kernels on the same terms: the information
state encoded from a record of the oracle's actions and its observation. Nothing under ``barbu_env/`` may
import this package.
"""
