"""Noise samplers shared by every mechanism (one owner for each distribution).

Float-safe release: a value is rounded to a power-of-two grid ``g Z^d`` and an
integer noise vector is added, drawn exactly (rational arithmetic, no floats)
from the discrete Laplace (Canonne, Kamath & Steinke 2020, Algs. 1-2) or the
discrete Gaussian (their Alg. 3); the calibration adds the rounding step to the
sensitivity (:func:`grid_l1_sensitivity`), so the guarantee holds exactly and
only the noise grows (Mironov 2012 explains why float noise does not).
:func:`sample_l2_laplace` and :func:`sample_gaussian` release nothing on the
float-safe paths. Every bit comes from :class:`BitSource`: on the default
path (:class:`~dperm.randomness.OSEntropyGenerator`) straight from the OS
CSPRNG; the samplers read nothing else from the generator. Why and how:
``docs/design/noise.md``.
"""

from dperm.mechanisms.noise._continuous import os_standard_normal, sample_gaussian, sample_l2_laplace
from dperm.mechanisms.noise._exact import (
    BitSource,
    bernoulli_exp_neg,
    sample_discrete_gaussian,
    sample_discrete_gaussian_vector,
    sample_discrete_laplace,
)
from dperm.mechanisms.noise._grid import (
    CENTRE_LIMIT,
    EXACT_INTEGER_LIMIT,
    GRID_EPSILON_CAP,
    GRID_RESOLUTION,
    GridCalibration,
    discrete_laplace_calibration,
    grid_l1_sensitivity,
    grid_l2_sensitivity,
    grid_step,
    grid_vector,
    laplace_noise_on_grid,
    release_on_grid,
    round_to_grid,
    sample_grid_noise,
    to_grid,
    vector_laplace_calibration,
)
from dperm.mechanisms.noise.l2_laplace import (
    l2_laplace_mean_square,
    mixing_shape,
    sample_discrete_l2_laplace_vector,
)

__all__ = [
    "BitSource", "CENTRE_LIMIT", "EXACT_INTEGER_LIMIT", "GRID_EPSILON_CAP", "GRID_RESOLUTION",
    "GridCalibration", "bernoulli_exp_neg", "discrete_laplace_calibration", "grid_l1_sensitivity",
    "grid_l2_sensitivity", "grid_step", "grid_vector", "l2_laplace_mean_square",
    "laplace_noise_on_grid", "mixing_shape", "os_standard_normal", "release_on_grid", "round_to_grid",
    "sample_discrete_gaussian", "sample_discrete_gaussian_vector", "sample_discrete_l2_laplace_vector",
    "sample_discrete_laplace", "sample_gaussian", "sample_grid_noise", "sample_l2_laplace", "to_grid",
    "vector_laplace_calibration",
]
