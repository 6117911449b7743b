"""``alpha="auto"``: the default regularisation strength, from public quantities only.

A pure function that trusts its inputs: the estimators checked them, and the mechanism
(:meth:`dperm.mechanisms.catalog.Mechanism.noise_norm`) supplies the RMS norm of the
noise it draws, so the rule never branches on a mechanism's name. Regularisation in
dperm's convention, ``alpha/2 ||w||^2`` (003/004's ``Lambda``; paper note 7).
"""

from __future__ import annotations

#: ``(C, p)`` of ``alpha = C base^p`` per rule, fitted by ``benchmarks/alpha_rule_fit.py``
#: on public data dperm never reports on (never Adult or KDD Cup); the data sets, the grid
#: and the criterion are in docs/design/mechanism_choice.md.
AUTO_ALPHA_CONSTANTS = {"objective": (7.24, 2.23), "output": (13.5, 2.13)}
#: ``k`` per rule: the rule never regularises less than ``alpha = k / n`` (scikit-learn's
#: ``C = 1 / k``, ``alpha = 1 / (n C)``). Fitted with ``(C, p)`` on the same public cells.
ALPHA_FLOOR_TIMES_N = {"objective": 4.0, "output": 16.0}
#: Factor on the output rule's alpha per loss name (1 for any other loss). The pinball loss's
#: gradient does not vanish at the minimiser, so its noise-to-signal balance on the unit
#: target scale (the quantile regressor maps ``y_bounds`` onto [-1, 1]) wants more
#: regularisation than its small Lipschitz constant ``max(tau, 1 - tau)`` gives: on the
#: FITTING regression tables (benchmarks/_tables.py; 3 folds x 2 draws, eps 0.5, 1, 3) the
#: factors 0.1, 1, 3, 10, 30, 100 gave mean R^2 best at 10 on most cells (x1: psid -27 to 0.33,
#: medexp -32 to -1.0; x10: psid 0.14 to 0.29, medexp -1.5 to -0.13; x100 shrinks the
#: regularised intercept toward the bounds' centre, medexp -243). Never fitted on EVALUATION.
OUTPUT_LOSS_FACTOR = {"pinball": 10.0}
#: Curvature used for a loss without one (the hinge) in the output rule.
NONSMOOTH_CURVATURE = 1.0
#: Exponent ``q`` of the curvature in the output rule's base (see :func:`default_alpha`).
OUTPUT_CURVATURE_EXPONENT = 0.0


