"""Ready-made audits of dperm's mechanisms, estimators and private selection.

Each builder constructs the neighbouring pair itself (:mod:`dperm.audit._canaries`
for ERM, the worst-case mistake vectors for the exponential mechanism), picks
the statistic, and calls :func:`dperm.audit.audit`.
"""

from __future__ import annotations

import inspect
import math

import numpy as np
from sklearn.base import clone

from dperm.audit._canaries import CanaryPair, make_canary_pair, strong_alpha
from dperm.audit._core import audit
from dperm.audit._noise import under_noised_epsilon, under_noised_label, with_scaled_noise
from dperm.losses import get_loss
from dperm.validation import check_delta, check_epsilon, check_positive, check_random_state

#: Statistics of a released linear model that the builders know by name.
_STATISTICS = ("margin", "loss")
#: Solver settings of the mechanism audits (the estimators' defaults).
_DEFAULT_TOL = 1e-8
_DEFAULT_MAX_ITER = 1000
#: Target weight ``K = (m - 1) exp(-epsilon / 2)`` of the other candidates in the
#: exponential-mechanism audit; about 3 maximises the bound for 10^3-10^4 runs.
_EXPONENTIAL_AUDIT_WEIGHT = 3.0


def _mechanism_by_name(name):
    from dperm.mechanisms.catalog import MECHANISMS

    if name not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {tuple(MECHANISMS)} or a callable; got {name!r}.")
    return MECHANISMS[name].function


def _takes_delta(mechanism) -> bool:
    try:
        return "delta" in inspect.signature(mechanism).parameters
    except (TypeError, ValueError):
        return False


def _statistic(statistic, margin, make_loss):
    """``statistic`` if callable, else the named one: the canary's ``margin`` or its loss (``make_loss()``)."""
    if callable(statistic):
        return statistic
    if statistic not in _STATISTICS:
        raise ValueError(f"statistic must be one of {_STATISTICS} or a callable; got {statistic!r}.")
    if statistic == "margin":
        return margin
    loss = make_loss()
    return lambda output: float(loss.value(margin(output)))


def _margin_statistic(pair: CanaryPair, loss, statistic):
    """``y_c w.x_c`` (the projection of ``w`` on the canary's direction) or the canary's loss."""
    direction = pair.canary_direction

    def margin(output):
        coef = np.asarray(getattr(output, "coef", output), dtype=float).ravel()
        return float(coef @ direction)

    return _statistic(statistic, margin, lambda: loss)


