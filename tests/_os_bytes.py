"""A deterministic byte stream for tests of the OS noise path (``os.urandom`` monkeypatched)."""

import numpy as np


class FakeURandom:
    """A deterministic stand-in for ``os.urandom`` that counts the bytes it hands out."""

    def __init__(self, seed):
        self._rng = np.random.default_rng(seed)
        self.calls = 0
        self.bytes_read = 0

    def __call__(self, n):
        self.calls += 1
        self.bytes_read += n
        return self._rng.bytes(n)
