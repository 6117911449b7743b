"""Exact lattice noise for an L2 sensitivity: the discrete analogue of 003's ``exp(-||b|| / scale)``.

003 (Alg. 1 and 2) adds to a d-vector the noise with density proportional to
``exp(-a ||b||_2)``: its privacy proof uses only that the log density is
``a``-Lipschitz in the L2 norm, so a shift of L2 norm ``S`` changes it by at most
``a S``. Its norm is Gamma(d, 1/a), ``E||b||^2 = d (d + 1) / a^2``. Independent
Laplace coordinates give the same guarantee only when calibrated to the L1 bound
``sqrt(d) S``, at twice the variance.

This module draws, exactly and with integer arithmetic only, an integer vector
``z`` whose probability mass function has the same property,
``P(z) <= exp(a ||z - z'||_2) P(z')`` for all ``z, z'`` in ``Z^d``, and
``E||z||^2 <= d (2 k) / a^2`` with ``k = floor(d/2) + 1`` (``d (d + 1) / a^2`` for odd ``d``).

**The law.** ``V ~ Gamma(k, rate a^2 / 2)`` and, given ``V``, independent
discrete Gaussian coordinates ``z_i ~ N_Z(0, V)`` (mass proportional to
``exp(-z_i^2 / (2 V))``). For odd ``d = D`` this is the lattice version of a
classical identity: the continuous ``exp(-a ||x||)`` on ``R^D`` is the Gaussian
scale mixture with mixing law Gamma((D + 1)/2, rate a^2/2), because
``int v^(-1/2) exp(-a^2 v / 2 - r^2 / (2 v)) dv = sqrt(2 pi) exp(-a r) / a``.
For even ``d`` the mixture is that of ``D = d + 1`` and ``z`` is the marginal
of the first ``d`` coordinates (the last one is never drawn: given ``V`` the
coordinates are independent).

**Why the ratio bound holds.** On ``Z^D`` the mass is ``f(||z||)`` with
``f(r) = int g(v) Theta(v)^(-D) exp(-r^2 / (2 v)) dv``, ``g`` the Gamma density
and ``Theta(v) = sum_k exp(-k^2 / (2 v))``. Differentiating,
``-(log f)'(r) = r E[1 / V | r]`` under the posterior
``pi_r(v) ~ g(v) Theta(v)^(-D) exp(-r^2 / (2 v))``. For the continuous mixture
(``(2 pi v)^(D/2)`` in place of ``Theta(v)^D``) the same expression is exactly
``a``. The two posteriors differ by the factor ``T(v)^D``,
``T(v) = sqrt(2 pi v) / Theta(v) = 1 / sum_m exp(-2 pi^2 m^2 v)`` (Poisson
summation), which increases with ``v``; so the lattice posterior dominates the
continuous one in likelihood ratio, ``E[1/V | r]`` is no larger, and
``0 <= -(log f)'(r) <= a`` for every ``r > 0``. As ``f`` is continuous on
``[0, inf)`` (dominated convergence: ``Theta(v)^(-D) <= (2 pi v)^(-D/2)``), ``log f``
is ``a``-Lipschitz on it, so ``log f(||z||)`` is ``a``-Lipschitz in ``||z||``,
hence in ``z`` (triangle inequality), and summing over the undrawn coordinate
keeps the bound for even ``d``.

**Exact sampling.** ``V`` is never rounded. ``V = (2 / a^2) (E_1 + ... + E_k)``
with ``E_j`` exponential, each drawn by von Neumann's method as an integer part
and a fraction whose binary digits are drawn only when a comparison needs them
(Karney 2016, "Sampling exactly from the normal distribution", u-rands): the
undrawn digits stay independent and uniform, so ``V`` is known as a shrinking
rational interval. Each ``z_i`` is drawn by Canonne, Kamath & Steinke (2020)
Alg. 3: a discrete Laplace proposal of integer scale ``t`` accepted with
probability ``exp(-(|y| - V/t)^2 / (2 V))`` (valid for any ``t > 0``); that
Bernoulli is their Alg. 1 with every ``Bernoulli(p)`` decided by comparing a
lazy uniform with the interval for ``p``, refining whichever is wider until
they separate. No floating-point number enters the draw.
"""

from __future__ import annotations

import math
from fractions import Fraction

from dperm.mechanisms.noise._exact import sample_discrete_laplace

__all__ = ["l2_laplace_mean_square", "mixing_shape", "sample_discrete_l2_laplace_vector"]

#: Binary digits added to a lazy uniform (or to every fraction of ``V``) per refinement.
_DIGITS = 16