def audit_mechanism(mechanism, epsilon, delta=0.0, *, loss="huber", h=0.5, n_samples=20,
                    n_features=1, alpha=None, data_norm=1.0, statistic="margin", n_runs=1000,
                    confidence=0.95, threshold_fraction=0.25, noise_factor=1.0, tol=_DEFAULT_TOL,
                    max_iter=_DEFAULT_MAX_ITER, random_state=None):
    """Audit an ERM mechanism on a worst-case canary pair.

    Parameters
    ----------
    mechanism : {"output", "objective", "gaussian_objective", "gaussian_objective_004"} or callable
        A name from :mod:`dperm.mechanisms`, or any callable with their call
        signature ``f(problem, epsilon, [delta,] rng, tol, max_iter)`` returning an
        object with ``.coef`` (or the coefficient array). ``delta`` is passed when
        the callable has an argument of that name.
    epsilon, delta : float
        The claim under test; ``delta`` only for mechanisms that take it.
    loss : str, default="huber"
        A :func:`dperm.losses.get_loss` name. Hinge-type losses meet the
        sensitivity bound exactly on the canary pair; logistic reaches half of it.
    h : float, default=0.5
        Width of huber/smooth_hinge.
    n_samples, n_features, data_norm
        Shape and norm bound of the canary pair (:func:`make_canary_pair`).
    alpha : float, optional
        Regularisation; default :func:`strong_alpha` (``n alpha = 100``).
    statistic : {"margin", "loss"} or callable, default="margin"
        ``"margin"`` is ``y_c w.x_c``, the projection of the released ``w`` on the
        canary's direction; ``"loss"`` is the loss on the canary (a monotone
        function of the margin); a callable gets the mechanism's output.
    n_runs, confidence, threshold_fraction
        As in :func:`dperm.audit.audit`.
    noise_factor : float, default=1
        Runs the mechanism calibrated for ``epsilon / noise_factor``
        (:func:`~dperm.audit.with_scaled_noise`) against the claim ``epsilon``;
        ``0.25`` audits a copy with about a quarter of the noise, which should FAIL.
    tol, max_iter
        Passed to the mechanism.
    random_state : None, int or numpy Generator
        Seeds the canary pair and the runs.

    Returns
    -------
    AuditResult
    """
    from dperm.mechanisms import ERMProblem

    name = mechanism if isinstance(mechanism, str) else getattr(mechanism, "__name__", "mechanism")
    function = _mechanism_by_name(mechanism) if isinstance(mechanism, str) else mechanism
    if not callable(function):
        raise ValueError(f"mechanism must be a name or a callable; got {mechanism!r}.")
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    if isinstance(mechanism, str):  # dperm's mechanisms all take delta; the table says if they use it
        from dperm.mechanisms.catalog import MECHANISMS

        takes_delta, passes_delta = MECHANISMS[mechanism].uses_delta, True
    else:
        takes_delta = passes_delta = _takes_delta(function)
    if delta and not takes_delta:
        raise ValueError(
            f"mechanism {name!r} takes no delta (it claims pure epsilon-DP); leave delta=0."
        )
    noise_factor = check_positive(noise_factor, "noise_factor")
    loss_function = get_loss(loss, h=h)
    seed_pair, seed_runs = check_random_state(random_state).spawn(2)
    alpha = strong_alpha(n_samples) if alpha is None else check_positive(alpha, "alpha")
    pair = make_canary_pair(n_samples, n_features, data_norm, alpha=alpha, random_state=seed_pair)
    problem_d = ERMProblem(pair.X, pair.y, loss_function, alpha, pair.data_norm)
    problem_d_prime = ERMProblem(pair.X_prime, pair.y_prime, loss_function, alpha, pair.data_norm)
    privacy = (delta,) if passes_delta else ()
    run_mechanism = function if noise_factor == 1.0 else with_scaled_noise(function, noise_factor)

    def runner(problem):
        return lambda rng: run_mechanism(problem, epsilon, *privacy, rng, tol, max_iter)

    label = under_noised_label(f"{name}, {loss} loss, canary pair n={n_samples}, d={n_features}, "
                               f"alpha={alpha:g}, data_norm={pair.data_norm:g}, "
                               f"statistic={_name(statistic)}", noise_factor)
    return audit(runner(problem_d), runner(problem_d_prime),
                 _margin_statistic(pair, loss_function, statistic), epsilon,
                 delta if takes_delta else 0.0, n_runs=n_runs, confidence=confidence,
                 threshold_fraction=threshold_fraction, random_state=seed_runs, label=label)


def _name(statistic) -> str:
    return statistic if isinstance(statistic, str) else getattr(statistic, "__name__", "custom")


