"""Private parameter tuning: 003 Alg. 4 and random stopping (Papernot & Steinke 2022).

Choosing alpha (or any parameter) by test or validation error is itself a use
of private data. Two methods are offered.

``method="alg4"`` (Chaudhuri, Monteleoni & Sarwate 2011, Alg. 4): split the
data into ``m + 1`` disjoint parts, train one private model per candidate on
its own part, count each model's mistakes ``z_i`` on the last part, and
release model ``i`` with probability proportional to ``exp(-epsilon z_i / 2)``
(the exponential mechanism; a count of mistakes changes by at most 1 when one
record changes). Each record lies in exactly one part and is touched by
exactly one epsilon-DP step, so the whole procedure is epsilon-DP by parallel
composition (003 Thm 8; paper note 11).

``method="random_stopping"`` (Papernot & Steinke, ICLR 2022, "Hyperparameter
Tuning with Renyi Differential Privacy", Thm 2): repeat a private base
algorithm ``Q`` a random number ``K`` of times and release the best of the
``K`` outputs. Their Thm 2 reads: let ``Q`` satisfy ``(lambda, eps)``-RDP and
``(lambda_hat, eps_hat)``-RDP for some ``eps, eps_hat >= 0``,
``lambda in (1, inf)``, ``lambda_hat in [1, inf)``, with totally ordered
outputs; let ``gamma in (0, 1)``, ``eta in (-1, inf)`` and let ``K`` follow the
truncated negative binomial distribution ``D_{eta, gamma}``,
``P[K = k] = (1 - gamma)^k / (gamma^-eta - 1) * prod_{l=0}^{k-1} (l + eta)/(l + 1)``
for ``k >= 1`` (``eta = 0``: the logarithmic distribution
``P[K = k] = (1 - gamma)^k / (k log(1/gamma))``; ``eta = 1``: the geometric
distribution ``P[K = k] = gamma (1 - gamma)^(k-1)``). Running ``Q`` ``K``
times and returning the best output satisfies ``(lambda, eps')``-RDP with::

    eps' = eps + (1 + eta) (1 - 1/lambda_hat) eps_hat
               + (1 + eta) log(1/gamma) / lambda_hat + log(E[K]) / (lambda - 1),

    E[K] = eta (1 - gamma) / (gamma (1 - gamma^eta))   (eta != 0),
    E[K] = (1/gamma - 1) / log(1/gamma)                 (eta = 0).

If ``Q`` is pure ``eps``-DP it is ``(lambda, eps)``-RDP for every ``lambda``,
and letting ``lambda = lambda_hat -> inf`` (the Renyi divergence of order
infinity is the pure-DP privacy loss) gives: the procedure is
``(2 + eta) eps``-DP, whatever ``gamma`` (hence ``E[K]``) is. At ``eta = 1``
(geometric stopping) this is Liu & Talwar (STOC 2019) Thm 3.4's ``3 eps``.
dperm uses this pure-DP form with ``eta >= 0`` (the range dp-accounting's
``RepeatAndSelectDpEvent`` implements; tests check the formula against it).
The RDP route gains nothing here: feeding the RDP curve of a pure ``eps_Q``-DP
base, ``min(eps_Q, lambda eps_Q^2 / 2)`` (Bun & Steinke 2016, Prop. 1.4), to
dp-accounting's Thm 2 and converting at ``delta = 1e-5`` allows ``eps_Q =
0.49998`` for a total of 1 at ``eta = 0``, ``E[K] = 10`` (pure form: 0.5), and
likewise at ``eta = 1`` and total 0.1 (measured when this was written).

The base algorithm ``Q`` of one repetition: draw a random split of the rows
into a training part and a validation part of public sizes, draw a candidate
uniformly from the public grid, train it with ``eps_Q`` on the training
part, count its mistakes on the validation part and add discrete Laplace noise
of scale ``1 / eps_Q`` (a count of sensitivity 1; exact sampler of Canonne,
Kamath & Steinke 2020), and draw a uniform tie-break key. The two parts are
disjoint, so ``Q`` is ``eps_Q``-DP by parallel composition, and its outputs
are ordered by (noisy count, key). ``eps_Q = epsilon / (2 + eta)``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.model_selection import ParameterGrid
from sklearn.utils._available_if import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from dperm.cloning import BudgetOnCloneMixin
from dperm.mechanisms.noise import BitSource, bernoulli_exp_neg, sample_discrete_laplace
from dperm.privacy.accounting import check_accountant, check_budget_left, spend_before_fitting
from dperm.privacy.labels import LabelSet, check_classes, resolve_label_set
from dperm.privacy.references import REFERENCES
from dperm.privacy.tuning_record import StoppingRule, TuningRecord
from dperm.randomness import child_generator
from dperm.validation import (
    check_epsilon,
    check_random_state,
    refuse_dask_input,
    refuse_sample_weight,
)

__all__ = [
    "PrivateParameterSearch", "noisy_mistake_count", "per_repetition_epsilon",
    "sample_truncated_negative_binomial", "select_by_exponential_mechanism", "stopping_gamma",
    "truncated_negative_binomial_mean",
]


def select_by_exponential_mechanism(mistakes, epsilon: float, rng) -> int:
    """Draw index ``i`` with probability ``~ exp(-epsilon z_i / 2)`` exactly (epsilon-DP).

    Float-safe: a uniform candidate is accepted with probability
    ``exp(-epsilon (z_i - z_min) / 2)`` by the exact Bernoulli sampler of
    Canonne, Kamath & Steinke (2020, Alg. 1) on the rational ``epsilon``;
    rejection sampling returns exactly the distribution ``q_i ~ exp(-epsilon z_i / 2)``
    of 003 eq. 123 (the mistake counts are integers).
    """
    counts = [int(z) for z in mistakes]
    if any(z != m for z, m in zip(counts, mistakes)):
        raise ValueError("mistakes must be integer counts.")
    epsilon = Fraction(check_epsilon(epsilon))
    best = min(counts)
    bits = BitSource(rng)
    while True:
        index = bits.below(len(counts))
        if bernoulli_exp_neg(epsilon * (counts[index] - best) / 2, bits):
            return index


def truncated_negative_binomial_mean(gamma: float, shape: float) -> float:
    """``E[K]`` of the truncated negative binomial ``D_{eta, gamma}`` (Papernot & Steinke 2022, Thm 2)."""
    gamma, shape = _check_stopping(gamma, shape)
    if shape == 0:
        return (1.0 / gamma - 1.0) / math.log(1.0 / gamma)
    return shape * (1.0 - gamma) / (gamma * -math.expm1(shape * math.log(gamma)))


def stopping_gamma(mean: float, shape: float) -> float:
    """The ``gamma`` whose ``D_{eta, gamma}`` has mean ``mean`` (bisection; ``E[K]`` falls as ``gamma`` grows).

    Returns the ``gamma`` whose mean is at least ``mean`` (within relative
    ``1e-12``); the record states the mean of the returned ``gamma``.
    """
    mean = float(mean)
    if not np.isfinite(mean) or mean <= 1.0:
        raise ValueError(f"stopping_mean must be a finite number > 1 (the mean number of "
                         f"repetitions); got {mean!r}.")
    low, high = 1e-300, 1.0 - 1e-15  # mean(low) is huge, mean(high) ~ 1
    for _ in range(200):
        mid = math.sqrt(low * high) if high / low > 4 else 0.5 * (low + high)
        if truncated_negative_binomial_mean(mid, shape) >= mean:
            low = mid
        else:
            high = mid
        if high - low <= 1e-12 * high:
            break
    return low


def sample_truncated_negative_binomial(gamma: float, shape: float, rng) -> int:
    """One draw of ``K ~ D_{eta, gamma}`` (``K >= 1``; data-independent, never released).

    ``eta = 1`` (geometric): exact, one Bernoulli(``gamma``) stop per run on
    the rational value of the float ``gamma`` (the record states that float).
    Other ``eta > 0``: numpy's negative binomial count (``eta`` successes,
    success probability ``gamma``) conditioned on ``K >= 1`` by rejection;
    ``eta = 0``: numpy's logarithmic series with ``p = 1 - gamma``. Those two
    are floating-point samplers, exact up to rounding of their probabilities.
    """
    gamma, shape = _check_stopping(gamma, shape)
    rng = check_random_state(rng)
    if shape == 1:
        stop = Fraction(gamma)
        bits = BitSource(rng)
        k = 1
        while bits.below(stop.denominator) >= stop.numerator:
            k += 1
        return k
    if shape == 0:
        return int(rng.logseries(1.0 - gamma))
    while True:
        k = int(rng.negative_binomial(shape, gamma))
        if k >= 1:
            return k


def per_repetition_epsilon(total_epsilon: float, shape: float) -> float:
    """The largest float ``eps_Q`` with ``(2 + eta) eps_Q <= total_epsilon`` exactly (rationals)."""
    exact = Fraction(check_epsilon(total_epsilon)) / (2 + Fraction(_check_shape(shape)))
    value = float(exact)
    return math.nextafter(value, 0.0) if Fraction(value) > exact else value


def _check_shape(shape) -> float:
    if isinstance(shape, bool) or not isinstance(shape, (int, float, np.integer, np.floating)) \
            or not np.isfinite(shape) or shape < 0:
        raise ValueError(f"stopping_shape (eta) must be a finite number >= 0 (0: logarithmic, "
                         f"1: geometric); got {shape!r}.")
    return float(shape)


def _check_stopping(gamma, shape):
    gamma = float(gamma)
    if not 0.0 < gamma < 1.0:
        raise ValueError(f"gamma must be in (0, 1); got {gamma!r}.")
    return gamma, _check_shape(shape)


def noisy_mistake_count(mistakes: int, epsilon: float, bits) -> int:
    """``mistakes`` plus discrete Laplace noise of scale ``1/epsilon``: epsilon-DP for a count of sensitivity 1.

    Exact sampler (Canonne, Kamath & Steinke 2020, Alg. 2) on the rational
    ``1 / epsilon`` of the float ``epsilon``.
    """
    scale = 1 / Fraction(check_epsilon(epsilon))
    return int(mistakes) + sample_discrete_laplace(scale, bits)


class PrivateParameterSearch(BudgetOnCloneMixin, ClassifierMixin, BaseEstimator):
    """Choose parameters of a private estimator privately (003 Alg. 4 or random stopping).

    Parameters
    ----------
    estimator : dperm private classifier
        Any dperm estimator with an ``epsilon`` parameter; its ``epsilon``,
        ``random_state`` and ``accountant`` are set by the search.
    param_grid : dict or list of dicts
        The public candidates (e.g. ``{"alpha": [1e-4, 1e-3, 1e-2]}``). They must
        not be chosen by looking at the private data.
    epsilon : float
        The guarantee of the whole procedure. ``"alg4"``: each candidate and the
        selection get the full epsilon (parallel composition). ``"random_stopping"``:
        each repetition gets ``epsilon / (2 + stopping_shape)`` (Papernot &
        Steinke 2022, Thm 2, pure-DP form; see the module docstring).
    random_state : None, int or numpy Generator, default=None
        Drives the splits, the candidates' noise, the number of repetitions and
        the selection. ``None``: every noise bit from the OS CSPRNG, each candidate
        with its own (:mod:`dperm.randomness`); a seed is for testing only.
    accountant : dperm.privacy.accounting.BudgetAccountant, optional
        Charged once with the whole procedure's ``(epsilon, delta)``, after the
        grid, every candidate's parameters, the data and the labels have been
        checked and before any candidate is trained. The delta is what the
        candidates spend at their public part sizes, ``mechanism="auto"``
        resolved by each candidate as its own ``fit`` resolves it (``"alg4"``:
        the largest, by parallel composition; ``"random_stopping"``: 0).
    classes : None or list of labels, default=None
        The public label set, given to every candidate (the estimator needs a
        ``classes`` parameter; see :class:`dperm.PrivateLogisticRegression`).
        A label outside it raises ValueError before the accountant is charged.
        ``None`` keeps the estimator's own ``classes``; if that is None too,
        each candidate reads the labels of its own part, which the guarantee
        does not cover (a :class:`~dperm.PrivacyLeakWarning` says so) and which
        can differ between candidates.
    method : {"alg4", "random_stopping"}, default="alg4"
        ``"alg4"``: 003 Alg. 4 (``m + 1`` disjoint parts, exponential
        mechanism). ``"random_stopping"``: repeat ``K ~ D_{eta, gamma}`` times
        (train a uniformly drawn candidate on a random training part, count
        its mistakes on the rest with discrete Laplace noise) and release the
        best; every repetition sees ``n (1 - validation_fraction)`` rows.
        Needs pure-DP candidates: a grid in which a candidate would spend delta
        at the training part's size (e.g. ``mechanism="auto"`` choosing the
        Gaussian objective mechanism) is refused before any budget is spent,
        since dperm implements only the pure-DP form of Papernot & Steinke's
        Thm 2 (their approximate-DP and RDP forms are not implemented).
    stopping_shape : float >= 0, default=1.0
        ``eta`` of the truncated negative binomial (0: logarithmic, 1:
        geometric). Public; the total costs ``(2 + eta)`` times one repetition.
    stopping_mean : float > 1 or None, default=None
        ``E[K]``, the mean number of repetitions (public; it changes the run
        time, not the pure-DP guarantee). ``None``: ``10 m``.
    validation_fraction : float in (0, 1), default=0.2
        Share of the rows that each repetition's noisy mistake count uses.

    Attributes
    ----------
    best_index_ : int
        Index in :attr:`candidates_` of the released candidate.
    best_params_ : dict
    best_estimator_ : estimator
        The selected candidate, trained on its own part of the data.
    candidates_ : list of dict
        The grid, in the order used.
    classes_ : ndarray
    privacy_ : TuningRecord

    Notes
    -----
    Only the selected model and its parameters are released (and the record,
    which holds public inputs and the privately selected index). Validation
    mistakes, noisy counts, selection probabilities, the number ``K`` of
    repetitions and which repetition won depend on the private data or on
    the run and are not stored. ``"alg4"``: every candidate sees
    ``n / (m + 1)`` rows, so a large grid costs accuracy.
    """

    def __init__(self, estimator, param_grid, epsilon=1.0, random_state=None, accountant=None,
                 classes=None, method="alg4", stopping_shape=1.0, stopping_mean=None,
                 validation_fraction=0.2):
        self.estimator = estimator
        self.param_grid = param_grid
        self.epsilon = epsilon
        self.random_state = random_state
        self.accountant = accountant
        self.classes = classes
        self.method = method
        self.stopping_shape = stopping_shape
        self.stopping_mean = stopping_mean
        self.validation_fraction = validation_fraction

    def _candidates(self):
        candidates = list(ParameterGrid(self.param_grid))
        if not candidates:
            raise ValueError("param_grid must give at least one candidate.")
        reserved = sorted({key for c in candidates for key in c}
                          & {"epsilon", "random_state", "accountant", "classes"})
        if reserved:
            raise ValueError(f"param_grid may not set {reserved}: the search sets them itself.")
        if "epsilon" not in self.estimator.get_params():
            raise ValueError(
                f"estimator must be a dperm private estimator with an epsilon parameter; "
                f"got {type(self.estimator).__name__}."
            )
        return candidates

    def _label_set(self):
        """The checked public label set of every candidate, or None (each reads its part's labels)."""
        inner = self.estimator.get_params().get("classes")
        if self.classes is None:
            return check_classes(inner)
        if "classes" not in self.estimator.get_params():
            raise ValueError(f"classes is given but {type(self.estimator).__name__} has no classes "
                             "parameter; use a dperm classifier.")
        classes = check_classes(self.classes)
        if inner is not None and not np.array_equal(check_classes(inner), classes):
            raise ValueError(f"classes={classes.tolist()} differs from the estimator's classes="
                             f"{list(inner)}; give the label set once.")
        return classes

    def _configured(self, params, epsilon, seed, classes=None):
        estimator = clone(self.estimator)
        estimator.set_params(**params, epsilon=epsilon, random_state=seed, accountant=None)
        return estimator if classes is None else estimator.set_params(classes=classes)

    @staticmethod
    def _check_candidate(estimator) -> None:
        """Run a candidate's own parameter checks (loss vs mechanism included), spending nothing."""
        check_params = getattr(estimator, "_check_params", None)
        if callable(check_params):
            check_params()

    @staticmethod
    def _budget_of(estimator, n_samples, n_features, label_set):
        """``(epsilon, delta)`` that ``estimator`` spends when fitted on ``n_samples`` rows.

        Resolved through the candidate itself (``_public_budget``: ``mechanism="auto"``
        is chosen from the public part size and ``d`` exactly as its ``fit`` chooses it, and
        its budget checks run), so the search charges what the candidate spends. An
        estimator without that method is charged its whole ``delta`` parameter (an upper
        bound; the check after fitting refuses to release if its record says more).
        """
        public_budget = getattr(estimator, "_public_budget", None)
        if callable(public_budget):
            return public_budget(n_samples, n_features, label_set)
        params = estimator.get_params()
        return float(params["epsilon"]), float(params.get("delta", 0.0) or 0.0)

    @staticmethod
    def _part_label_set(classes, y_part):
        """The label set a candidate fitted on ``y_part`` uses (the public one, or the part's)."""
        if classes is not None:
            return LabelSet(classes, public=True)
        observed = np.unique(y_part)
        if observed.size < 2:
            raise ValueError(f"a part of {y_part.size} rows has {observed.size} class; the candidates "
                             "are classifiers and need at least two: give classes= (public) or use "
                             "more data or fewer candidates.")
        return LabelSet(observed, public=False)

    @staticmethod
    def _check_spent_as_charged(model, budget) -> None:
        """Refuse to release a candidate whose own record says it spent more than was charged.

        ``budget`` is what the search charged for it; its record's ``(epsilon, delta)``
        must not exceed it. Raised after the budget is spent, before anything is released.
        """
        record = getattr(model, "privacy_", None)
        if record is None:
            return
        epsilon, delta = budget
        if record.epsilon > epsilon * (1 + 1e-12) or record.delta > delta * (1 + 1e-12):
            raise RuntimeError(
                f"internal error: a candidate's record says ({record.epsilon:g}, {record.delta:g})"
                f"-DP but the search charged ({epsilon:g}, {delta:g}); nothing was released. "
                "Please report this."
            )

    def _stopping(self, n_candidates):
        """Checked :class:`StoppingRule` ``(eta, gamma, E[K])`` of random stopping (public parameters only)."""
        shape = _check_shape(self.stopping_shape)
        mean = 10.0 * n_candidates if self.stopping_mean is None else self.stopping_mean
        if isinstance(mean, bool) or not isinstance(mean, (int, float, np.integer, np.floating)):
            raise ValueError(f"stopping_mean must be a number > 1 or None; got {mean!r}.")
        gamma = stopping_gamma(mean, shape)
        return StoppingRule("truncated_negative_binomial", shape, gamma, truncated_negative_binomial_mean(gamma, shape))

    def _check_validation_fraction(self, n_rows):
        fraction = self.validation_fraction
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float, np.integer, np.floating)) \
                or not 0.0 < fraction < 1.0:
            raise ValueError(f"validation_fraction must be a number in (0, 1); got {fraction!r}.")
        n_validation = int(math.floor(fraction * n_rows))
        if n_validation < 1 or n_rows - n_validation < 2:
            raise ValueError(f"{n_rows} rows with validation_fraction={fraction} leave "
                             f"{n_rows - n_validation} training and {n_validation} validation rows; "
                             "need at least 2 and 1: use more data or another fraction.")
        return n_validation

    def _plan(self, epsilon, n_candidates):
        """The method's checked plan: ``(per-candidate epsilon, stopping or None)``."""
        if self.method == "alg4":
            return epsilon, None
        if self.method != "random_stopping":
            raise ValueError(f"method must be 'alg4' or 'random_stopping'; got {self.method!r}.")
        stopping = self._stopping(n_candidates)
        return per_repetition_epsilon(epsilon, stopping.shape), stopping

    @staticmethod
    def _mechanism_of(candidate):
        """The mechanism a candidate resolved in ``_public_budget`` (its parameter if unresolved)."""
        return getattr(candidate, "mechanism_", candidate.get_params().get("mechanism"))

    def _candidate_budgets(self, configured, sizes, n_features, label_sets):
        """Each candidate's ``(epsilon, delta)`` at its public part size, before any is trained."""
        return tuple(self._budget_of(candidate, size, n_features, label_set)
                     for candidate, size, label_set in zip(configured, sizes, label_sets))

    def _label(self, n_candidates):
        return f"PrivateParameterSearch ({self.method}) over {n_candidates} candidates"

    def fit(self, X, y, sample_weight=None):
        """Train private candidates and select one privately (``method``).

        Every check runs before the budget is spent: the method and its
        parameters, the grid, each candidate's parameters (e.g. a loss its
        mechanism cannot use), the data and the split sizes. The accountant is
        charged once, with the total ``(epsilon, delta)``, just before the
        first candidate is trained. ``sample_weight`` is not supported (ValueError):
        the private selection scores unweighted mistake counts.
        """
        refuse_sample_weight(self, sample_weight, "the private selection (003 Alg. 4, random "
                             "stopping) scores unweighted validation mistakes, and its "
                             "candidates are trained on parts of the data without weights.")
        refuse_dask_input(self, X, y)
        epsilon = check_epsilon(self.epsilon)
        check_accountant(self.accountant)
        candidates = self._candidates()
        classes = self._label_set()
        configured = [self._configured(c, epsilon, None, classes) for c in candidates]
        for candidate in configured:
            self._check_candidate(candidate)
        per_epsilon, stopping = self._plan(epsilon, len(candidates))
        # An exhausted epsilon budget: refuse before reading X. The delta is known once the
        # part sizes are (mechanism="auto" chooses from them); it is checked when spent.
        check_budget_left(self.accountant, epsilon, 0.0, self._label(len(candidates)))
        X, y = validate_data(self, X, y, accept_sparse="csr", ensure_min_samples=2,
                             ensure_all_finite=True, dtype=None)
        check_classification_targets(y)
        if classes is not None:
            resolve_label_set(classes, y)  # a label outside the public set: before the budget
        elif np.unique(y).size < 2:
            raise ValueError(f"y has {np.unique(y).size} class ({np.unique(y).tolist()}); the "
                             "candidates are classifiers and need at least two.")
        rng = check_random_state(self.random_state)
        if stopping is None:
            return self._fit_alg4(X, y, rng, candidates, configured, classes, epsilon)
        n_validation = self._check_validation_fraction(X.shape[0])
        return self._fit_random_stopping(X, y, rng, candidates, classes, epsilon, per_epsilon,
                                         stopping, n_validation)

    def _fit_alg4(self, X, y, rng, candidates, configured, classes, epsilon):
        """003 Alg. 4: one candidate per disjoint part, exponential mechanism on the last part.

        Charged ``(max eps_i, max delta_i)`` over the candidates' own budgets at their part
        sizes (parallel composition, McSherry 2009 Thm 4: each record is in one part); the
        selection is ``epsilon``-DP on the validation part. Each ``eps_i`` is ``epsilon``.
        """
        parts = np.array_split(rng.permutation(X.shape[0]), len(candidates) + 1)
        validation = parts[-1]
        if min(part.size for part in parts) < 2:
            raise ValueError(
                f"{X.shape[0]} rows cannot be split into {len(parts)} parts of at least 2 rows; "
                "use fewer candidates or more data."
            )
        # Part sizes depend on n and m only; a part's label set is the public one.
        label_sets = [self._part_label_set(classes, y[part]) for part in parts[:-1]]
        budgets = self._candidate_budgets(configured, [part.size for part in parts[:-1]],
                                          X.shape[1], label_sets)
        delta = max(d for _, d in budgets)
        # Check first, spend last-possible: before any candidate sees its part.
        spend_before_fitting(self.accountant, max(max(e for e, _ in budgets), epsilon), delta,
                             self._label(len(candidates)))
        models, mistakes = [], []
        for params, part, budget in zip(candidates, parts[:-1], budgets):
            seed = child_generator(rng)
            model = self._configured(params, epsilon, seed, classes).fit(X[part], y[part])
            self._check_spent_as_charged(model, budget)
            models.append(model)
            mistakes.append(int(np.count_nonzero(model.predict(X[validation]) != y[validation])))
        index = select_by_exponential_mechanism(mistakes, epsilon, rng)
        return self._release(candidates, index, models[index], epsilon=epsilon, delta=delta,
                             part_sizes=tuple(int(part.size) for part in parts),
                             per_repetition_epsilon=epsilon, per_repetition_delta=delta,
                             candidate_budgets=budgets)

    def _check_pure_candidates(self, candidates, classes, per_epsilon, n_train, n_features, y):
        """Refuse, before spending, a grid in which a candidate would spend delta at ``n_train`` rows.

        Random stopping's guarantee here is the pure-DP form of Papernot & Steinke (2022)
        Thm 2, which needs a pure ``eps_Q``-DP base. Their approximate-DP and RDP forms
        cover a base that spends delta, but dperm neither implements nor tests them.
        """
        label_set = self._part_label_set(classes, y)
        configured = [self._configured(c, per_epsilon, None, classes) for c in candidates]
        budgets = self._candidate_budgets(configured, [n_train] * len(configured), n_features,
                                          [label_set] * len(configured))
        spending = [i for i, (_, delta) in enumerate(budgets) if delta > 0]
        if spending:
            raise ValueError(
                f"method='random_stopping' needs pure epsilon-DP candidates (the pure-DP form of "
                f"Papernot & Steinke 2022 Thm 2), but candidate(s) {spending} would spend "
                f"delta={budgets[spending[0]][1]:g} (mechanism {self._mechanism_of(configured[spending[0]])!r} "
                f"at {n_train} rows); give the estimator delta=0 or a pure mechanism "
                "(mechanism='objective' or 'output'), or use method='alg4'."
            )
        return budgets

    def _fit_random_stopping(self, X, y, rng, candidates, classes, epsilon, per_epsilon,
                             stopping, n_validation):
        """Papernot & Steinke (2022) Thm 2: best of ``K ~ D_{eta, gamma}`` eps_Q-DP repetitions."""
        budgets = self._check_pure_candidates(candidates, classes, per_epsilon,
                                              X.shape[0] - n_validation, X.shape[1], y)
        spend_before_fitting(self.accountant, epsilon, 0.0, self._label(len(candidates)))
        bits = BitSource(rng)
        n_repetitions = sample_truncated_negative_binomial(stopping.gamma, stopping.shape, rng)  # never released
        best_key, best = None, None
        for _ in range(n_repetitions):
            order = rng.permutation(X.shape[0])
            validation, train = order[:n_validation], order[n_validation:]
            index = int(rng.integers(len(candidates)))
            seed = child_generator(rng)
            model = self._configured(candidates[index], per_epsilon, seed, classes).fit(
                X[train], y[train])
            self._check_spent_as_charged(model, budgets[index])
            mistakes = int(np.count_nonzero(model.predict(X[validation]) != y[validation]))
            key = (noisy_mistake_count(mistakes, per_epsilon, bits), float(rng.random()))
            if best_key is None or key < best_key:
                best_key, best = key, (index, model)
        index, model = best
        return self._release(candidates, index, model, epsilon=epsilon, delta=0.0,
                             part_sizes=(X.shape[0] - n_validation, n_validation),
                             reference=REFERENCES["tuning_random_stopping"], method="random_stopping",
                             stopping_rule=stopping, per_repetition_epsilon=per_epsilon,
                             per_repetition_delta=0.0, candidate_budgets=budgets)

    def _release(self, candidates, index, model, **record):
        """Set the fitted attributes; ``record``: the :class:`TuningRecord` fields the two methods differ in."""
        self.privacy_ = TuningRecord(n_candidates=len(candidates), selected_index=index,
                                     candidate_record=getattr(model, "privacy_", None), **record)
        self.candidates_ = candidates
        self.best_index_ = index
        self.best_params_ = candidates[index]
        self.best_estimator_ = model
        self.classes_ = model.classes_
        return self

    def predict(self, X):
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X)

    def decision_function(self, X):
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.decision_function(X)

    @available_if(lambda self: hasattr(self.estimator, "predict_proba"))
    def predict_proba(self, X):
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict_proba(X)
