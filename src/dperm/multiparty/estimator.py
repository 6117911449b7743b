"""scikit-learn style front ends of the multiparty protocols.

``fit(shards)`` takes one ``(X_k, y_k)`` pair per party. In process, the
estimator plays every role: it builds the parties, the network and the
secure sum, and runs the coordinator, which only sees secure sums. The
estimators are thin: validate, wire, record.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.linear_model._base import LinearClassifierMixin
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_X_y

from dperm.catalog import loss_names
from dperm.cloning import BudgetOnCloneMixin
from dperm.losses import get_loss
from dperm.multiparty.baselines import (
    calibrate_local_aggregation,
    local_aggregation,
    local_aggregation_clipping_range,
)
from dperm.multiparty.newton import (
    InProcessNewtonNetwork,
    NewtonParty,
    newton_guarantee,
    newton_summary,
    private_newton,
)
from dperm.multiparty.newton_privacy import DEFAULT_GRADIENT_SHARE, calibrate_newton
from dperm.multiparty.privacy import calibrate_psgd
from dperm.multiparty.protocol import (
    InProcessNetwork,
    Party,
    psgd,
    psgd_clipping_range,
    resolve_step_size,
)
from dperm.multiparty.secure_sum import MaskedSecureSum, secure_sum_engine
from dperm.privacy.accounting import BudgetAccountant, check_budget_left, spend_before_fitting
from dperm.privacy.collusion import DEFAULT_COLLUSION_THRESHOLD
from dperm.privacy.labels import check_classes, resolve_label_set, warn_label_set_from_data
from dperm.privacy.newton import collusion_guarantee, view_guarantee
from dperm.privacy.psgd import COORDINATOR_ACCOUNTANTS, PartyFloor, accepting_floor
from dperm.validation import check_budget_for_data, check_random_state

__all__ = [
    "LocalAggregationClassifier", "MULTIPARTY_LOSSES", "NewtonClassifier", "PSGDClassifier",
    "newton_record",
]

#: Losses the multiparty estimators accept: twice differentiable and Lipschitz (004 Thm 4.1).
MULTIPARTY_LOSSES = loss_names(multiparty=True)

#: A finite number > 0 (the closed-open ends refuse 0, inf and nan).
_POSITIVE = Interval(Real, 0, math.inf, closed="neither")
#: A number in the open interval (0, 1): delta > 0 of an (epsilon, delta) guarantee, a share.
_OPEN_UNIT = Interval(Real, 0, 1, closed="neither")
_ROUNDS = Interval(Integral, 1, None, closed="left")
#: A collusion threshold ``t >= 0`` (``t <= K - 1`` is checked when the shards give ``K``).
_COLLUSION = Interval(Integral, 0, None, closed="left")
#: A secure-sum engine (:class:`~dperm.multiparty.secure_sum.SecureSum` or any object with its ``sum``).
_ENGINE = HasMethods(["sum"])
#: Parameters every multiparty estimator declares (scikit-learn's ``_parameter_constraints``).
_COMMON_CONSTRAINTS = {
    "epsilon": [_POSITIVE],
    "alpha": [_POSITIVE],
    "data_norm": [_POSITIVE],
    "loss": [StrOptions(set(MULTIPARTY_LOSSES))],
    "h": [_POSITIVE],
    "random_state": ["random_state", np.random.Generator],
    "accountant": [None, BudgetAccountant],
    "classes": ["array-like", None],
}


def check_shards(shards, classes=None):
    """Validate a list of ``(X_k, y_k)`` shards; return float arrays, classes and ``d``.

    ``classes`` is the checked public label set (:func:`dperm.privacy.labels.check_classes`);
    without it the two classes are read from the labels, with a ``PrivacyLeakWarning``
    attributed to the user's line.
    Raises ValueError naming the problem: fewer than 2 shards, a shard that
    is not a pair, an empty shard, shards with different numbers of features,
    a label outside ``classes``, or without ``classes`` a single class overall
    or more than two classes.
    """
    if isinstance(shards, (str, bytes)) or not hasattr(shards, "__len__"):
        raise ValueError(
            f"shards must be a list of (X, y) pairs, one per party; got {type(shards).__name__}."
        )
    if len(shards) < 2:
        raise ValueError(
            f"shards must hold at least 2 parties' (X, y) pairs; got {len(shards)}. For a single "
            "party use PrivateLogisticRegression(mechanism='gaussian_objective')."
        )
    arrays = []
    for index, shard in enumerate(shards):
        if not isinstance(shard, (tuple, list)) or len(shard) != 2:
            raise ValueError(f"shard {index} must be an (X, y) pair; got {type(shard).__name__}.")
        X, y = shard
        if np.shape(y)[:1] == (0,) or np.shape(X)[:1] == (0,):
            raise ValueError(f"shard {index} is empty: every party needs at least one row.")
        try:
            X, y = check_X_y(X, y, dtype=np.float64, ensure_min_samples=1)
            check_classification_targets(y)
        except ValueError as error:
            raise ValueError(f"shard {index}: {error}") from None
        arrays.append((X, y))
    widths = [X.shape[1] for X, _ in arrays]
    if len(set(widths)) != 1:
        raise ValueError(f"shards have different numbers of features: {widths} (one per shard).")
    labels = np.concatenate([y for _, y in arrays])
    if classes is not None:
        return arrays, resolve_label_set(classes, labels).classes, widths[0]
    classes = np.unique(labels)
    if classes.size != 2:
        kind = "a single class" if classes.size < 2 else f"{classes.size} classes"
        raise ValueError(
            f"the labels over all shards have {kind} ({classes.tolist()[:5]}); the multiparty "
            "classifiers are binary and need exactly two classes overall."
        )
    warn_label_set_from_data()
    return arrays, classes, widths[0]


class _MultipartyClassifierBase(BudgetOnCloneMixin, LinearClassifierMixin, BaseEstimator):
    """The one fit skeleton of the multiparty estimators (:meth:`fit`); a protocol fills in its steps.

    A subclass declares its parameters (``_parameter_constraints``) and
    gives ``_calibrate`` (public inputs only), ``_floor`` (what each
    in-process party accepts), ``_secure_sum`` and ``_run`` (the protocol
    over in-process parties, returning ``(coef, privacy record)``);
    optionally ``_delta`` (0 for pure epsilon-DP), ``_check_options`` and
    ``_party_class``.
    """

    _parameter_constraints: dict = _COMMON_CONSTRAINTS

    def _check_params(self):
        """Every declared constraint (``_validate_params``), first thing in a fit; ``(epsilon, alpha, R, loss)``."""
        self._validate_params()
        return float(self.epsilon), float(self.alpha), float(self.data_norm), get_loss(self.loss, h=self.h)

    def _spend_label(self):
        return f"{type(self).__name__}(loss={self.loss!r})"

    def fit(self, shards, y=None):
        """Run the protocol over the parties' shards: the one fit skeleton of the multiparty estimators.

        Check the parameters, the budget and the shards (against the public
        label set ``classes``); calibrate from public inputs only
        (:meth:`_calibrate`); the floor each in-process party checks the
        calibration against (:meth:`_floor`); the secure sum
        (:meth:`_secure_sum`) and what the constraints cannot say
        (:meth:`_check_options`); spend ``(epsilon, delta)``; only then build
        one party per shard and run the protocol (:meth:`_run`); store the
        model and its record.

        Parameters
        ----------
        shards : list of (X_k, y_k)
            At least two, with the same number of features and two classes overall.
        y : ignored

        Returns
        -------
        self
        """
        epsilon, alpha, data_norm, loss = self._check_params()
        delta = self._delta()
        budget = (epsilon, delta, self._spend_label())
        check_budget_left(self.accountant, *budget)
        # the warning of a label set read from the data points at the caller of fit
        arrays, classes, n_features = check_shards(shards, check_classes(self.classes, n_classes=2))
        sizes = [X.shape[0] for X, _ in arrays]
        check_budget_for_data(epsilon, delta, sum(sizes))  # public n
        rng = check_random_state(self.random_state)
        party_rngs = rng.spawn(len(arrays))
        calibration = self._calibrate(epsilon, delta, alpha, sizes, n_features, loss, data_norm)
        floor = self._floor(calibration, epsilon, delta)
        secure_sum = self._secure_sum(calibration, sizes, loss, rng)
        self._check_options(calibration)
        spend_before_fitting(self.accountant, *budget)  # every check passed; no party set up yet
        parties = [
            self._party_class(X, np.where(y == classes[1], 1.0, -1.0), loss=loss, data_norm=data_norm,
                              party_id=index, random_state=party_rng, max_epsilon=floor.max_epsilon,
                              max_delta=floor.max_delta, max_rounds=floor.max_rounds,
                              min_collusion_threshold=floor.min_collusion_threshold)
            for index, ((X, y), party_rng) in enumerate(zip(arrays, party_rngs))
        ]
        coef, record = self._run(parties, secure_sum, calibration, rng)
        self._set_model(coef, classes, n_features)
        self.privacy_ = record
        return self

    #: The party of the protocol, one per shard.
    _party_class = Party

    def _delta(self) -> float:
        """The delta the fit spends (pure epsilon-DP estimators: 0)."""
        return float(self.delta)

    def _engine(self, rng, *encoding, **named):
        """``secure_sum``: a given engine as it is, else the named one (default: masked) built with the encoding."""
        if self.secure_sum is None:
            return MaskedSecureSum(*encoding, **named, random_state=rng.spawn(1)[0])
        if isinstance(self.secure_sum, str):  # "flower", the only name _parameter_constraints lets through
            return secure_sum_engine(self.secure_sum)(*encoding, **named)
        return self.secure_sum

    def _check_options(self, calibration) -> None:
        """What ``_parameter_constraints`` cannot say, checked before the budget is spent (default: nothing)."""

    def _set_model(self, coef, classes, n_features):
        self.classes_ = classes
        self.coef_ = np.asarray(coef, dtype=float).reshape(1, -1)
        self.intercept_ = np.zeros(1)
        self.n_features_in_ = n_features

    @available_if(lambda self: self.loss == "logistic")
    def predict_proba(self, X):
        """Class probabilities with the logistic loss: ``sigmoid(w.x)`` for ``classes_[1]``.

        Only for ``loss="logistic"``, whose minimiser models ``P(y = +1 | x)``
        (the Huber loss gives no probabilities).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_in_)

        Returns
        -------
        proba : ndarray of shape (n_samples, 2)
        """
        return self._predict_proba_lr(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None
        return tags


class PSGDClassifier(_MultipartyClassifierBase):
    """Multiparty private SGD (Rajkumar & Agarwal 2012, Alg. 1): a linear binary classifier.

    ``K`` parties each hold a shard; a coordinator runs SGD on the pooled
    objective ``J(w) = (1/N) sum_i phi(y_i w.x_i) + alpha/2 ||w||^2`` using,
    each round, only the secure sum of the parties' noisy gradients
    (004 Procs. 2-3). No intercept is fitted: append a constant feature to
    every shard (it counts toward ``data_norm``) if you need one.

    What is proven for the released ``coef_`` (``privacy_.epsilon``,
    ``privacy_.delta``, the headline of ``privacy_``): it is computed from the
    coordinator's view (the ``n_rounds`` secure sums) and public constants,
    so it has the view's guarantee for the rounds run (paper note 13).
    With 004's scheme that is the composition of ``n_rounds`` rounds of
    ``round_epsilon`` (basic or advanced), which grows with ``n_rounds``;
    004 Thm 4.2's ``(epsilon, delta)`` is proven only for the point PSGD
    converges to and is recorded as a note. With ``coordinator_dp=True`` it
    is ``(epsilon, delta)`` for the finite ``n_rounds``.

    Parameters
    ----------
    epsilon : float, default=1.0
        > 0. 004's scheme: the target the one-time noise is calibrated for
        (004 Thm 4.2's guarantee of the limit point), also the default
        ``round_epsilon``; ``coordinator_dp``: the released model's epsilon.
    delta : float, default=1e-5
        In (0, 1): the matching delta (and the default ``composition_slack``).
    alpha : float, default=0.01
        ``lambda``.
    n_rounds : int, default=1000
        ``T``, the number of gradient rounds (secure sums).
    data_norm : float, default=1.0
        Public bound ``R`` on a row's L2 norm; longer rows are scaled onto it
        by their party (``DataClippingWarning``).
    loss : {"logistic", "huber"}, default="logistic"
    h : float, default=0.5
        Width of the Huber loss.
    step_size : "auto" or callable, default="auto"
        ``z_t``; "auto" is ``1 / ((alpha + Delta) (t + t0))`` (Robbins-Monro).
    round_epsilon : float, optional
        Per-round guarantee of the sums the coordinator sees; defaults to
        ``epsilon`` as in 004 Proc. 3.
    composition_slack : float in (0, 1), optional
        ``delta'`` of the advanced composition of the coordinator's view;
        defaults to ``delta``.
    coordinator_dp : bool, default=False
        Beyond 004 (paper note 13). False: the paper's scheme, whose released model
        is proven ``n_rounds * round_epsilon``-DP (or the advanced-composition
        bound) for a finite ``n_rounds``; Thm 4.2's (epsilon, delta) holds for
        the limit point only.
        True: no one-time noise; each round's noise is Gaussian, calibrated
        with Google's dp-accounting so that the coordinator's *whole view*
        over ``n_rounds`` rounds is (epsilon, delta)-DP, and the released model
        is too (post-processing). Needs ``pip install 'dperm[multiparty]'``;
        ``round_epsilon`` and ``composition_slack`` must be None.
        See :func:`dperm.privacy.psgd.calibrate_coordinator_gaussian`.
    coordinator_accountant : {"pld", "rdp"}, default="pld"
        dp-accounting's accountant for ``coordinator_dp``: privacy loss
        distributions (tight) or Renyi DP (looser, more noise).
    collusion_threshold : int in [0, K - 1], default=1
        ``t``: each party's Gaussian noise share (the one-time ``eta^k``;
        ``coordinator_dp``'s ``rho_t^k``) has ``1 / (K - t)`` of the calibrated
        variance, so the guarantee holds when the coordinator also knows the
        noise of up to ``t`` parties (:mod:`dperm.privacy.collusion`). 0 is
        004's split (no collusion tolerated); ``K - 1`` makes every share carry
        the whole noise. 004's per-round discrete Laplace noise is never split.
    secure_sum : dperm.multiparty.SecureSum or "flower", optional
        Defaults to an in-process :class:`~dperm.multiparty.MaskedSecureSum`
        whose clipping range is set from public constants. ``"flower"``:
        :class:`~dperm.multiparty.flower.engine.FlowerSecureSum` (Flower's
        SecAgg+, ``pip install 'dperm[multiparty]'``) with the same range.
    random_state : None, int or numpy Generator, default=None
        ``None`` (every noise bit from the OS CSPRNG, :mod:`dperm.randomness`) for
        real use; a seed for tests only.
    accountant : dperm.privacy.accounting.BudgetAccountant, optional
        Charged ``(epsilon, delta)`` after every parameter and shard check and
        the calibration, before any party is set up or any round runs.
    classes : None or list of two labels, default=None
        The public label set; ``classes_[1]`` is the positive class. A label
        outside it raises ValueError. ``None`` reads the two labels from the
        shards, which the guarantee does not cover (``PrivacyLeakWarning``).

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features)
    intercept_ : ndarray of shape (1,), zeros
    classes_ : ndarray of shape (2,)
    n_features_in_ : int
    privacy_ : dperm.privacy.multiparty_record.PSGDPrivacyRecord
        The released model's proven guarantee (the coordinator's view over
        ``n_rounds``, paper note 13) and the public numbers behind it; no count
        computed from the rows.

    Notes
    -----
    In process the estimator plays every role; each party gets the floor
    that accepts exactly this calibration
    (:func:`~dperm.privacy.psgd.accepting_floor`) and still recomputes
    and checks it. A row longer than ``data_norm`` is scaled onto it with a
    ``DataClippingWarning`` from its party; the count is not released.

    References
    ----------
    Rajkumar & Agarwal, "A Differentially Private SGD Algorithm for Multiparty
    Classification", AISTATS 2012, Alg. 1, Procs. 2-3, Thm 4.2.
    """

    _parameter_constraints: dict = {
        **_COMMON_CONSTRAINTS,
        "delta": [_OPEN_UNIT],
        "n_rounds": [_ROUNDS],
        "step_size": [StrOptions({"auto"}), callable],
        "round_epsilon": [None, _POSITIVE],
        "composition_slack": [None, _OPEN_UNIT],
        "coordinator_dp": ["boolean"],
        "coordinator_accountant": [StrOptions(set(COORDINATOR_ACCOUNTANTS))],
        "collusion_threshold": [_COLLUSION],
        "secure_sum": [None, StrOptions({"flower"}), _ENGINE],
    }

    def __init__(self, *, epsilon=1.0, delta=1e-5, alpha=0.01, n_rounds=1000, data_norm=1.0,
                 loss="logistic", h=0.5, step_size="auto", round_epsilon=None,
                 composition_slack=None, coordinator_dp=False, coordinator_accountant="pld",
                 collusion_threshold=DEFAULT_COLLUSION_THRESHOLD, secure_sum=None, random_state=None,
                 accountant=None, classes=None):
        self.epsilon = epsilon
        self.delta = delta
        self.alpha = alpha
        self.n_rounds = n_rounds
        self.data_norm = data_norm
        self.loss = loss
        self.h = h
        self.step_size = step_size
        self.round_epsilon = round_epsilon
        self.composition_slack = composition_slack
        self.coordinator_dp = coordinator_dp
        self.coordinator_accountant = coordinator_accountant
        self.collusion_threshold = collusion_threshold
        self.secure_sum = secure_sum
        self.random_state = random_state
        self.accountant = accountant
        self.classes = classes

    def _calibrate(self, epsilon, delta, alpha, sizes, n_features, loss, data_norm):
        """004 Alg. 1, Procs. 2-3 from public inputs (:func:`~dperm.multiparty.privacy.calibrate_psgd`)."""
        return calibrate_psgd(
            epsilon=epsilon, delta=delta, alpha=alpha, n_samples=sum(sizes), n_parties=len(sizes),
            n_features=n_features, n_rounds=int(self.n_rounds), loss=loss, data_norm=data_norm,
            round_epsilon=self.round_epsilon, coordinator_dp=bool(self.coordinator_dp),
            coordinator_accountant=self.coordinator_accountant, collusion_threshold=self.collusion_threshold,
        )

    def _floor(self, calibration, epsilon, delta):
        """The floor that accepts exactly this calibration (:func:`~dperm.privacy.psgd.accepting_floor`)."""
        return accepting_floor(calibration, self.composition_slack)

    def _secure_sum(self, calibration, sizes, loss, rng):
        """The engine, clipping from public constants (:func:`~dperm.multiparty.protocol.psgd_clipping_range`)."""
        return self._engine(rng, clipping_range=psgd_clipping_range(calibration, sizes))

    def _check_options(self, calibration):
        """What ``_parameter_constraints`` cannot say about ``step_size`` and ``composition_slack``.

        Checked before the budget is spent; :func:`~dperm.multiparty.protocol.psgd`
        checks them again when it runs.
        """
        resolve_step_size(self.step_size, calibration)
        if self.composition_slack is not None and calibration.coordinator_dp:
            raise ValueError(
                f"composition_slack={self.composition_slack!r} cannot be combined with "
                "coordinator_dp=True (the view is accounted by dp-accounting); leave it None."
            )

    def _run(self, parties, secure_sum, calibration, rng):
        """004 Alg. 1 over an in-process network; ``(w_T, its record)``."""
        result = psgd(InProcessNetwork(parties, secure_sum), calibration,
                      step_size=self.step_size, composition_slack=self.composition_slack)
        return result.coef, result.record


class LocalAggregationClassifier(_MultipartyClassifierBase):
    """Averaged local classifiers with output noise (Pathak et al. 2010; 004 eq. 5).

    Each party minimises its own ``J_k`` (004 eq. 4); the average
    ``(1/K) sum_k w_k`` is released with l2-Laplace noise calibrated to the
    sensitivity ``2 L R / (K n_min alpha)`` (paper note 12): pure epsilon-DP. The
    baseline PSGD is compared with in 004 Sec. 6. No intercept is fitted.

    Parameters
    ----------
    epsilon : float, default=1.0
    alpha : float, default=0.01
    data_norm : float, default=1.0
    loss : {"logistic", "huber"}, default="logistic"
    h : float, default=0.5
    tol : float, default=1e-8
        Gradient-norm tolerance of each local solve; the sensitivity includes
        ``2 tol / alpha`` per party (paper note 8).
    max_iter : int, default=1000
    secure_sum : dperm.multiparty.SecureSum, optional
        Defaults to an in-process masked secure sum with a clipping range set
        from public constants.
    random_state : None, int or numpy Generator, default=None
    accountant : dperm.privacy.accounting.BudgetAccountant, optional
        Charged ``(epsilon, 0)`` after every parameter and shard check and the
        calibration, before any party trains.
    classes : None or list of two labels, default=None
        As for :class:`PSGDClassifier`.

    Attributes
    ----------
    coef_, intercept_, classes_, n_features_in_
        As for :class:`PSGDClassifier`.
    privacy_ : dperm.privacy.multiparty_record.LocalAggregationPrivacyRecord
        Public numbers only: the tolerance and radius the noise is
        calibrated to, not what the local solves achieved.

    References
    ----------
    Pathak, Rane & Raj, "Multiparty Differential Privacy via Aggregation of
    Locally Trained Classifiers", NeurIPS 2010; 004 eqs. 4-5.
    """

    _parameter_constraints: dict = {
        **_COMMON_CONSTRAINTS,
        "tol": [_POSITIVE],
        "max_iter": [_ROUNDS],
        "secure_sum": [None, _ENGINE],
    }

    def __init__(self, *, epsilon=1.0, alpha=0.01, data_norm=1.0, loss="logistic", h=0.5,
                 tol=1e-8, max_iter=1000, secure_sum=None, random_state=None, accountant=None,
                 classes=None):
        self.epsilon = epsilon
        self.alpha = alpha
        self.data_norm = data_norm
        self.loss = loss
        self.h = h
        self.tol = tol
        self.max_iter = max_iter
        self.secure_sum = secure_sum
        self.random_state = random_state
        self.accountant = accountant
        self.classes = classes

    def _delta(self) -> float:
        return 0.0  # pure epsilon-DP (004 eq. 5)

    def _calibrate(self, epsilon, delta, alpha, sizes, n_features, loss, data_norm):
        """The output noise of 004 eq. 5 (:func:`~dperm.multiparty.baselines.calibrate_local_aggregation`)."""
        return calibrate_local_aggregation(
            epsilon=epsilon, alpha=alpha, n_samples_by_party=sizes, n_features=n_features, loss=loss,
            data_norm=data_norm, tol=float(self.tol),
        )

    def _floor(self, calibration, epsilon, delta):
        return PartyFloor(epsilon, 0.0, 1)  # one pure epsilon-DP release: the floor that accepts exactly it

    def _secure_sum(self, calibration, sizes, loss, rng):
        return self._engine(rng, clipping_range=local_aggregation_clipping_range(calibration, loss))

    def _run(self, parties, secure_sum, calibration, rng):
        """Each party's local minimiser, their noisy average (Pathak et al. 2010); ``(coef, record)``."""
        result = local_aggregation(parties, secure_sum, calibration, max_iter=int(self.max_iter), random_state=rng)
        return result.coef, result.record


