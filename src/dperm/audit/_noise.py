"""Deliberately under-noised copies of a mechanism, to measure an audit's power.

An audit that never fails proves nothing about itself. Its power is checked by
auditing a copy of the mechanism whose noise is scaled down (by 4, say): the
copy is then only about ``epsilon / noise_factor``-DP, and a good audit must
catch it. The copy is made without touching the library: the mechanism draws
its noise from the numpy Generator it is given, and :class:`ScaledNoiseGenerator`
is a Generator whose zero-centred location-scale draws are multiplied by
``noise_factor``.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from dperm.validation import check_positive


class ScaledNoiseGenerator(np.random.Generator):
    """A numpy Generator whose noise draws are ``noise_factor`` times smaller or larger.

    It shares the bit generator (the stream) of ``rng``. Scaled: ``normal``,
    ``standard_normal``, ``laplace`` (about ``loc``), ``gamma``,
    ``standard_gamma``, ``exponential``, ``standard_exponential``; these cover
    every sampler in :mod:`dperm.mechanisms.noise` (an L2-Laplace vector is a
    normalised Gaussian direction, which scaling leaves unchanged, times a Gamma
    radius, which it scales; a Gaussian vector is scaled). Uniform draws, integers
    and ``choice`` are unchanged. It passes ``isinstance(g, np.random.Generator)``,
    so estimators accept it as ``random_state``.

    Parameters
    ----------
    rng : numpy Generator
    noise_factor : float > 0
        ``0.25`` divides every noise scale by 4.
    """

    def __init__(self, rng: np.random.Generator, noise_factor: float):
        super().__init__(rng.bit_generator)
        self.noise_factor = check_positive(noise_factor, "noise_factor")

    def spawn(self, n_children):
        """Independent child generators that scale their noise the same way."""
        return [ScaledNoiseGenerator(np.random.Generator(child), self.noise_factor)
                for child in self.bit_generator.spawn(n_children)]

    def __reduce__(self):
        # Generator pickles as cls(bit_generator); this subclass also needs its factor.
        return (_rebuild_scaled_generator, (self.bit_generator, self.noise_factor))

    def _scaled(self, draws, loc=0.0):
        return loc + self.noise_factor * (draws - loc)

    def normal(self, loc=0.0, scale=1.0, size=None):
        return self._scaled(super().normal(loc, scale, size), loc)

    def standard_normal(self, *args, **kwargs):
        return self._scaled(super().standard_normal(*args, **kwargs))

    def laplace(self, loc=0.0, scale=1.0, size=None):
        return self._scaled(super().laplace(loc, scale, size), loc)

    def gamma(self, *args, **kwargs):
        return self._scaled(super().gamma(*args, **kwargs))

    def standard_gamma(self, *args, **kwargs):
        return self._scaled(super().standard_gamma(*args, **kwargs))

    def exponential(self, *args, **kwargs):
        return self._scaled(super().exponential(*args, **kwargs))

    def standard_exponential(self, *args, **kwargs):
        return self._scaled(super().standard_exponential(*args, **kwargs))


def noise_generator(rng: np.random.Generator, noise_factor: float = 1.0) -> np.random.Generator:
    """``rng`` itself when ``noise_factor == 1``, else a :class:`ScaledNoiseGenerator` on its stream."""
    if check_positive(noise_factor, "noise_factor") == 1.0:
        return rng
    return ScaledNoiseGenerator(rng, noise_factor)


def with_scaled_noise(mechanism, noise_factor: float):
    """Wrap a mechanism ``f(..., rng, ...)`` so its noise is scaled by ``noise_factor``.

    The argument named ``rng`` is replaced by a :class:`ScaledNoiseGenerator`
    on the same stream; everything else is passed through. For the mechanisms of
    :mod:`dperm.mechanisms` (``output_perturbation(problem, epsilon, 0.0, rng, tol,
    max_iter)`` and the others) ``with_scaled_noise(output_perturbation, 0.25)``
    is output perturbation with a quarter of the noise.
    """
    noise_factor = check_positive(noise_factor, "noise_factor")
    signature = inspect.signature(mechanism)
    if "rng" not in signature.parameters:
        raise ValueError(
            f"with_scaled_noise needs a mechanism with an argument named 'rng'; "
            f"{getattr(mechanism, '__name__', mechanism)!r} has {list(signature.parameters)}."
        )

    @functools.wraps(mechanism)
    def under_noised(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.arguments["rng"] = noise_generator(bound.arguments["rng"], noise_factor)
        return mechanism(*bound.args, **bound.kwargs)

    return under_noised


__all__ = ["ScaledNoiseGenerator", "noise_generator", "with_scaled_noise"]


def _rebuild_scaled_generator(bit_generator, noise_factor):
    """Unpickle a :class:`ScaledNoiseGenerator` (copies share nothing with the original)."""
    return ScaledNoiseGenerator(np.random.Generator(bit_generator), noise_factor)
