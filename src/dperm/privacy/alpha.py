"""``alpha="auto"``: the default regularisation strength, from public quantities only.

A pure function that trusts its inputs: the estimators checked them, and the mechanism
(:meth:`dperm.mechanisms.catalog.Mechanism.noise_norm`) supplies the RMS norm of the
noise it draws, so the rule never branches on a mechanism's name. Regularisation in
dperm's convention, ``alpha/2 ||w||^2`` (003/004's ``Lambda``; paper note 7).
"""

from __future__ import annotations

from dperm.privacy.sensitivity import split_epsilon_for_amp

#: ``(C, p)`` of ``alpha = C base^p`` per rule for the RESIDUAL losses (least squares under a
#: named mechanism, the pinball loss; the classifiers have :data:`CLASSIFIER_ALPHA_CONSTANTS`),
#: fitted by ``benchmarks/alpha_rule_fit.py``
#: on public data dperm never reports on (never Adult or KDD Cup); the data sets, the grid
#: and the criterion are in docs/design/mechanism_choice.md.
AUTO_ALPHA_CONSTANTS = {"objective": (7.24, 2.23), "output": (13.5, 2.13)}
#: ``k`` per rule (residual losses): the rule never regularises less than ``alpha = k / n`` (scikit-learn's
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
#: ``(C, p)`` per rule of the classifiers' opt-in ``alpha="monotone"`` (issue 30): ``p = 1``, the theory's
#: exponent, so the noise's expected effect on the released weights never grows with epsilon
#: (objective: ``RMS||b|| / (n alpha) = 1 / (C R_x)`` while the first term is active; output:
#: ``~ (n eps)^(-1/3)``; ``tests/privacy/test_alpha.py`` checks every mechanism row and loss on a
#: grid). ``C`` fitted by ``benchmarks/classifier_alpha_fit.py`` on the FITTING binary tables
#: only (benchmarks/_tables.py; never an EVALUATION table, Adult or KDD Cup); the regret tables are
#: ``benchmarks/results/classifier_alpha_fit_<rule>.json``, docs/defaults_classifiers.md.
#: Objective: 39 cells (13 tables x eps 0.3, 1, 3), mean regret 0.0057 at C = 0.1 (issue 17's rule
#: 0.0089). Output: 39 cells, grid up to C = 10: C = 1, p = 1 at 0.0138 (issue 17's output rule
#: 0.0107: the monotone output rule costs accuracy on the FITTING tables).
CLASSIFIER_ALPHA_CONSTANTS = {"objective": (0.1, 1.0), "output": (1.0, 1.0)}
#: ``k`` of the margin losses' floor ``alpha >= k / n``: at most scikit-learn's ``C = 1`` so a
#: large epsilon is never capped below scikit-learn's own regularisation (the ``4 / n`` and
#: ``16 / n`` floors capped breast cancer at 0.877 at epsilon 1e4). Chosen with ``C``.
CLASSIFIER_FLOOR_TIMES_N = 1.0
#: ``C`` of :func:`prediction_default_alpha` per loss: ``alpha = C (m eps)^(-p)``, the best of
#: 1/4, 1, 4, 16, 64, 256 by the answers' error against the TRUE function (not the exact model)
#: on 12 synthetic cells per loss (``benchmarks/predictor_alpha_fit.py``,
#: ``benchmarks/results/predictor_alpha_fit.json``).
PREDICTION_MULTIPLIER = {"squared": 16.0, "hinge": 4.0}
#: ``p`` per loss: 002 Thm 3 (``lambda = (m eps)^(-1/2)`` for ``r >= 1/2``) for least squares;
#: the hinge's noise-against-shrinkage balance (:func:`prediction_default_alpha`).
PREDICTION_EXPONENT = {"squared": 0.5, "hinge": 2.0 / 3.0}
#: The ``alpha`` string of the epsilon-monotone opt-in (linear classifiers).
MONOTONE = "monotone"
#: Curvature used for a loss without one (the hinge) in the output rule.
NONSMOOTH_CURVATURE = 1.0
#: Exponent ``q`` of the curvature in the output rule's base (see :func:`default_alpha`).
OUTPUT_CURVATURE_EXPONENT = 0.0


