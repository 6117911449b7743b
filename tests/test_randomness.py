"""The noise source (issue 28): with ``random_state=None`` every noise bit comes from os.urandom.

The OS path cannot be seeded, so most tests route a deterministic byte stream
through ``os.urandom`` (monkeypatched) and check that the draws are a function of
those bytes only, that the bit pipeline loses and reuses nothing, and that the
samplers keep their exact law on that path. A seeded ``random_state`` (testing)
must not touch ``os.urandom`` and keeps its reproducible stream.
"""

import copy
import os
import pickle
import random

import numpy as np
import pytest
from scipy import stats
from sklearn.base import clone

from dperm import PrivateLogisticRegression
from dperm.mechanisms.noise import (
    BitSource,
    discrete_laplace_calibration,
    os_standard_normal,
    sample_gaussian,
    sample_grid_noise,
    vector_laplace_calibration,
)
from dperm.randomness import URANDOM_READ_BYTES, OSBits, OSEntropyGenerator
from dperm.validation import check_random_state
from tests._os_bytes import FakeURandom


def _no_prng(*args, **kwargs):
    raise AssertionError("the OS path must not build a pseudo-random generator")


def test_default_random_state_is_an_os_entropy_generator():
    rng = check_random_state(None)
    assert isinstance(rng, OSEntropyGenerator) and isinstance(rng, np.random.Generator)
    assert type(check_random_state(0)) is np.random.Generator  # a seed: the testing path


def test_default_noise_bits_come_from_os_urandom_and_no_prng(fake_urandom, monkeypatch):
    rng = check_random_state(None)  # before the patch below: its numpy side is seeded by secrets
    numpy_state = rng.bit_generator.state
    monkeypatch.setattr(random, "Random", _no_prng)
    fake = fake_urandom(1)
    calibration = vector_laplace_calibration(0.01, 5, 1.0)
    first = sample_grid_noise(calibration, 5, rng)
    assert fake.calls >= 1
    assert rng.bit_generator.state == numpy_state  # the numpy stream gave no noise bit
    # the draw is a function of the OS bytes: the same bytes give the same noise, others differ
    fake_urandom(1)
    assert sample_grid_noise(calibration, 5, rng) == first
    fake_urandom(2)
    assert sample_grid_noise(calibration, 5, rng) != first


def test_a_seeded_random_state_never_reads_os_urandom(monkeypatch):
    monkeypatch.setattr(os, "urandom", _no_prng)
    calibration = discrete_laplace_calibration(1.0, 3, 1.0)
    first = sample_grid_noise(calibration, 3, np.random.default_rng(5))
    assert sample_grid_noise(calibration, 3, check_random_state(5)) == first


def test_os_bits_hand_out_every_byte_once_in_order(fake_urandom):
    fake_urandom(3)
    bits = OSBits()
    small = [bits.getrandbits(8) for _ in range(URANDOM_READ_BYTES + 10)]
    wide = bits.getrandbits(8 * 1000)
    stream = FakeURandom(3)
    expected = stream(URANDOM_READ_BYTES) + stream(URANDOM_READ_BYTES)
    assert bytes(small) == expected[:URANDOM_READ_BYTES + 10]
    assert wide == int.from_bytes(expected[URANDOM_READ_BYTES + 10:URANDOM_READ_BYTES + 1010], "little")
    assert bits.getrandbits(0) == 0


def test_below_is_uniform_on_the_os_path(fake_urandom):
    fake_urandom(4)
    bits = BitSource(OSEntropyGenerator())
    draws = np.array([bits.below(7) for _ in range(14000)])
    assert stats.chisquare(np.bincount(draws, minlength=7)).pvalue > 1e-3


def test_continuous_gaussian_comes_from_os_urandom_and_is_normal(fake_urandom):
    fake = fake_urandom(6)
    draws = sample_gaussian(20000, 2.0, check_random_state(None))
    assert fake.bytes_read == 8 * 20000
    assert stats.kstest(draws / 2.0, "norm").pvalue > 1e-3
    assert np.max(np.abs(os_standard_normal(1000))) < 9.3


@pytest.mark.filterwarnings("ignore::dperm.exceptions.BudgetWarning")  # the clone is never fitted
def test_copies_of_an_os_generator_share_nothing():
    rng = OSEntropyGenerator()
    for other in (pickle.loads(pickle.dumps(rng)), copy.deepcopy(rng), *rng.spawn(2),
                  clone(PrivateLogisticRegression(random_state=rng)).random_state):
        assert isinstance(other, OSEntropyGenerator)
        assert other.bit_generator.state != rng.bit_generator.state


def test_a_default_fit_is_a_function_of_the_os_bytes_only(fake_urandom):
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(200, 3)) / np.sqrt(3)
    y = (X[:, 0] > 0).astype(int)

    def fit(seed):
        fake = fake_urandom(seed)
        model = PrivateLogisticRegression(epsilon=1.0, mechanism="output", classes=[0, 1]).fit(X, y)
        assert fake.calls >= 1
        return model.coef_

    np.testing.assert_array_equal(fit(7), fit(7))
    assert not np.array_equal(fit(7), fit(8))
