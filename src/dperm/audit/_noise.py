"""Deliberately under-noised copies of a mechanism, to measure an audit's power.

An audit that never fails proves nothing about itself. Its power is checked by
auditing a copy of the mechanism whose noise is too small, against the honest
claim: a good audit must catch it. The copy is the real mechanism with its
*calibration* computed for ``epsilon / noise_factor`` while the audit tests
``epsilon``: nothing in the library changes, and the release path has no test
seam (the samplers read nothing from the generator but bits). For the
Laplace-type calibrations the noise scale is ``k / epsilon``, so the copy's
noise is ``noise_factor`` times the honest one (up to the grid); for the
Gaussian calibrations sigma shrinks a little less than that (about 0.3x for
``noise_factor = 0.25`` at the audited settings).
"""

from __future__ import annotations

import functools
import inspect

from dperm.validation import check_positive


def under_noised_epsilon(epsilon: float, noise_factor: float) -> float:
    """The epsilon an under-noised copy is calibrated for: ``epsilon / noise_factor``.

    ``noise_factor == 1`` returns ``epsilon`` itself (the honest mechanism).
    """
    noise_factor = check_positive(noise_factor, "noise_factor")
    return epsilon if noise_factor == 1.0 else epsilon / noise_factor


def under_noised_label(label: str, noise_factor: float) -> str:
    """``label`` with the copy's calibration appended when ``noise_factor != 1``."""
    if noise_factor == 1.0:
        return label
    return f"{label}, noise x{noise_factor:g} (calibrated for epsilon / {noise_factor:g})"


def with_scaled_noise(mechanism, noise_factor: float):
    """Wrap a mechanism ``f(problem, epsilon, ...)`` so it is calibrated for ``epsilon / noise_factor``.

    Every other argument is passed through. For the mechanisms of
    :mod:`dperm.mechanisms` (``output_perturbation(problem, epsilon, 0.0, rng, tol,
    max_iter)`` and the others) ``with_scaled_noise(output_perturbation, 0.25)``
    is output perturbation with a quarter of the noise; audited at ``epsilon``
    it must FAIL.
    """
    noise_factor = check_positive(noise_factor, "noise_factor")
    signature = inspect.signature(mechanism)
    if "epsilon" not in signature.parameters:
        raise ValueError(
            f"with_scaled_noise needs a mechanism with an argument named 'epsilon'; "
            f"{getattr(mechanism, '__name__', mechanism)!r} has {list(signature.parameters)}."
        )

    @functools.wraps(mechanism)
    def under_noised(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.arguments["epsilon"] = under_noised_epsilon(bound.arguments["epsilon"], noise_factor)
        return mechanism(*bound.args, **bound.kwargs)

    return under_noised


__all__ = ["under_noised_epsilon", "with_scaled_noise"]