def is_classifier_loss(loss) -> bool:
    """True for a margin loss (and the multinomial model's per-class column): the classifiers' rule."""
    return getattr(loss, "kind", "margin") != "residual"


def jacobian_alpha(n_samples: int, epsilon: float, loss, data_norm: float) -> float:
    """``c_J R^2 / (n eps_o / 2)``: the objective rule's Jacobian term (margin losses).

    Objective perturbation spends ``log(1 + c R^2 / (n alpha))`` of the objective stage's
    ``eps_o`` on the Jacobian (003 Alg. 2; ``(K - 1) log(1 + R^2 / (K n alpha))`` for the
    multinomial model, i.e. ``c_J = (K - 1) / K`` per factor); below
    ``alpha_min = c R^2 / (n (e^(eps_o / 2) - 1))`` the mechanism adds its own ``Delta`` and
    halves the noise's epsilon (:func:`dperm.privacy.sensitivity.glm_objective_slack`), and there
    the noise's effect ``||b|| / (n (alpha + Delta))`` grows like ``(e^(eps_o/2) - 1) / eps_o``
    with epsilon whatever alpha is. Since ``e^x - 1 >= x`` this term is at least ``alpha_min``,
    so the rule never enters that regime, and on it the effect is proportional to
    ``x / (x - log(1 + x / 2))`` (``x = eps_o``; ``(K - 1)`` factors alike), which falls with ``x``.
    ``c_J`` is the loss's ``jacobian_curvature`` if it has one, else its ``curvature``.
    """
    curvature = getattr(loss, "jacobian_curvature", None) or loss.curvature
    epsilon_objective, _ = split_epsilon_for_amp(epsilon)
    return curvature * data_norm**2 / (n_samples * epsilon_objective / 2.0)


def uses_monotone_rule(loss, variant: str) -> bool:
    """True when ``variant`` is ``"monotone"`` and ``loss`` is a margin (classifier) loss."""
    return variant == MONOTONE and is_classifier_loss(loss)


def rule_constants(rule: str, loss, variant: str = "auto") -> tuple[float, float, float]:
    """``(C, p, k)`` of ``max(C base^p, k / n)`` for ``rule``, ``loss`` and the rule ``variant``.

    ``variant="monotone"`` on a margin loss (the classifiers' ``alpha="monotone"``, issue 30):
    the epsilon-monotone :data:`CLASSIFIER_ALPHA_CONSTANTS` and :data:`CLASSIFIER_FLOOR_TIMES_N`.
    Otherwise (``alpha="auto"``, and every residual loss: least squares under a named mechanism,
    the pinball loss, whose :data:`OUTPUT_LOSS_FACTOR` was fitted on it) issue 17's
    :data:`AUTO_ALPHA_CONSTANTS` and :data:`ALPHA_FLOOR_TIMES_N`: on the evaluation tables the
    monotone rule alone did not beat it (docs/defaults_classifiers.md). Paired with the majority
    fallback it did, so ``PrivateLogisticRegression`` asks for ``"monotone"`` while its fallback
    is on (its default for two labels with an intercept).
    """
    if uses_monotone_rule(loss, variant):
        constant, exponent = CLASSIFIER_ALPHA_CONSTANTS[rule]
        return constant, exponent, CLASSIFIER_FLOOR_TIMES_N
    constant, exponent = AUTO_ALPHA_CONSTANTS[rule]
    return constant, exponent, ALPHA_FLOOR_TIMES_N[rule]