class NewtonClassifier(_MultipartyClassifierBase):
    """Few-round multiparty learning: damped Newton on securely summed, noised gradients and Hessians.

    Beyond the papers (see :mod:`dperm.privacy.newton` for the
    proof). Each of ``n_rounds`` rounds, every party sends its gradient and
    Hessian sums at the current ``w_t`` (``d + d(d+1)/2`` numbers) rounded to
    a public grid with its share of exact discrete Gaussian noise; the secure
    sum of the replies is all the coordinator sees, and the noise shares sum
    to what makes that whole view ``(epsilon, delta)``-DP (Kairouz, Liu &
    Steinke 2021, Thm 1, composed in Renyi DP). The coordinator takes one
    damped Newton step per sum. Tens of rounds suffice where PSGD
    (:class:`PSGDClassifier`) needs hundreds to thousands.

    Parameters
    ----------
    epsilon : float, default=1.0
    delta : float in (0, 1), default=1e-5
    alpha : float, default=0.01
        L2 strength ``lambda`` of ``J(w) = (1/N) sum phi + lambda/2 ||w||^2``
        (the same default as the single-party estimators).
    n_rounds : int, default=10
        ``T``, the number of secure sums.
    data_norm : float, default=1.0
        Public bound ``R`` on a row's L2 norm (longer rows are scaled onto it).
    loss : {"logistic", "huber"}, default="logistic"
    h : float, default=0.5
        Huber width (``c = 1 / (2h)``).
    gradient_share : float in (0, 1), default=0.75
        Share of each round's Renyi budget spent on the gradient; the rest
        goes to the Hessian (which only sets the speed of the iteration).
    collusion_threshold : int in [0, K - 1], default=1
        ``t``: each party's discrete Gaussian share is sized so that the
        ``K - t`` honest shares alone make the view ``(epsilon, delta)``-DP
        (KLS 2021 Thm 1 with ``K - t`` parties), so the guarantee holds when
        the coordinator also knows the noise of up to ``t`` parties
        (:mod:`dperm.privacy.collusion`). 0 tolerates no collusion; ``K - 1``
        makes every share carry the whole noise.
    secure_sum : None, "flower" or SecureSum, default=None
        ``None``: dperm's in-process masked sum; ``"flower"``: Flower's
        SecAgg+ over an in-process grid (``dperm[multiparty]``). The encoding
        is always the calibration's.
    random_state : None, int or Generator, default=None
        For tests only; never stored in the result.
    accountant : dperm.privacy.accounting.BudgetAccountant, optional
    classes : array-like of 2 labels, optional
        The public label set (without it, read from the data with a ``PrivacyLeakWarning``).

    Attributes
    ----------
    coef_ : ndarray of shape (1, d)
    intercept_ : ndarray of shape (1,)
        Zero (no intercept; add a constant column to the data for one).
    classes_ : ndarray of shape (2,)
    n_features_in_ : int
    privacy_ : NewtonPrivacyRecord
    """

    _parameter_constraints: dict = {
        **_COMMON_CONSTRAINTS,
        "delta": [_OPEN_UNIT],
        "n_rounds": [_ROUNDS],
        "gradient_share": [_OPEN_UNIT],
        "collusion_threshold": [_COLLUSION],
        "secure_sum": [None, StrOptions({"flower"}), _ENGINE],
    }

    def __init__(self, *, epsilon=1.0, delta=1e-5, alpha=0.01, n_rounds=10, data_norm=1.0, loss="logistic",
                 h=0.5, gradient_share=DEFAULT_GRADIENT_SHARE, collusion_threshold=DEFAULT_COLLUSION_THRESHOLD,
                 secure_sum=None, random_state=None, accountant=None, classes=None):
        self.epsilon = epsilon
        self.delta = delta
        self.alpha = alpha
        self.n_rounds = n_rounds
        self.data_norm = data_norm
        self.loss = loss
        self.h = h
        self.gradient_share = gradient_share
        self.collusion_threshold = collusion_threshold
        self.secure_sum = secure_sum
        self.random_state = random_state
        self.accountant = accountant
        self.classes = classes

    _party_class = NewtonParty

    def _calibrate(self, epsilon, delta, alpha, sizes, n_features, loss, data_norm):
        """Every round's distributed discrete Gaussian (:func:`~dperm.multiparty.newton_privacy.calibrate_newton`)."""
        return calibrate_newton(
            epsilon=epsilon, delta=delta, alpha=alpha, n_rounds=int(self.n_rounds), n_samples_by_party=sizes,
            n_features=n_features, loss=loss, data_norm=data_norm, gradient_share=self.gradient_share,
            collusion_threshold=self.collusion_threshold)

    def _floor(self, calibration, epsilon, delta):
        """The target and the view's guarantee, whichever is larger, the agreed rounds and ``t``."""
        view_epsilon, view_delta = view_guarantee(calibration)
        return PartyFloor(max(epsilon, view_epsilon), max(delta, view_delta), int(self.n_rounds),
                          calibration.collusion_threshold)

    def _secure_sum(self, calibration, sizes, loss, rng):
        """The engine in the calibration's encoding ``(C, Q, M)``."""
        encoding = (calibration.clipping_range, calibration.quantization_range, calibration.modulus_range)
        engine = self._engine(rng, *encoding)
        if engine is self.secure_sum and (engine.clipping_range, engine.quantization_range,
                                          engine.modulus_range) != encoding:
            raise ValueError(f"the secure sum's encoding (C, Q, M) must be the calibration's {encoding}; got "
                             f"{(engine.clipping_range, engine.quantization_range, engine.modulus_range)}.")
        return engine

    def _run(self, parties, secure_sum, calibration, rng):
        result = private_newton(InProcessNewtonNetwork(parties, secure_sum), calibration)
        return result.coef, newton_record(result)