class _LazyUniform:
    """A uniform real in ``[0, 1)`` known by its first ``digits`` binary digits (a u-rand).

    ``value / 2**digits <= U < (value + 1) / 2**digits``; the undrawn digits are
    independent fair bits whatever comparisons were decided so far.
    """

    __slots__ = ("value", "digits", "_bits")

    def __init__(self, bits):
        self.value = 0
        self.digits = 0
        self._bits = bits

    def extend_to(self, digits: int) -> None:
        """Draw digits up to position ``digits``."""
        if digits > self.digits:
            extra = digits - self.digits
            self.value = (self.value << extra) | self._bits.getrandbits(extra)
            self.digits = digits

    def less_than(self, other: "_LazyUniform") -> bool:
        """``self < other``, drawing digits of both until they differ (probability 1)."""
        while True:
            digits = max(self.digits, other.digits) + _DIGITS
            self.extend_to(digits)
            other.extend_to(digits)
            if self.value != other.value:
                return self.value < other.value


def _accept_exp_neg(x: _LazyUniform, bits) -> bool:
    """``Bernoulli(exp(-x))`` for a lazy uniform ``x`` (von Neumann; Karney 2016, Alg. H).

    Count the run ``x > U_1 > U_2 > ... > U_N`` of fresh uniforms:
    ``P(N >= n) = x^n / n!``, so ``P(N even) = exp(-x)``.
    """
    previous = x
    run = 0
    while True:
        candidate = _LazyUniform(bits)
        if not candidate.less_than(previous):
            return run % 2 == 0
        previous = candidate
        run += 1


def _exponential(bits) -> tuple[int, _LazyUniform]:
    """An Exp(1) draw as an integer part and a lazy fraction (von Neumann 1951).

    A uniform fraction is kept with probability ``exp(-x)``; the number of
    discarded fractions is the integer part, geometric with ratio ``1/e``.
    """
    integer = 0
    while True:
        fraction = _LazyUniform(bits)
        if _accept_exp_neg(fraction, bits):
            return integer, fraction
        integer += 1


class _LazyGammaVariance:
    """``V = (2 / a^2) (E_1 + ... + E_k)``, exponential ``E_j``, as a shrinking rational interval.

    With ``2 / a^2 = p / q`` and every fraction drawn to ``m`` digits,
    ``V`` lies in ``[p N / (q 2^m), p (N + k) / (q 2^m)]`` for the integer ``N``
    (:attr:`numerator`); the integers are kept so the acceptance test needs no
    :class:`~fractions.Fraction`.
    """

    __slots__ = ("factor_num", "factor_den", "shape", "_integers", "_fractions", "digits", "numerator")

    def __init__(self, shape: int, rate_inverse_half: Fraction, bits):
        # rate_inverse_half = 2 / a^2 = 2 scale^2
        draws = [_exponential(bits) for _ in range(shape)]
        self.factor_num = rate_inverse_half.numerator
        self.factor_den = rate_inverse_half.denominator
        self.shape = shape
        self._integers = sum(integer for integer, _ in draws)
        self._fractions = [fraction for _, fraction in draws]
        self.digits = max(fraction.digits for fraction in self._fractions)
        self._update()
        while self.numerator == 0:  # V > 0 almost surely; resolve it before dividing by it
            self.refine()

    def _update(self) -> None:
        digits = self.digits
        for fraction in self._fractions:
            fraction.extend_to(digits)
        self.numerator = (self._integers << digits) + sum(f.value for f in self._fractions)

    @property
    def low(self) -> Fraction:
        """The interval's lower end."""
        return Fraction(self.factor_num * self.numerator, self.factor_den << self.digits)

    def refine(self) -> None:
        """Draw more digits of every fraction: the interval shrinks by ``2**-_DIGITS``."""
        self.digits += _DIGITS
        self._update()

    def gamma_bounds(self, y: int, t: int):
        """Integer enclosure of ``gamma = (y - V/t)^2 / (2 V)`` for ``y >= 0``, as two (num, den) pairs.

        ``gamma = y^2 / (2V) - y/t + V / (2 t^2)``: the first term falls and the
        last rises with ``V``, so ``V``'s upper end ``p N_hi / A`` (``A = q 2^m``)
        bounds the first from below and its lower end the last, and conversely:
        ``gamma_lo = (y^2 A^2 t^2 - 2 y t p N_hi A + p^2 N_lo N_hi) / (2 p N_hi t^2 A)``,
        ``gamma_hi`` the same with ``N_lo`` and ``N_hi`` swapped. A negative lower
        end is raised to 0 (``gamma`` is a square).
        """
        p = self.factor_num
        scale = self.factor_den << self.digits
        low_n, high_n = self.numerator, self.numerator + self.shape
        common = y * y * scale * scale * t * t
        cross = p * low_n * high_n * p
        low_num = common - 2 * y * t * p * high_n * scale + cross
        high_num = common - 2 * y * t * p * low_n * scale + cross
        low_den = 2 * p * high_n * t * t * scale
        high_den = 2 * p * low_n * t * t * scale
        return (max(low_num, 0), low_den), (high_num, high_den)