def default_alpha(n_samples: int, dimension: int, epsilon: float, *, rule: str, loss,
                  data_norm: float, noise_norm: float | None = None,
                  feature_norm: float | None = None, multiplier: float | None = None,
                  curvature_exponent: float | None = None) -> float:
    """The regularisation strength ``max(C base^p, k / n)`` the theory's balance suggests.

    Never reads the data: ``n``, ``d`` (the intercept's column included), ``epsilon``, the
    row-norm bound ``R`` (the intercept included), the features' own bound ``R_x``, the
    loss's ``L`` (and ``c``) and, for the objective rule, the mechanism's noise.

    The shape is the theory's. With objective perturbation the noise term ``b.w / n``
    moves the minimiser by about ``||b|| / (n alpha)``, and regularising costs about
    ``alpha ||w*||^2 / 2``; with ``||w*||`` of order ``1 / R_x`` the two balance at
    ``alpha = R_x ||b|| / n``, which is 003 Thm 6's choice ``Lambda ~ epsilon_g`` with
    ``n ~ d / (epsilon_g epsilon_p)``. The base is therefore ``R_x * RMS||b|| / n`` with
    the RMS norm of the noise the chosen mechanism actually draws (``noise_norm``; it
    scales with ``R``), so one ``(C, p)`` serves every objective calibration. An
    intercept's column widens the noise (``R = sqrt(R_x^2 + s^2)``) but not the features,
    so the weights' scale stays ``1 / R_x``. With output perturbation the noise
    ``~ 2 L R d / (n alpha eps)`` lands on ``w`` and costs about ``c R_x^2 / 2`` times its
    square, which balances ``alpha / (2 R_x^2)`` at
    ``alpha = (c L^2 d^2 R_x^4 R^2 / (n eps)^2)^(1/3)`` (000 Thm 4's rate in ``n``). These
    worst-case balances ignore the curvature the data itself gives the loss, which shrinks
    the noise's effect as ``n eps`` grows, so the rule is ``max(C base^p, k / n)`` with
    ``(C, p)`` from :data:`AUTO_ALPHA_CONSTANTS` and ``k`` from :data:`ALPHA_FLOOR_TIMES_N`.
    The output base takes the curvature as ``c^q`` with ``q`` =
    :data:`OUTPUT_CURVATURE_EXPONENT`, fitted: ``q = 0``, so the curvature drops out (a
    loss's worst-case curvature says little about the curvature at the data). The floor
    ``alpha >= k / n`` is scikit-learn's ``C = 1 / k``: with much budget the noise no longer
    sets alpha, and the fitting set's large-``n`` cells want more regularisation than the
    noise balance gives. How the constants were fitted, and their history:
    docs/design/mechanism_choice.md.

    Parameters
    ----------
    n_samples, dimension : int
    epsilon : float
        The fit's epsilon (checked at the boundary).
    rule : {"objective", "output"}
        The row's :attr:`~dperm.mechanisms.catalog.Mechanism.alpha_rule`.
    loss : ConvexLoss
        Gives ``curvature`` and, at a given ``alpha``, ``solution_lipschitz`` (least
        squares' ``C_L`` depends on ``alpha``: found by fixed-point iteration).
    data_norm : float
        ``R``, the intercept's feature included: the noise's scale.
    noise_norm : float
        The objective rule's RMS norm of the noise term
        (:meth:`~dperm.mechanisms.catalog.Mechanism.noise_norm` at ``R`` and ``L``).
    feature_norm : float, optional
        ``R_x``, the norm bound of the features alone (default ``R``): the scale of
        the weights (the intercept's column widens the sensitivity, not the features).
    multiplier : float, optional
        Return ``multiplier * base`` instead of the fitted ``C base^p`` (the fitting
        script's grid).
    curvature_exponent : float, optional
        ``q`` of the output base ``(c^q L^2 d^2 R_x^4 R^2 / (n eps)^2)^(1/3)``; default
        :data:`OUTPUT_CURVATURE_EXPONENT` (the fitting script tries others).

    Returns
    -------
    float
    """
    n, d, R = n_samples, dimension, data_norm
    R_x = R if feature_norm is None else feature_norm
    constant, exponent = (multiplier, 1.0) if multiplier is not None else AUTO_ALPHA_CONSTANTS[rule]
    floor = ALPHA_FLOOR_TIMES_N[rule] / n if multiplier is None else 0.0
    if rule == "objective":
        base = R_x * noise_norm / n
        return max(constant * base**exponent, floor)
    curvature = loss.curvature if loss.curvature is not None else NONSMOOTH_CURVATURE
    q = OUTPUT_CURVATURE_EXPONENT if curvature_exponent is None else curvature_exponent
    alpha = 1.0 / n
    for _ in range(100):  # fixed point: least squares' C_L depends on alpha (000 Sec. 5.1)
        lipschitz = loss.solution_lipschitz(R, alpha)
        base = (curvature**q * lipschitz**2 * d**2 * R_x**4 * R**2 / (n * epsilon) ** 2) ** (1.0 / 3.0)
        new = constant * base**exponent
        if abs(new - alpha) <= 1e-12 * new:
            break
        alpha = new
    factor = OUTPUT_LOSS_FACTOR.get(getattr(loss, "name", None), 1.0) if multiplier is None else 1.0
    return factor * max(new, floor)


__all__ = ["ALPHA_FLOOR_TIMES_N", "AUTO_ALPHA_CONSTANTS", "NONSMOOTH_CURVATURE", "OUTPUT_LOSS_FACTOR",
           "OUTPUT_CURVATURE_EXPONENT", "default_alpha"]