def audit_estimator(estimator, epsilon=None, *, n_runs=1000, n_samples=20, n_features=1,
                    alpha="strong", statistic="margin", confidence=0.95, threshold_fraction=0.25,
                    noise_factor=1.0, random_state=None):
    """Audit a dperm private classifier: fit it ``n_runs`` times on each of a canary pair.

    Parameters
    ----------
    estimator : dperm estimator
        E.g. ``PrivateLogisticRegression(mechanism="output")``. Its parameters are
        kept except ``epsilon`` (if given), ``alpha`` (see below) and
        ``random_state``; its ``data_norm``, ``fit_intercept`` and
        ``intercept_scaling`` shape the canary pair.
    epsilon : float, optional
        The epsilon to fit and audit at; default the estimator's own.
    n_runs : int, default=1000
        Fits per dataset.
    n_samples, n_features : int
        Size of the canary pair (binary labels in {-1, +1}).
    alpha : "strong", None or float, default="strong"
        ``"strong"`` sets ``alpha = 100 / n_samples`` (:func:`strong_alpha`): the
        guarantee must hold for every alpha, and strong regularisation makes the
        sensitivity bound nearly tight. ``None`` keeps the estimator's alpha.
    statistic : {"margin", "loss"} or callable, default="margin"
        ``"margin"`` is ``y_c * decision_function(x_c)``, the projection of the
        released ``(coef, intercept)`` on the canary's augmented direction;
        ``"loss"`` the estimator's loss on the canary; a callable gets the
        fitted estimator.
    confidence, threshold_fraction
        As in :func:`dperm.audit.audit`.
    noise_factor : float, default=1
        The runs fit the estimator at ``epsilon / noise_factor``
        (:func:`~dperm.audit._noise.under_noised_epsilon`) against the claim of
        the honest configuration; ``0.25`` audits an under-noised copy.
    random_state : None, int or numpy Generator

    Returns
    -------
    AuditResult
        The claim is the fitted model's ``privacy_.epsilon`` and ``privacy_.delta``.
    """
    params = estimator.get_params()
    if "epsilon" not in params or "random_state" not in params:
        raise ValueError(
            "estimator must be a dperm private estimator with epsilon and random_state "
            f"parameters; got {type(estimator).__name__}."
        )
    configured = clone(estimator)
    if epsilon is not None:
        configured.set_params(epsilon=check_epsilon(epsilon))
    if isinstance(alpha, str):
        if alpha != "strong":
            raise ValueError(f"alpha must be 'strong', None or a number; got {alpha!r}.")
        configured.set_params(alpha=strong_alpha(n_samples))
    elif alpha is not None:
        configured.set_params(alpha=check_positive(alpha, "alpha"))
    if "accountant" in params:
        configured.set_params(accountant=None)
    noise_factor = check_positive(noise_factor, "noise_factor")
    params = configured.get_params()
    seed_pair, seed_probe, seed_runs = check_random_state(random_state).spawn(3)
    pair = make_canary_pair(
        n_samples, n_features, params.get("data_norm", 1.0),
        alpha=params.get("alpha"), fit_intercept=bool(params.get("fit_intercept", False)),
        intercept_scaling=params.get("intercept_scaling", 1.0), random_state=seed_pair,
    )
    if "classes" in params and params["classes"] is None:
        # the audit makes the labels, so the label set {-1, +1} is public
        configured.set_params(classes=[-1.0, 1.0])
    probe = clone(configured).set_params(random_state=seed_probe).fit(pair.X, pair.y)
    record = getattr(probe, "privacy_", None)
    claimed_epsilon = float(getattr(record, "epsilon", params["epsilon"]))
    claimed_delta = float(getattr(record, "delta", 0.0))

    audited = clone(configured).set_params(epsilon=under_noised_epsilon(params["epsilon"], noise_factor))

    def runner(X, y):
        def fit(rng):
            return clone(audited).set_params(random_state=rng).fit(X, y)
        return fit

    canary = pair.canary_x[None, :]

    def margin(model):
        return float(pair.canary_y * np.ravel(model.decision_function(canary))[0])

    score = _statistic(statistic, margin, lambda: get_loss(params.get("loss", "logistic"), h=params.get("h", 0.5)))
    described = ", ".join(f"{key}={params[key]!r}" for key in ("mechanism", "loss") if key in params)
    label = under_noised_label(f"{type(estimator).__name__}({described}) on a canary pair "
                               f"n={n_samples}, d={n_features}, alpha={params.get('alpha'):g}, "
                               f"statistic={_name(statistic)}", noise_factor)
    return audit(runner(pair.X, pair.y), runner(pair.X_prime, pair.y_prime), score,
                 claimed_epsilon, claimed_delta, n_runs=n_runs, confidence=confidence,
                 threshold_fraction=threshold_fraction, random_state=seed_runs, label=label)


