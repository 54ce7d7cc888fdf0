# Test double of TorchTitan v0.2.2 (see train.py and docs/contracts/torchtitan-v0.2.2.yaml).
__version__ = "0.2.2"
