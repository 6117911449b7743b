"""Differentially private linear regression: quantile (pinball) and least squares.

Both estimators release ``argmin_w (1/n) sum loss(y_i - w.x_i) + alpha/2 ||w||^2``
plus vector noise (output perturbation, 003 Alg. 1), calibrated to the
sensitivity of Nie & Wang (paper 000) Thm 2, which needs only a convex loss,
Lipschitz in the prediction, and the strongly convex regulariser: no
derivative, so the pinball loss qualifies (000 Sec. 5). The noise is a vector
in coefficient space: the scalar shift of 000 eq. 2 would not make the released
model private (paper note 6).

The estimators are thin: check parameters and data, clip rows (and, for least
squares, labels) to public bounds, hand the problem to
:func:`dperm.mechanisms.output_perturbation`, and store the result with its
:class:`~dperm.privacy.record.PrivacyRecord`. No privacy arithmetic happens here.
"""

from __future__ import annotations

from numbers import Real

import numpy as np
from scipy import sparse
from sklearn.base import RegressorMixin
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, validate_data

from dperm.linear_model._base import POSITIVE, PrivateLinearModelBase, Targets
from dperm.losses import PinballLoss, SquaredLoss
from dperm.mechanisms import MECHANISMS, ERMProblem
from dperm.privacy.record import linear_record
from dperm.validation import (
    clip_labels_to_bound,
    clip_rows_to_norm,
    warn_clipped_labels,
)

MECHANISM = "output"