def _bernoulli_below(bounds, refine, divisor: int, bits) -> bool:
    """``Bernoulli(p / divisor)`` for ``p`` known as ``bounds()``: ``[lo, hi]``, shrunk by ``refine()``.

    ``bounds()`` returns ``((lo_num, lo_den), (hi_num, hi_den))`` in integers; a lazy
    uniform ``U`` in ``[u / 2^D, (u + 1) / 2^D)`` is compared with it by
    cross-multiplication, and whichever interval is wider is refined.
    """
    uniform = _LazyUniform(bits)
    while True:
        (low_num, low_den), (high_num, high_den) = bounds()
        u, digits = uniform.value, uniform.digits
        if (u + 1) * divisor * low_den <= low_num << digits:  # U < (u + 1) / 2^D <= lo / divisor
            return True
        if u * divisor * high_den >= high_num << digits:  # U >= u / 2^D >= hi / divisor
            return False
        # the uniform's width 2^-D against the bound's (hi - lo) / divisor
        if high_den * low_den * divisor >= (high_num * low_den - low_num * high_den) << digits:
            uniform.extend_to(digits + _DIGITS)
        else:
            refine()


def _bernoulli_exp_neg_lazy(bounds, refine, bits) -> bool:
    """``Bernoulli(exp(-gamma))`` for ``gamma >= 0`` known only as a shrinking interval.

    ``exp(-gamma)`` is the product of ``m`` draws of ``exp(-gamma / m)`` with
    ``m >= gamma`` an integer; each is CKS 2020 Alg. 1: draw
    ``A_j ~ Bernoulli(gamma / (m j))`` for ``j = 1, 2, ...`` until the first
    ``A_j = 0`` and accept when that ``j`` is odd. ``bounds`` is as in
    :func:`_bernoulli_below`.
    """
    high_num, high_den = bounds()[1]
    parts = max(1, -(-high_num // high_den))
    for _ in range(parts):
        j = 1
        while _bernoulli_below(bounds, refine, parts * j, bits):
            j += 1
        if j % 2 == 0:
            return False
    return True


def _discrete_gaussian_given(variance: _LazyGammaVariance, bits) -> int:
    """``N_Z(0, V)`` for the lazy ``V`` (CKS 2020, Alg. 3 with a lazy acceptance test)."""
    t = math.isqrt(math.floor(variance.low)) + 1
    while True:
        draw = sample_discrete_laplace(Fraction(t), bits)
        y = abs(draw)
        cache = {}

        def bounds(y=y, cache=cache):
            if cache.get("digits") != variance.digits:  # recomputed only when V is refined
                cache["digits"] = variance.digits
                cache["value"] = variance.gamma_bounds(y, t)
            return cache["value"]

        if _bernoulli_exp_neg_lazy(bounds, variance.refine, bits):
            return draw


def mixing_shape(dimension: int) -> int:
    """``k = floor(d / 2) + 1``: the Gamma shape ``(D + 1) / 2`` of the odd ``D`` in ``{d, d + 1}``."""
    return dimension // 2 + 1


def l2_laplace_mean_square(dimension: int, scale) -> float:
    """``d E[V] = 2 k d scale^2``: an upper bound on ``E||z||^2``.

    The discrete Gaussian's variance is at most its parameter ``V``
    (Canonne, Kamath & Steinke 2020, Cor. 9). For odd ``d`` the bound is 003's
    continuous ``E||b||^2 = d (d + 1) scale^2``; for even ``d`` it is
    ``d (d + 2) scale^2``, the price of drawing the marginal of ``d + 1`` dimensions.
    """
    return 2.0 * mixing_shape(dimension) * dimension * float(scale) ** 2


def sample_discrete_l2_laplace_vector(dimension: int, scale: Fraction, bits) -> list[int]:
    """``z`` in ``Z^d`` with ``P(z) <= exp(||z - z'||_2 / scale) P(z')``, drawn exactly.

    Parameters
    ----------
    dimension : int
        ``d >= 1``.
    scale : Fraction
        ``1 / a`` in grid steps: calibrate it as ``(L2 sensitivity in steps) / epsilon``.
    bits : BitSource
        The exact uniform integers (:class:`dperm.mechanisms.noise.BitSource`).

    Returns
    -------
    list of int
        See the module docstring for the law, the proof of the ratio bound and
        the mean square norm (:func:`l2_laplace_mean_square`).
    """
    scale = Fraction(scale)
    if scale <= 0:
        raise ValueError(f"scale must be > 0; got {scale}.")
    if dimension < 1:
        raise ValueError(f"dimension must be >= 1; got {dimension!r}.")
    variance = _LazyGammaVariance(mixing_shape(dimension), 2 * scale * scale, bits)
    return [_discrete_gaussian_given(variance, bits) for _ in range(dimension)]
