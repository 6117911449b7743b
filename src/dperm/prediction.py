"""``PrivatePredictor``: a secret kernel model that answers queries, each with fresh noise.

Private prediction of Nie & Wang (000 Lemma 1, Prop. 1; 002 eq. 2), used for
what it protects (paper note 6): **the answers, not a model**. ``fit``
solves the kernel ERM and keeps the model in private attributes, spending
nothing; each answered row costs ``epsilon_per_query`` from ``epsilon_total``,
paid before anything is computed, under a lock shared by all threads. A fitted
predictor holds the training rows, so it refuses to be pickled or copied.

The estimator only checks parameters and data and stores results: the
calibration is :mod:`dperm.mechanisms.prediction`, the certified solvers and
the memory plan :mod:`dperm.solvers.kernel`, the kernels
:data:`dperm.kernels.KERNELS`, the record
:mod:`dperm.privacy.prediction_record`. Design notes: ``docs/design/prediction.md``.
"""

from __future__ import annotations

import math
import threading
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from dperm.catalog import LOSSES
from dperm.cloning import BudgetOnCloneMixin
from dperm.kernels import KERNEL_NAMES
from dperm.losses import get_loss
from dperm.mechanisms.prediction import PREDICTION_LOSSES, answer_queries, fit_private_prediction
from dperm.privacy.accounting import TOLERANCE, BudgetAccountant
from dperm.privacy.alpha import prediction_default_alpha
from dperm.privacy.labels import check_classes, resolve_label_set
from dperm.privacy.prediction_record import prediction_record
from dperm.solvers.kernel import (
    DEFAULT_MAX_MEMORY_GB,
    DEFAULT_N_COMPONENTS,
    PREDICTION_SOLVERS,
    plan_prediction_solver,
)
from dperm.validation import (
    check_budget_for_data,
    check_random_state,
    clip_labels_to_bound,
    refuse_dask_input,
    refuse_sample_weight,
    warn_clipped_labels,
)

#: Largest accepted ``feature_seed`` (numpy's SeedSequence takes any non-negative integer;
#: the bound keeps the recorded value an ordinary JSON integer).
_MAX_FEATURE_SEED = 2**63 - 1

__all__ = ["PrivatePredictor"]


