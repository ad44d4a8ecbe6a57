"""The ``models/`` folder of a checkout, installed as ``barbu_models`` (``pip install -e .`` in barbu's
clone; the name cannot collide with a user's own ``models`` package). Imported under its
folder's name (``import models`` from the clone's root) it would be a second copy of every
module beside the installed one, so it refuses in one line."""

if __name__ != "barbu_models":
    raise ImportError(f"barbu's models/ folder installs as barbu_models: import barbu_models, not {__name__}")