def default_alpha(n_samples: int, dimension: int, epsilon: float, *, rule: str, loss,
                  data_norm: float, noise_norm: float | None = None,
                  feature_norm: float | None = None, multiplier: float | None = None,
                  curvature_exponent: float | None = None, variant: str = "auto") -> float:
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
    ``(C, p, k)`` from :func:`rule_constants`: issue 17's :data:`AUTO_ALPHA_CONSTANTS` and
    :data:`ALPHA_FLOOR_TIMES_N` by default; with ``variant="monotone"`` on a margin loss the
    epsilon-monotone :data:`CLASSIFIER_ALPHA_CONSTANTS` (``p = 1``) and
    :data:`CLASSIFIER_FLOOR_TIMES_N`, with the objective rule's Jacobian term
    :func:`jacobian_alpha` among the floors (issue 30's opt-in).
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
    variant : {"auto", "monotone"}, default="auto"
        The rule's constants (:func:`rule_constants`): ``"monotone"`` is the classifiers'
        epsilon-monotone opt-in (margin losses only; residual losses ignore it).

    Returns
    -------
    float
    """
    n, d, R = n_samples, dimension, data_norm
    R_x = R if feature_norm is None else feature_norm
    constant, exponent, floor_times_n = rule_constants(rule, loss, variant)
    if multiplier is not None:
        constant, exponent, floor_times_n = multiplier, 1.0, 0.0
    floor = floor_times_n / n
    if rule == "objective":
        base = R_x * noise_norm / n
        if multiplier is None and uses_monotone_rule(loss, variant):
            floor = max(floor, jacobian_alpha(n, epsilon, loss, R))
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


def prediction_default_alpha(n_samples: int, epsilon_per_query: float, loss: str) -> float:
    """``alpha = C (m eps)^(-p)`` for :class:`dperm.PrivatePredictor` (000, 002): public ``m``, ``eps`` only.

    Each answer is ``f_z(x) + b`` with ``|b| ~ B / eps`` and ``B = 2 kappa^2 C_L / (alpha m)``
    (000 Prop. 1 with ``lambda = alpha / 2``); shrinkage toward 0 costs about ``alpha ||f*||_K^2``.

    - least squares: ``C_L = 2 (M + kappa M / sqrt(alpha / 2))`` grows like ``alpha^(-1/2)``,
      so the answers' variance ``~ M^2 / (alpha^3 (m eps)^2)`` balances the shrinkage
      ``alpha M^2`` at ``alpha ~ (m eps)^(-1/2)``: 002 Thm 3's
      ``lambda = (m eps)^(-2 / min(4, 3 + 2r))`` for ``r >= 1/2``; ``M`` cancels;
    - hinge: ``C_L = 1``, the noise on the margin ``~ 1 / (alpha m eps)``; its square balances
      ``alpha`` at ``alpha ~ (m eps)^(-2/3)``.

    The answers' noise then falls with epsilon (``alpha^(-3/2) / (m eps) ~ (m eps)^(-1/4)``,
    ``1 / (alpha m eps) ~ (m eps)^(-1/3)``) and so does the shrinkage. ``C`` is
    :data:`PREDICTION_MULTIPLIER`, ``p`` :data:`PREDICTION_EXPONENT`. Trusts its inputs (the
    estimator checked them).

    Parameters
    ----------
    n_samples : int
        ``m``, the public number of training rows.
    epsilon_per_query : float
    loss : {"squared", "hinge"}

    Returns
    -------
    float
    """
    return PREDICTION_MULTIPLIER[loss] * (n_samples * epsilon_per_query) ** (-PREDICTION_EXPONENT[loss])


__all__ = ["ALPHA_FLOOR_TIMES_N", "AUTO_ALPHA_CONSTANTS", "CLASSIFIER_ALPHA_CONSTANTS", "CLASSIFIER_FLOOR_TIMES_N",
           "MONOTONE",
           "NONSMOOTH_CURVATURE", "OUTPUT_LOSS_FACTOR", "OUTPUT_CURVATURE_EXPONENT", "PREDICTION_EXPONENT",
           "PREDICTION_MULTIPLIER", "default_alpha", "is_classifier_loss", "jacobian_alpha", "prediction_default_alpha",
           "rule_constants", "uses_monotone_rule"]