class PrivatePredictor(BudgetOnCloneMixin, BaseEstimator):
    """Differentially private *prediction* with an exact kernel model (Nie & Wang 2017, Lemma 1).

    Trains ``f_z = argmin_{f in H_K} (1/m) sum L(f(x_i), y_i) + alpha/2 ||f||_K^2``
    exactly (000 eq. 1 with ``lambda = alpha / 2``) and answers each query
    ``x`` with ``f_z(x) + b``, ``b ~ Laplace(B_Delta / epsilon_per_query)``
    drawn afresh for every answer. Every answer is ``epsilon_per_query``-DP
    with respect to replacing one training record; ``k`` answers are
    ``k * epsilon_per_query``-DP (sequential composition), and answering stops
    at ``epsilon_total``. This protects the answers, **not a released model**
    (paper note 6): the object itself holds the training rows and the
    exact model in private attributes and must never be published.

    Parameters
    ----------
    epsilon_total : float
        Budget of all answers together (finite, > 0, >= ``epsilon_per_query``).
    epsilon_per_query : float
        Privacy loss of one answered value.
    kernel : {"rbf", "laplacian"}, default="rbf"
        ``exp(-gamma ||x - x'||_2^2)`` (Gaussian) or ``exp(-gamma ||x - x'||_1)``;
        both have ``kappa^2 = sup K(x, x) = 1`` for every input, so X needs no bound.
    gamma : float, default=1.0
        Kernel width parameter (not 000's strong-convexity ``gamma``, which is 2).
    loss : {"squared", "hinge"}, default="squared"
        ``"squared"``: kernel least squares (kernel ridge regression, 000 Sec. 5.1,
        002 eq. 1) with labels clipped to ``[-y_bound, y_bound]`` and answers
        ``pi(f_z(x)) + b`` (002 eq. 2). ``"hinge"``: kernel SVM without intercept
        (000 Sec. 5.2), two classes; ``predict`` returns the class of the sign of
        ``f_z(x) + b``, :meth:`decision_function` the noisy value itself.
    alpha : float or "auto", default="auto"
        L2 regularisation strength: the objective is
        ``(1/m) sum loss + (alpha/2) ||f||_K^2``, so ``alpha`` is Chaudhuri et
        al.'s ``Lambda`` and Nie & Wang's ``lambda`` is ``alpha/2`` (paper
        note 7). The noise shrinks like ``1 / (alpha m)``
        (hinge) or ``alpha^(-3/2) / m`` (least squares); the shrinkage toward 0
        grows with alpha. ``"auto"`` balances the two from the public ``m`` and
        ``epsilon_per_query`` only, never the data: ``alpha = C (m epsilon_per_query)^(-p)``,
        ``p = 1/2`` for least squares (002 Thm 3), ``2/3`` for the hinge, ``C`` fitted
        against the true function on synthetic data
        (:func:`dperm.privacy.alpha.prediction_default_alpha`); the value used is
        ``alpha_``. The old default 0.1 shrank least-squares answers to about a
        quarter of the truth on that synthetic data (docs/defaults_classifiers.md). On
        real tables both shrink them much more (slope on the truth 0.00-0.27; the model
        has no intercept): least squares here is a weak regressor
        (``benchmarks/predictor_evaluation.py``, docs/design/prediction.md).
    y_bound : float, default=1.0
        ``M``, a public bound on ``|y|`` (least squares only; ignored for the hinge).
    max_iter : int, default=1000
        Iteration budget of the hinge solver's fast methods (at least 1,000);
        a proven method finishes a solve they leave uncertified.
    accountant : dperm.privacy.accounting.BudgetAccountant or None, default=None
        A shared budget to spend from as well: every batch is checked against
        both ``epsilon_total`` and this accountant, and recorded in both.
    random_state : None, int or numpy Generator, default=None
        ``None`` draws every noise bit from the OS CSPRNG (:mod:`dperm.randomness`),
        as real use must. A seed is for testing only: whoever knows it can subtract the noise.
    solver : {"auto", "exact", "features"}, default="auto"
        ``"exact"``: the kernel ERM through the ``m x m`` Gram matrix (memory
        about 4 (squared) or 6 (hinge) ``m x m`` float64 matrices, time
        ``O(m^3)``); 000 Thm 2 and Prop. 1 for the Gaussian or Laplacian
        kernel. ``"features"``: the kernel ERM for the finite-rank kernel
        ``k_z(x, x') = z(x) . z(x')``, ``z(x) = D^(-1/2) [cos(W x), sin(W x)]``
        with ``D = n_components`` frequencies drawn from the kernel's spectral
        distribution with the public ``feature_seed``; 000 Thm 2 and Prop. 1
        for ``k_z`` (``kappa = 1`` exactly), the same ``B_Delta`` and noise.
        It answers with the ``k_z`` model, which approximates the exact one
        as ``D`` grows. ``"auto"``: ``"exact"`` if its estimated memory fits
        ``max_memory_gb``, else ``"features"`` (the choice depends only on
        public inputs and is recorded in ``privacy_.solver``).
    n_components : int, default=256
        ``D``, the number of random frequencies of the features path (``2 D``
        features). Memory ``O(D^2)`` (squared) or ``O(m D)`` (hinge).
    feature_seed : int, default=0
        Public seed of the frequencies (recorded in ``privacy_``). They are
        drawn from their own stream, never from ``random_state``'s, and never
        from the data.
    max_memory_gb : float, default=2.0
        Cap on the estimated peak memory of the fit. A path whose estimate
        exceeds it is refused with a ``ValueError`` stating the estimate and
        the alternatives (``solver="auto"`` switches to the features path
        instead); nothing is allocated and nothing is spent.
    classes : None or list of two labels, default=None
        Hinge only: the public label set; ``predict`` answers with these
        labels, so they must not come from the data. A training label outside
        it raises ValueError; a label no row carries is fine. ``None`` reads
        the two labels from y, which the guarantee does not cover (a
        :class:`~dperm.PrivacyLeakWarning` says so).

    Attributes
    ----------
    n_features_in_ : int
    alpha_ : float
        The regularisation strength used (``alpha``, or the public rule's value).
    classes_ : ndarray of shape (2,)
        Hinge only: ``classes`` sorted, or the two labels of y without it.
    privacy_ : PredictionPrivacyRecord
        The calibration: ``sensitivity`` is ``B_Delta``, ``noise_scale`` the
        discrete Laplace scale per answer.
    queries_answered_ : int
        Answers released so far.
    epsilon_spent_ : float
        ``queries_answered_ * epsilon_per_query``.
    budget_remaining_ : float
        Epsilon left for answers (the smaller of this predictor's and the
        shared accountant's remaining budget).
    answers_remaining_ : int
        How many more answers fit.

    Notes
    -----
    Refitting starts a new budget of ``epsilon_total`` for answers about the
    new training set; refitting on the same data composes with the earlier
    answers (pass a shared ``accountant`` to keep count). There is
    deliberately no ``score`` method: every evaluation spends budget.
    The exact path needs memory ``O(m^2)`` (the Gram matrix) and time
    ``O(m^3)``: at the default ``max_memory_gb=2`` ``"auto"`` uses it up to
    about m = 7,900 (squared) or 6,400 (hinge) rows and the features path
    above. Measured times and memory: ``benchmarks/prediction_scale.py``.

    ``predict`` and ``decision_function`` may be called from many threads:
    each batch is checked and spent under a lock before anything is computed,
    so the answers together never exceed the budget. A fitted predictor
    refuses to be pickled or copied (``TypeError``); :func:`sklearn.base.clone`
    still works, since it copies the parameters only.

    References
    ----------
    Nie & Wang, "Perturbation of convex risk minimization and its application
    in differential private learning algorithms", J. Inequal. Appl. (2017),
    Lemma 1, Thm 2, Prop. 1, Sec. 5. Nie & Wang, "Error Analysis and Variable
    Selection for Differential Private Learning Algorithm", J. Appl. Math.
    Phys. 5 (2017), eq. 2 and Lemma 2.

    Examples
    --------
    >>> import numpy as np
    >>> from dperm.prediction import PrivatePredictor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(200, 2))
    >>> y = np.sin(2 * X[:, 0]) * 0.5
    >>> predictor = PrivatePredictor(epsilon_total=1.0, epsilon_per_query=0.1, alpha=1.0,
    ...                              random_state=0).fit(X, y)
    >>> predictor.predict(X[:3]).shape, predictor.queries_answered_, predictor.answers_remaining_
    ((3,), 3, 7)
    """

    def __init__(
        self,
        epsilon_total,
        epsilon_per_query,
        *,
        kernel="rbf",
        gamma=1.0,
        loss="squared",
        alpha="auto",
        y_bound=1.0,
        max_iter=1000,
        accountant=None,
        random_state=None,
        classes=None,
        solver="auto",
        n_components=DEFAULT_N_COMPONENTS,
        feature_seed=0,
        max_memory_gb=DEFAULT_MAX_MEMORY_GB,
    ):
        self.epsilon_total = epsilon_total
        self.epsilon_per_query = epsilon_per_query
        self.kernel = kernel
        self.gamma = gamma
        self.loss = loss
        self.alpha = alpha
        self.y_bound = y_bound
        self.max_iter = max_iter
        self.accountant = accountant
        self.random_state = random_state
        self.classes = classes
        self.solver = solver
        self.n_components = n_components
        self.feature_seed = feature_seed
        self.max_memory_gb = max_memory_gb

    _parameter_constraints: dict = {
        "epsilon_total": [Interval(Real, 0, math.inf, closed="neither")],
        "epsilon_per_query": [Interval(Real, 0, math.inf, closed="neither")],
        "kernel": [StrOptions(set(KERNEL_NAMES))],
        "gamma": [Interval(Real, 0, math.inf, closed="neither")],
        "loss": [StrOptions(set(PREDICTION_LOSSES))],
        "alpha": [Interval(Real, 0, math.inf, closed="neither"), StrOptions({"auto"})],
        "y_bound": [Interval(Real, 0, math.inf, closed="neither"), None],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "accountant": [BudgetAccountant, None],
        "random_state": "no_validation",  # None, int or Generator: check_random_state
        "classes": ["array-like", None],
        "solver": [StrOptions(set(PREDICTION_SOLVERS))],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "feature_seed": [Interval(Integral, 0, _MAX_FEATURE_SEED, closed="both")],
        "max_memory_gb": [Interval(Real, 0, math.inf, closed="neither")],
    }

    # -- parameter checks -------------------------------------------------
    def _check_params(self) -> dict:
        """Each parameter against :attr:`_parameter_constraints`, then the checks across parameters."""
        self._validate_params()
        if self.epsilon_per_query > self.epsilon_total:
            raise ValueError(
                f"epsilon_per_query={self.epsilon_per_query:g} exceeds epsilon_total="
                f"{self.epsilon_total:g}: not even one answer fits. Raise epsilon_total or lower "
                "epsilon_per_query."
            )
        regression = LOSSES[self.loss].kind == "residual"
        if regression and self.classes is not None:
            margin = " or ".join(f"loss={name!r}" for name in PREDICTION_LOSSES if LOSSES[name].kind == "margin")
            raise ValueError(f"classes is for {margin}; leave classes=None with loss={self.loss!r}.")
        if "y_bound" in LOSSES[self.loss].params and self.y_bound is None:
            raise ValueError(f"loss={self.loss!r} needs y_bound, a public bound M on |y|; got None.")
        y_bound = float(self.y_bound) if "y_bound" in LOSSES[self.loss].params else None
        return {
            "epsilon_total": float(self.epsilon_total),
            "epsilon_per_query": float(self.epsilon_per_query),
            "gamma": float(self.gamma),
            "alpha": None if self.alpha == "auto" else float(self.alpha),  # "auto": from public m in fit
            "y_bound": y_bound,
            "max_iter": int(self.max_iter),
            "n_components": int(self.n_components),
            "max_memory_gb": float(self.max_memory_gb),
            "classes": None if regression else check_classes(self.classes, n_classes=2),
            "loss": get_loss(self.loss, y_bound=y_bound),
        }

    # -- fitting ----------------------------------------------------------
    def fit(self, X, y, sample_weight=None):
        """Train the exact kernel model and open a fresh answer budget of ``epsilon_total``.

        Nothing is released and nothing is spent: the model stays in private
        attributes. The solve always certifies the radius the noise is
        calibrated for (:mod:`dperm.solvers.proven`). Raises ``ValueError``
        (before any large allocation) if the chosen path's estimated memory
        exceeds ``max_memory_gb``.

        Parameters
        ----------
        X : array-like of shape (m, n_features)
            Finite values; no bound is needed (``K(x, x) = 1``).
        y : array-like of shape (m,)
            Real targets (squared; clipped to ``[-y_bound, y_bound]`` with a
            :class:`~dperm.DataClippingWarning`) or labels from ``classes``
            (hinge; without ``classes``, two labels read from y, warned).
        sample_weight : None
            Not supported (ValueError): the prediction mechanisms' sensitivity (Dwork &
            Feldman 2018) is derived for the unweighted kernel model and its solvers are
            unweighted.

        Returns
        -------
        self
        """
        refuse_sample_weight(self, sample_weight, "its answer sensitivity and its exact and "
                             "random-feature kernel solvers are derived for unweighted rows.")
        refuse_dask_input(self, X, y)
        params = self._check_params()
        loss = params["loss"]
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=loss.kind == "residual",
                             ensure_min_samples=2)
        check_budget_for_data(params["epsilon_total"], 0.0, X.shape[0])  # pure: warns if weak
        # Before anything m x m is allocated (and nothing is ever spent in fit): the path and
        # its estimated cost, from public inputs only.
        plan = plan_prediction_solver(self.solver, loss, X.shape[0], X.shape[1],
                                      params["n_components"], params["max_memory_gb"])
        y = self._prepare_labels(y, params)
        if params["alpha"] is None:  # public m and epsilon_per_query only, never the data
            params["alpha"] = prediction_default_alpha(X.shape[0], params["epsilon_per_query"], self.loss)
        self.alpha_ = params["alpha"]
        fit = fit_private_prediction(
            X, y, loss=loss, kernel=self.kernel, gamma=params["gamma"], alpha=params["alpha"],
            max_iter=params["max_iter"],
            epsilon_per_query=params["epsilon_per_query"], solver=plan.solver,
            n_components=params["n_components"], feature_seed=self.feature_seed,
        )
        self._exact_model = fit.model  # secret: the certified model (rows and/or coefficients)
        self._loss = loss
        self._noise = fit.calibration.noise
        self._noise_rng = check_random_state(self.random_state)
        self._own_budget = BudgetAccountant(epsilon=params["epsilon_total"])
        self._n_answered = 0
        # Serialises check-and-spend across both budgets, and the noise generator.
        self._lock = threading.Lock()
        self.privacy_ = prediction_record(
            fit.calibration, kernel=self.kernel, kernel_gamma=params["gamma"], loss=self.loss,
            alpha=params["alpha"], y_bound=params["y_bound"], n_samples=X.shape[0],
            epsilon_total=params["epsilon_total"],
            label_set_public=loss.kind == "residual" or params["classes"] is not None,
            solver=plan.solver, n_components=params["n_components"],
            feature_seed=self.feature_seed, max_memory_gb=params["max_memory_gb"],
        )
        return self

    def _prepare_labels(self, y, params):
        """Clip least-squares labels to ``[-M, M]`` (per record); map two classes to -1/+1 for the hinge."""
        if params["loss"].kind == "residual":
            y, n_clipped = clip_labels_to_bound(np.asarray(y, dtype=np.float64), params["y_bound"])
            warn_clipped_labels(n_clipped, params["y_bound"])
            return y
        check_classification_targets(y)
        observed = np.unique(y)
        if params["classes"] is None and observed.size > 2:
            raise ValueError(
                f"loss={self.loss!r} needs exactly two classes; y has {observed.size} ({observed.tolist()})."
            )
        classes = resolve_label_set(params["classes"], y).classes
        self.classes_ = classes
        return np.where(y == classes[1], 1.0, -1.0)

    # -- the budget -------------------------------------------------------
    def _spend(self, n_answers: int) -> None:
        """Spend ``n_answers * epsilon_per_query`` from both budgets, or raise and spend nothing.

        Atomic: the own budget is only ever spent under ``self._lock``, so its
        check still holds when it is spent; the shared accountant's
        :meth:`~dperm.privacy.accounting.BudgetAccountant.spend` is atomic on its own
        (other estimators may spend from it meanwhile) and comes second, so a
        refusal by either budget leaves both untouched.
        """
        cost = n_answers * self.privacy_.epsilon_per_query
        label = (f"{type(self).__name__}: {n_answers} answer(s) x "
                 f"epsilon_per_query={self.privacy_.epsilon_per_query:g}")
        with self._lock:
            self._own_budget.check(cost, 0.0, label)
            if self.accountant is not None:
                self.accountant.spend(cost, 0.0, label)
            self._own_budget.spend(cost, 0.0, label)
            self._n_answered += n_answers

    @property
    def queries_answered_(self) -> int:
        """Answers released so far."""
        check_is_fitted(self, "privacy_")
        return self._n_answered

    @property
    def epsilon_spent_(self) -> float:
        """Epsilon spent on answers from this predictor's budget."""
        check_is_fitted(self, "privacy_")
        return self._own_budget.spent[0]

    @property
    def budget_remaining_(self) -> float:
        """Epsilon left for answers: the smaller of this predictor's and the shared accountant's."""
        check_is_fitted(self, "privacy_")
        remaining = self._own_budget.remaining[0]
        if self.accountant is not None:
            remaining = min(remaining, self.accountant.remaining[0])
        return remaining

    @property
    def answers_remaining_(self) -> int:
        """How many more answers of ``epsilon_per_query`` fit in :attr:`budget_remaining_`."""
        return int(math.floor((self.budget_remaining_ + TOLERANCE) / self.privacy_.epsilon_per_query))

    # -- answering --------------------------------------------------------
    def _noisy_values(self, X) -> np.ndarray:
        """Validate the queries, spend for all of them, then compute and perturb each value."""
        check_is_fitted(self, "privacy_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        self._spend(X.shape[0])  # before anything about the private model is computed
        values = self._exact_model.values(X)
        with self._lock:  # one thread at a time draws from the noise generator
            return answer_queries(values, self._noise, self._noise_rng)

    def predict(self, X):
        """Answer each row of X privately; costs ``len(X) * epsilon_per_query``.

        Least squares: ``pi(f_z(x)) + b`` (002 eq. 2), not clipped again (the
        noise must stay unbounded for 000 Lemma 1). Hinge: the class whose sign
        matches ``f_z(x) + b`` (post-processing of one answer).

        Parameters
        ----------
        X : array-like of shape (k, n_features_in_)
            The queries. Invalid queries raise ValueError and cost nothing.

        Returns
        -------
        ndarray of shape (k,)

        Raises
        ------
        BudgetExceededError
            If ``k`` more answers do not fit in the budget: nothing is answered
            and nothing is spent.
        """
        noisy = self._noisy_values(X)
        if self._loss.kind == "margin":
            return self.classes_[(noisy > 0.0).astype(int)]
        return noisy

    def decision_function(self, X):
        """Hinge only: the noisy values ``f_z(x) + b``; costs ``len(X) * epsilon_per_query``."""
        if LOSSES[self.loss].kind != "margin":
            raise ValueError("decision_function is for loss='hinge'; use predict for least squares.")
        return self._noisy_values(X)

    def privacy_summary(self) -> str:
        """The calibration, the answers released so far and the budget left."""
        check_is_fitted(self, "privacy_")
        lines = [
            self.privacy_.summary(),
            f"Answered {self.queries_answered_} queries: epsilon spent {self.epsilon_spent_:.6g} "
            f"of {self.privacy_.epsilon_total:g}; remaining {self.budget_remaining_:.6g} "
            f"({self.answers_remaining_} answers).",
        ]
        if self.accountant is not None:
            lines.append("Shared accountant:\n" + self.accountant.summary())
        return "\n".join(lines)

    # -- persistence ------------------------------------------------------
    def __getstate__(self):
        """Refuse to pickle or copy a fitted predictor; an unfitted one is only parameters.

        ``pickle``, ``joblib`` and :func:`copy.deepcopy` all go through here.
        :func:`sklearn.base.clone` does not (it copies ``get_params()``).
        """
        if hasattr(self, "_exact_model"):
            raise TypeError(
                "a fitted PrivatePredictor cannot be pickled or copied: it holds the training "
                "rows, the exact kernel model and its unspent answer budget, so a copy would "
                "publish the training data and answer from a second, fresh budget. Keep it in "
                "the data holder's process and release only its answers; to publish a model, "
                "use PrivateLeastSquares or PrivateKernelSVC (vector output perturbation)."
            )
        return super().__getstate__()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        return tags