def exponential_mechanism_neighbours(n_candidates: int):
    """Worst-case neighbouring mistake vectors for the selection of 003 Alg. 4.

    Changing one validation record changes every candidate's mistake count by
    at most 1, each in its own direction. Candidate 0 loses one mistake and all
    others gain one: ``z = (0, 1, ..., 1)`` on ``D`` and ``z' = (1, 0, ..., 0)`` on
    ``D'``. The probability of selecting 0 is ``1 / (1 + K)`` on ``D`` and
    ``1 / (1 + K e^epsilon)`` on ``D'`` with ``K = (m - 1) e^(-epsilon/2)``: their
    ratio ``(1 + K e^epsilon) / (1 + K)`` tends to ``e^epsilon`` as ``K`` grows.
    """
    if isinstance(n_candidates, bool) or not isinstance(n_candidates, (int, np.integer)) \
            or n_candidates < 2:
        raise ValueError(f"n_candidates must be an integer >= 2; got {n_candidates!r}.")
    mistakes = np.ones(int(n_candidates))
    mistakes[0] = 0.0
    return mistakes, 1.0 - mistakes


def exponential_audit_candidates(epsilon: float) -> int:
    """``m`` with ``K = (m - 1) e^(-epsilon/2)`` near ``_EXPONENTIAL_AUDIT_WEIGHT``."""
    epsilon = check_epsilon(epsilon)
    return max(2, int(round(1.0 + _EXPONENTIAL_AUDIT_WEIGHT * math.exp(epsilon / 2.0))))


def audit_exponential_mechanism(epsilon, *, n_candidates=None, select=None, n_runs=10000,
                                confidence=0.95, threshold_fraction=0.25, noise_factor=1.0,
                                random_state=None):
    """Audit the private selection of 003 Alg. 4 (the exponential mechanism).

    Runs ``select(mistakes, epsilon, rng) -> index`` on the worst-case pair of
    :func:`exponential_mechanism_neighbours`; the statistic is whether candidate
    0 was selected (the likelihood ratio takes only two values, so this test is
    the most powerful one). The selection's exact privacy loss on this pair is
    ``log((1 + K e^epsilon) / (1 + K))``, a little under epsilon.

    Parameters
    ----------
    epsilon : float
        The claim under test.
    n_candidates : int, optional
        ``m``; default :func:`exponential_audit_candidates`.
    select : callable, optional
        Default :func:`dperm.tuning.select_by_exponential_mechanism`.
    n_runs, confidence, threshold_fraction, random_state
        As in :func:`dperm.audit.audit`. Selections are cheap: use 10^4 or more.
    noise_factor : float, default=1
        Selects at ``epsilon / noise_factor``
        (:func:`~dperm.audit._noise.under_noised_epsilon`), i.e. multiplies the
        mechanism's noise scale ``2 / epsilon`` by it; ``0.25`` audits an
        under-noised copy.

    Returns
    -------
    AuditResult
    """
    if select is None:
        from dperm.tuning import select_by_exponential_mechanism as select
    epsilon = check_epsilon(epsilon)
    noise_factor = check_positive(noise_factor, "noise_factor")
    m = exponential_audit_candidates(epsilon) if n_candidates is None else n_candidates
    mistakes_d, mistakes_d_prime = exponential_mechanism_neighbours(m)

    selection_epsilon = under_noised_epsilon(epsilon, noise_factor)

    def runner(mistakes):
        return lambda rng: float(select(mistakes, selection_epsilon, rng) == 0)

    label = under_noised_label(f"exponential-mechanism selection (003 Alg. 4), {m} candidates",
                               noise_factor)
    return audit(runner(mistakes_d), runner(mistakes_d_prime), None, epsilon, 0.0, n_runs=n_runs,
                 confidence=confidence, threshold_fraction=threshold_fraction,
                 random_state=random_state, label=label)


__all__ = [
    "audit_estimator",
    "audit_exponential_mechanism",
    "audit_mechanism",
    "exponential_audit_candidates",
    "exponential_mechanism_neighbours",
]
