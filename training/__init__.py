"""The ``training/`` folder of a checkout, installed as ``barbu_training`` (``pip install -e .`` in barbu's
clone; the name cannot collide with a user's own ``training`` package). Imported under its
folder's name (``import training`` from the clone's root) it would be a second copy of every
module beside the installed one, so it refuses in one line."""

if __name__ != "barbu_training":
    raise ImportError(f"barbu's training/ folder installs as barbu_training: import barbu_training, not {__name__}")