class PrivateLinearRegressorBase(RegressorMixin, PrivateLinearModelBase):
    """Base class; subclasses define ``_make_loss``. See the public estimators.

    Output perturbation only (000 Thm 2 needs no derivative of the loss), pure
    epsilon-DP; the fit is :meth:`PrivateLinearModelBase.fit`.
    """

    #: Added to the record's reference: the paper behind the subclass's loss.
    _loss_reference = ""
    _validate_y = {"y_numeric": True}

    def __init__(
        self,
        *,
        epsilon=1.0,
        alpha="auto",
        data_norm=1.0,
        fit_intercept=True,
        intercept_scaling=1.0,
        max_iter=1000,
        tol=1e-8,
        random_state=None,
        accountant=None,
    ):
        self.epsilon = epsilon
        self.alpha = alpha
        self.data_norm = data_norm
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.accountant = accountant

    def _mechanism_name(self) -> str:
        return MECHANISM

    def _spend_label(self):
        return f"{type(self).__name__}(mechanism={MECHANISM!r})"

    def _prepare_labels(self, y, loss):
        """Per-record label preprocessing after the budget is spent (none by default)."""
        return y

    def _check_targets(self, y, params):
        """``y`` as floats; string labels (which ``y_numeric`` lets through) are an error."""
        try:
            return Targets(np.asarray(y, dtype=np.float64))
        except ValueError as error:
            raise ValueError(f"y must hold real-valued targets for a regressor; {error}.") from None

    def _problem_budget(self, params, n_problems):
        """One problem, pure epsilon-DP: ``(epsilon, 0)``."""
        return params.epsilon, 0.0

    def _solve(self, X, targets, params, rng, effective_norm):
        y = self._prepare_labels(targets.y, params.loss)
        problem = ERMProblem(X, y, params.loss, params.alpha, effective_norm)
        return [MECHANISMS[MECHANISM].release(problem, params.calibration, rng, params.tol,
                                              params.max_iter)]

    def _store(self, outputs, targets, params):
        self._set_coefficients(outputs[0].coef, params.scaling)

    def _set_coefficients(self, coef, intercept_scaling):
        if self.fit_intercept:
            self.coef_ = coef[:-1]
            self.intercept_ = float(coef[-1] * intercept_scaling)
        else:
            self.coef_ = coef
            self.intercept_ = 0.0

    def _record(self, outputs, params, effective_norm, n_samples, targets, engine="memory"):
        return linear_record(
            MECHANISMS[MECHANISM], params.calibration, params.calibration.epsilon, 0.0, n_problems=1,
            loss=params.loss,
            data_norm=params.data_norm, alpha=params.alpha, tol=params.tol,
            effective_norm=effective_norm, n_samples=n_samples,
            reference=f"{MECHANISMS[MECHANISM].reference}; {self._loss_reference}",
        )

    # -- prediction -------------------------------------------------------
    def _linear_prediction(self, X):
        """``X @ coef_ + intercept_`` after clipping rows to ``data_norm``, as in ``fit``.

        The model was fitted on rows of norm at most ``data_norm``; clipping at
        prediction time keeps every answer that of a row it could have seen, and
        finite for any finite input.
        """
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        if sparse.issparse(X):
            X = X.toarray()
        X, _ = clip_rows_to_norm(X, float(self.data_norm))
        return X @ self.coef_ + self.intercept_

    def predict(self, X):
        """Predict ``X @ coef_ + intercept_``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return self._linear_prediction(X)


class PrivateQuantileRegressor(PrivateLinearRegressorBase):
    """Linear quantile regression with a differential privacy guarantee.

    Minimises ``(1/n) sum rho_tau(y_i - w.x_i) + alpha/2 ||w||^2`` with the
    pinball loss ``rho_tau(r) = max(tau r, (tau - 1) r)`` and releases the
    minimiser plus noise (output perturbation). The pinball loss is not
    differentiable, so objective perturbation does not apply; output
    perturbation needs only its Lipschitz constant ``max(tau, 1 - tau)``
    (Nie & Wang 2017, Thm 2 and Sec. 5). The labels need no bound.

    The L2 sensitivity of the exact minimiser is
    ``2 max(tau, 1 - tau) R / (n alpha)`` with ``R`` the (intercept-augmented)
    row-norm bound. The solve is certified to within 0.5 % of that
    (a Huberised pinball with ``0 <= smooth - pinball <= h/4`` plus Newton
    steps, or a duality gap); the noise is calibrated to the sum.

    Parameters
    ----------
    quantile : float in (0, 1), default=0.5
        ``tau``, the quantile to estimate (0.5: median regression).
    epsilon : float, default=1.0
        Privacy loss bound of the released model (must be > 0); pure epsilon-DP.
    alpha : float or "auto", default="auto"
        L2 regularisation strength: the objective is
        ``(1/n) sum loss + (alpha/2) ||w||^2``, so ``alpha`` is Chaudhuri et
        al.'s ``Lambda`` and Nie & Wang's ``lambda`` is ``alpha/2`` (paper
        note 7). ``"auto"`` sets it from
        public quantities only (n, d, epsilon, delta, the norm bound, the loss and
        the mechanism; :func:`dperm.mechanisms.choice.auto_alpha`), never from the data; the
        value used is ``alpha_``. Larger alpha means less noise.
    data_norm : float, default=1.0
        Public bound on the L2 norm of a row of X. Longer rows are scaled onto
        it (per record, so the guarantee holds) with a ``DataClippingWarning``.
    fit_intercept : bool, default=True
        Fit an intercept through a constant feature ``intercept_scaling`` that
        counts toward the norm bound (the noise is calibrated to
        ``sqrt(data_norm**2 + intercept_scaling**2)``) and is regularised.
    intercept_scaling : float, default=1.0
    max_iter : int, default=1000
        Iteration budget of each fast solver stage (at least 1,000 for the
        pinball); a proven method finishes a solve they leave uncertified
        (docs/releases.md, "Solver failures").
    tol : float, default=1e-8
        Recorded in ``privacy_``; the pinball solve is certified to the radius
        above instead of a gradient norm.
    random_state : None, int or numpy Generator, default=None
        ``None`` draws every noise bit from the OS CSPRNG (:mod:`dperm.randomness`),
        as a released model must. A seed is meant for testing only.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    n_features_in_ : int
    privacy_ : dperm.privacy.record.PrivacyRecord
        The guarantee and every number behind it (``lipschitz`` is ``C_L``).

    References
    ----------
    Nie & Wang, "Perturbation of convex risk minimization and its application
    in differential private learning algorithms", J. Inequal. Appl. (2017),
    Thm 2 and Sec. 5. Chaudhuri, Monteleoni & Sarwate (2011), Alg. 1.

    Examples
    --------
    >>> import numpy as np
    >>> from dperm import PrivateQuantileRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-0.5, 0.5, size=(2000, 2))
    >>> y = X @ [1.0, -1.0] + rng.standard_t(2, size=2000)
    >>> model = PrivateQuantileRegressor(quantile=0.5, epsilon=1.0, random_state=0).fit(X, y)
    >>> model.coef_.shape, type(model.intercept_)
    ((2,), <class 'float'>)
    """

    _loss_reference = "pinball loss, L = max(tau, 1 - tau) (Nie & Wang 2017, Sec. 5)"
    _parameter_constraints: dict = {
        **PrivateLinearRegressorBase._parameter_constraints,
        "quantile": [Interval(Real, 0, 1, closed="neither")],
    }

    def __init__(
        self,
        quantile=0.5,
        *,
        epsilon=1.0,
        alpha="auto",
        data_norm=1.0,
        fit_intercept=True,
        intercept_scaling=1.0,
        max_iter=1000,
        tol=1e-8,
        random_state=None,
        accountant=None,
    ):
        super().__init__(
            epsilon=epsilon,
            alpha=alpha,
            data_norm=data_norm,
            fit_intercept=fit_intercept,
            intercept_scaling=intercept_scaling,
            max_iter=max_iter,
            tol=tol,
            random_state=random_state,
            accountant=accountant,
        )
        self.quantile = quantile

    def _make_loss(self):
        return PinballLoss(self.quantile)


class PrivateLeastSquares(PrivateLinearRegressorBase):
    """Ridge-regularised least squares with bounded labels and a differential privacy guarantee.

    Minimises ``(1/n) sum (y_i - w.x_i)^2 + alpha/2 ||w||^2`` on labels clipped
    to ``[-M, M]`` (``M = y_bound``), releases the minimiser plus vector noise
    (output perturbation) and projects predictions onto ``[-M, M]``
    (002 eq. 2; post-processing, free of privacy cost).

    **Calibration (derived in dperm's convention).** The papers (000 Sec. 5.1,
    002 eq. 1) minimise ``(1/m) sum (f(x_i) - y_i)^2 + lambda ||f||^2``; this is
    the same objective with ``lambda = alpha / 2`` and ``gamma = 2``
    (paper note 7). Write ``kappa = R`` for the row-norm bound (with the intercept
    feature: ``sqrt(data_norm^2 + intercept_scaling^2)``).

    1. Norm of every minimiser (002 Thm 3's ``R``):
       ``alpha/2 ||w||^2 <= J(w) <= J(0) = mean(y_i^2) <= M^2``, so
       ``||w|| <= M sqrt(2/alpha) = M / sqrt(lambda)``.
    2. Lipschitz constant on those predictions (000 Sec. 5.1): ``|w.x| <=
       kappa M sqrt(2/alpha)`` and ``|y| <= M``, so for two such predictions
       ``|(t1 - y)^2 - (t2 - y)^2| <= |t1 + t2 - 2y| |t1 - t2|`` gives
       ``C_L = 2 M (1 + kappa sqrt(2/alpha)) = 2 M (1 + kappa / sqrt(lambda))``.
       (000 prints ``2 M (kappa + 1) / sqrt(lambda)``, the same bound relaxed
       by ``1 <= 1/sqrt(lambda)``, which needs ``lambda <= 1``; dperm keeps the
       unrelaxed constant, valid for every alpha.)
    3. Sensitivity (000 Thm 2 with ``lambda gamma = alpha``; 002 Lemma 2):
       ``||w(D) - w(D')|| <= 2 kappa C_L / (n alpha)
       = 4 kappa M (1 + kappa sqrt(2/alpha)) / (n alpha)``,
       plus twice the certified solve radius ``tol / alpha``.

    Parameters
    ----------
    y_bound : float, default=1.0
        ``M``, a public bound on ``|y|``. Labels outside ``[-M, M]`` are clipped
        with a ``DataClippingWarning`` that counts them. Choose it from public
        knowledge, never from the data.
    epsilon, alpha, data_norm, fit_intercept, intercept_scaling, max_iter, random_state
        As in :class:`PrivateQuantileRegressor`. The noise grows like
        ``alpha^(-3/2)``: least squares needs stronger regularisation than
        Lipschitz losses.
    tol : float, default=1e-8
        Tolerance on the gradient norm of the objective; the solution radius
        ``tol / alpha`` enters the sensitivity.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    n_features_in_ : int
    privacy_ : dperm.privacy.record.PrivacyRecord
        ``lipschitz`` holds ``C_L`` of step 2.

    References
    ----------
    Nie & Wang (2017a), J. Inequal. Appl., Sec. 5.1 and Thm 2; Nie & Wang
    (2017b), J. Appl. Math. Phys. 5, eq. 2 and Lemma 2.
    """

    _loss_reference = (
        "least squares with |y| <= M, C_L = 2 M (1 + kappa / sqrt(lambda)) "
        "(Nie & Wang 2017, Sec. 5.1; Nie & Wang 2017b, Lemma 2)"
    )
    _parameter_constraints: dict = {
        **PrivateLinearRegressorBase._parameter_constraints,
        "y_bound": [POSITIVE],
    }

    def __init__(
        self,
        y_bound=1.0,
        *,
        epsilon=1.0,
        alpha="auto",
        data_norm=1.0,
        fit_intercept=True,
        intercept_scaling=1.0,
        max_iter=1000,
        tol=1e-8,
        random_state=None,
        accountant=None,
    ):
        super().__init__(
            epsilon=epsilon,
            alpha=alpha,
            data_norm=data_norm,
            fit_intercept=fit_intercept,
            intercept_scaling=intercept_scaling,
            max_iter=max_iter,
            tol=tol,
            random_state=random_state,
            accountant=accountant,
        )
        self.y_bound = y_bound

    def _make_loss(self):
        return SquaredLoss(self.y_bound)

    def _prepare_labels(self, y, loss):
        y, n_clipped = clip_labels_to_bound(y, loss.y_bound)
        warn_clipped_labels(n_clipped, loss.y_bound)
        return y

    def predict(self, X):
        """Predict ``pi(X @ coef_ + intercept_)``, projected onto ``[-y_bound, y_bound]`` (002 eq. 2).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        bound = float(self.y_bound)
        return np.clip(self._linear_prediction(X), -bound, bound)