def newton_record(result):
    """``privacy_`` of a Newton run: public calibration numbers and the secure-sum summary only."""
    from dperm.privacy.multiparty_record import NewtonPrivacyRecord
    from dperm.privacy.references import REFERENCES

    calibration = result.calibration
    headline = newton_guarantee(calibration)
    return NewtonPrivacyRecord(
        mechanism="multiparty_newton", epsilon=headline["epsilon"], delta=headline["delta"], calibration=calibration,
        collusion_epsilon=headline["collusion_epsilon"], noise="distributed-discrete-gaussian",
        party_noise_std=calibration.party_noise_std, gradient_noise_std=calibration.gradient_noise_std,
        hessian_noise_std=calibration.hessian_noise_std, n_samples_by_party=tuple(result.n_samples_by_party),
        secure_sum=newton_summary(result), accountant="RDP (KLS 2021 Thm 1; dp-accounting's RDP-to-DP conversion)",
        reference=REFERENCES["newton"],
        collusion=collusion_guarantee(calibration),
        notes=(
            f"The guarantee assumes the coordinator learns only the secure sum and the noise of at most "
            f"t = {calibration.collusion_threshold} colluding parties; more colluders lower it "
            "(epsilon_by_colluders; collusion_epsilon for K - 1).",
            "Each party checks the announced calibration against its own recomputation and floor before it "
            "draws or sends anything.",
        ),
    )
