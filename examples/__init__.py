"""Examples of training with other libraries (SB3, RLlib, TorchRL): run from a checkout; not in the wheel."""
