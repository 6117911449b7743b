"""Private kernel classifiers by random Fourier features (003 Sec. 5.2, Alg. 3).

Chaudhuri, Monteleoni & Sarwate (2011), Alg. 3: draw frequencies from the
kernel's spectral distribution *independently of the data*, map every row to
``v = sqrt(2/D) cos(W x + psi)``, and run the private linear learner
(Alg. 1 or 2) on the ``v``. The estimators here compose the two parts by
delegation: a fitted :class:`dperm.kernels.RandomFourierFeatures` in
``features_`` and a fitted :class:`dperm.PrivateLinearSVC` or
:class:`dperm.PrivateLogisticRegression` in ``linear_model_``. No mechanism
and no privacy arithmetic is re-implemented; the guarantee is the linear
model's (003 Sec. 5.3, Thm 5).
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from dperm.cloning import BudgetOnCloneMixin
from dperm.exceptions import PrivacyLeakWarning
from dperm.kernels import RFF_NORM_BOUND, RandomFourierFeatures
from dperm.linear_model._logistic import PrivateLogisticRegression
from dperm.linear_model._svc import PrivateLinearSVC
from dperm.validation import check_sample_weight, refuse_dask_input

__all__ = ["PrivateKernelLogisticRegression", "PrivateKernelSVC"]


def _same_random_stream(a, b) -> bool:
    """Whether two ``random_state`` values would produce the same random stream."""
    if a is None or b is None:
        return False  # None draws a fresh OS-entropy seed each time
    if isinstance(a, numbers.Integral) and isinstance(b, numbers.Integral):
        return int(a) == int(b)
    return a is b


#: Parameters passed on to the private linear model, which checks them.
_LINEAR_PARAMETERS = ("loss", "h", "epsilon", "delta", "alpha", "mechanism", "fit_intercept",
                      "intercept_scaling", "max_iter", "tol", "random_state", "accountant", "classes")


class _PrivateKernelClassifierBase(BudgetOnCloneMixin, ClassifierMixin, BaseEstimator):
    """Random Fourier features + a private linear classifier; see the public classes."""

    def _make_linear_model(self, data_norm):
        raise TypeError(f"{type(self).__name__} does not define a linear model.")

    #: The feature map's parameters are declared here (the choices read
    #: :data:`dperm.kernels.KERNELS`); the linear model's are checked by the linear model
    #: itself (:meth:`_check_params`), so each parameter is declared once.
    _parameter_constraints: dict = {
        **{name: RandomFourierFeatures._parameter_constraints[name]
           for name in ("kernel", "gamma", "n_components")},
        "feature_random_state": "no_validation",  # None, int or Generator: check_random_state
        **{name: "no_validation" for name in _LINEAR_PARAMETERS},
    }

    def _feature_map(self):
        return RandomFourierFeatures(
            kernel=self.kernel,
            gamma=self.gamma,
            n_components=self.n_components,
            random_state=self.feature_random_state,
        )

    def _check_params(self):
        """Check the feature map's and the linear model's parameters; draw and spend nothing.

        Runs first in :meth:`fit` (and in :class:`dperm.tuning.PrivateParameterSearch`
        for every candidate), so a configuration error costs no budget.
        """
        self._validate_params()
        return self._make_linear_model(RFF_NORM_BOUND)._check_params()

    def _public_budget(self, n_samples, n_features, label_set=None):
        """``(epsilon, delta)`` a fit on ``n_samples`` rows spends: the linear model's on the
        ``n_components`` random features (public; see ``PrivateLinearModelBase._public_budget``)."""
        self._validate_params()
        linear_model = self._make_linear_model(RFF_NORM_BOUND)
        return linear_model._public_budget(n_samples, self.n_components, label_set)

    def _linear_params(self, data_norm):
        """The linear model's parameters: this estimator's of :data:`_LINEAR_PARAMETERS`, and ``data_norm``."""
        return dict({name: getattr(self, name) for name in _LINEAR_PARAMETERS if hasattr(self, name)},
                    data_norm=data_norm)

    def fit(self, X, y, sample_weight=None):
        """Draw the random features, map X, and fit the private linear model.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Any finite values: the features have norm at most ``sqrt(2)`` for
            every row, so X is never clipped.
        y : array-like of shape (n_samples,)
            Labels from ``classes`` (without it: at least two, read from y with
            a :class:`~dperm.PrivacyLeakWarning`); more than two are fitted
            one-vs-rest by the linear model, which splits the budget between
            the classes.
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights in [0, 1], passed to the linear model on the features
            (:meth:`dperm.linear_model.PrivateLogisticRegression.fit`): the random
            features are public and every mapped row has norm at most ``sqrt(2)``, so the
            linear model's weighted sensitivity argument applies unchanged (003 Alg. 3
            with its Alg. 1/2; paper note 15). Not for the hinge loss.

        Returns
        -------
        self
        """
        refuse_dask_input(self, X, y)
        self._check_params()
        X, y = validate_data(
            self, X, y, accept_sparse=("csr", "csc"), dtype=np.float64, ensure_min_samples=2
        )
        sample_weight = check_sample_weight(sample_weight, X.shape[0], type(self).__name__)
        if _same_random_stream(self.feature_random_state, self.random_state):
            warnings.warn(
                "feature_random_state and random_state give the same random stream. The "
                "random features W and psi are public (released with the model), so they "
                "may reveal the state that draws the privacy noise. Leave "
                "feature_random_state=None or use unrelated seeds.",
                PrivacyLeakWarning,
                stacklevel=2,
            )
        # 003 Alg. 3, line 1: theta_j drawn from the spectral distribution, using only
        # X's number of features (data-independent, 003 Sec. 5.3).
        features = self._feature_map().fit(X)
        # 003 Alg. 3, lines 2-3: map, then the private linear learner (Alg. 1 or 2, or
        # 004 Alg. 4) calibrated to the features' norm bound sqrt(2) (paper note 10).
        # The linear model checks the labels before it spends the budget.
        linear_model = self._make_linear_model(features.output_norm_bound_)
        linear_model.fit(features.transform(X), y, sample_weight=sample_weight)
        self.features_ = features
        self.linear_model_ = linear_model
        self.classes_ = linear_model.classes_
        self.alpha_, self.mechanism_ = linear_model.alpha_, linear_model.mechanism_
        self.privacy_ = linear_model.privacy_
        return self

    def _features(self, X):
        check_is_fitted(self, ("features_", "linear_model_"))
        X = validate_data(self, X, accept_sparse=("csr", "csc"), dtype=np.float64, reset=False)
        return self.features_.transform(X)

    def decision_function(self, X):
        """Decision values ``f(v(x))`` of the released linear model on the features.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        features = self._features(X)  # checks the model is fitted
        return self.linear_model_.decision_function(features)

    def predict(self, X):
        """Predicted class labels.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        features = self._features(X)  # checks the model is fitted
        return self.linear_model_.predict(features)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None or self.feature_random_state is None
        tags.input_tags.sparse = True
        return tags


class PrivateKernelSVC(_PrivateKernelClassifierBase):
    """Support vector classifier with a nonlinear kernel and a privacy guarantee.

    Private kernel ERM of Chaudhuri, Monteleoni & Sarwate (2011), Alg. 3:
    random Fourier features of the kernel (drawn independently of the data),
    then :class:`dperm.PrivateLinearSVC` on the features. Minimises
    ``(1/n) sum loss(y_i f.v(x_i)) + alpha/2 ||f||^2`` over ``f`` in R^D.

    Parameters
    ----------
    loss : {"huber", "smooth_hinge", "hinge"}, default="huber"
        As in :class:`dperm.PrivateLinearSVC`; ``"hinge"`` needs ``mechanism="output"``.
    h : float, default=0.5
        Width of the smoothed region of the huber and smooth_hinge losses.
    kernel : {"rbf", "laplacian"}, default="rbf"
        ``"rbf"``: ``exp(-gamma ||x - x'||_2^2)``; ``"laplacian"``:
        ``exp(-gamma ||x - x'||_1)``. See :class:`dperm.kernels.RandomFourierFeatures`.
    gamma : float, default=1.0
        Kernel parameter, > 0. Public: choose it without looking at the data.
    n_components : int, default=100
        D, the number of random features, i.e. the dimension of the private
        linear problem. Larger D approximates the kernel better but spreads
        the same privacy noise over more coefficients.
    epsilon : float, default=1.0
        Privacy loss bound of the released model (must be > 0).
    delta : float, default=0.0
        In [0, 1); only the Gaussian objective mechanisms use it (and need it > 0).
    alpha : float or "auto", default="auto"
        L2 regularisation strength: the objective is
        ``(1/n) sum loss + (alpha/2) ||w||^2``, so ``alpha`` is Chaudhuri et
        al.'s ``Lambda`` and Nie & Wang's ``lambda`` is ``alpha/2`` (paper
        note 7). ``"auto"`` sets it from
        public quantities only (n, d, epsilon, delta, the norm bound, the loss and
        the mechanism; :func:`dperm.mechanisms.choice.auto_alpha`), never from the data; the
        value used is ``alpha_``. Larger alpha means less noise.
    mechanism : {"auto", "objective", "output", "gaussian_objective", "gaussian_objective_004"}, default="auto"
        ``"auto"`` chooses from public quantities (:mod:`dperm.mechanisms.choice`,
        recorded in ``privacy_``), or
        objective perturbation (003 Alg. 2), output perturbation (003 Alg. 1)
        or Gaussian objective perturbation (GLM calibration with the one-factor Jacobian bound,
        docs/design/gaussian_objective.md; ``"gaussian_objective_004"``: 004 Alg. 4),
        run on the features.
    fit_intercept : bool, default=False
        Off by default. The linear model fits an intercept by appending a
        constant feature ``intercept_scaling`` to every row, and that feature
        counts toward the norm bound: the noise would be calibrated to
        ``sqrt(2 + intercept_scaling**2)`` instead of ``sqrt(2)``, i.e. more
        noise for the same epsilon. The random features already contain
        near-constant, low-frequency components that can play the role of an
        offset, and 003 Alg. 3 has no intercept.
    intercept_scaling : float, default=1.0
        Value of the constant feature when ``fit_intercept=True``.
    max_iter : int, default=1000
        Maximum fast-solver iterations of the linear problem; a proven method
        finishes a solve they leave uncertified (docs/releases.md, "Solver failures").
    tol : float, default=1e-8
        Gradient-norm tolerance of the linear problem (recorded in ``privacy_``).
    feature_random_state : None, int or numpy Generator, default=None
        Source of the random features W and psi; ``None`` draws them from OS
        entropy. They are public and released with the model, so a seed here
        costs no privacy; but it must not be the generator (or seed) of
        ``random_state``, since the published W and psi could then reveal the
        privacy noise (a :class:`~dperm.PrivacyLeakWarning` says so).
    random_state : None, int or numpy Generator, default=None
        Source of the privacy noise; ``None`` draws every bit of it from the OS
        CSPRNG (:mod:`dperm.randomness`), as a released model must. A seed makes
        fits reproducible, for testing only.
    accountant : dperm.privacy.accounting.BudgetAccountant, optional
        As in :class:`dperm.PrivateLinearSVC`.
    classes : None or list of labels, default=None
        The public label set, as in :class:`dperm.PrivateLogisticRegression`:
        it alone sets ``classes_`` and the one-vs-rest split of epsilon.
        ``None`` reads the labels from y, which the guarantee does not cover
        (a :class:`~dperm.PrivacyLeakWarning` says so).

    Attributes
    ----------
    linear_model_ : dperm.PrivateLinearSVC
        The fitted private linear model on the features (``coef_``, ``intercept_``).
    features_ : dperm.kernels.RandomFourierFeatures
        The fitted feature map (public W and psi).
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features,)
        Defined when X had string column names.
    privacy_ : dperm.privacy.record.PrivacyRecord
        The guarantee: the record of ``linear_model_`` (same object).

    Notes
    -----
    The released model is ``(W, psi, coefficients)``: ``features_.frequencies_``,
    ``features_.phases_`` and ``linear_model_.coef_`` / ``intercept_``. Unlike
    a kernel machine built by the representer theorem (003 eq. 90) it contains
    no training row. W and psi are drawn without looking at the data (only its
    number of columns), so they are public and the privacy guarantee is that
    of the linear mechanism on the features, unchanged (003 Sec. 5.3, Thm 5;
    Thms 1-2 for Algs. 1-2). ``privacy_`` is the linear model's record.

    No clipping of X is needed or done: every feature vector has norm at most
    ``sqrt(2)`` (paper note 10) whatever ``x`` is, and the
    linear model is calibrated with ``data_norm=sqrt(2)``
    (``features_.output_norm_bound_``), so ``privacy_.data_norm == sqrt(2)``.

    See Also
    --------
    PrivateKernelLogisticRegression : the same with the logistic loss.
    dperm.kernels.RandomFourierFeatures : the feature map alone.

    References
    ----------
    .. [1] K. Chaudhuri, C. Monteleoni, A. D. Sarwate. Differentially Private
       Empirical Risk Minimization. JMLR 12 (2011), Sec. 5, Alg. 3, Thm 5.
    .. [2] A. Rahimi, B. Recht. Random Features for Large-Scale Kernel
       Machines. NIPS 2007.

    Examples
    --------
    >>> from sklearn.datasets import make_circles
    >>> from dperm import PrivateKernelSVC
    >>> X, y = make_circles(2000, noise=0.05, factor=0.5, random_state=0)
    >>> model = PrivateKernelSVC(gamma=2.0, epsilon=10.0, alpha=1e-3).fit(X, y)
    >>> bool(model.score(X, y) > 0.8)
    True
    """

    def __init__(
        self,
        *,
        loss="huber",
        h=0.5,
        kernel="rbf",
        gamma=1.0,
        n_components=100,
        epsilon=1.0,
        delta=0.0,
        alpha="auto",
        mechanism="auto",
        fit_intercept=False,
        intercept_scaling=1.0,
        max_iter=1000,
        tol=1e-8,
        feature_random_state=None,
        random_state=None,
        accountant=None,
        classes=None,
    ):
        self.loss = loss
        self.h = h
        self.kernel = kernel
        self.gamma = gamma
        self.n_components = n_components
        self.epsilon = epsilon
        self.delta = delta
        self.alpha = alpha
        self.mechanism = mechanism
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.max_iter = max_iter
        self.tol = tol
        self.feature_random_state = feature_random_state
        self.random_state = random_state
        self.accountant = accountant
        self.classes = classes

    def _make_linear_model(self, data_norm):
        return PrivateLinearSVC(**self._linear_params(data_norm))


class PrivateKernelLogisticRegression(_PrivateKernelClassifierBase):
    """Logistic regression with a nonlinear kernel and a privacy guarantee.

    Private kernel ERM of Chaudhuri, Monteleoni & Sarwate (2011), Alg. 3:
    random Fourier features of the kernel (drawn independently of the data),
    then :class:`dperm.PrivateLogisticRegression` on the features. Minimises
    ``(1/n) sum log(1 + exp(-y_i f.v(x_i))) + alpha/2 ||f||^2`` over ``f`` in R^D.

    Parameters
    ----------
    kernel, gamma, n_components, epsilon, delta, alpha, mechanism, fit_intercept, \
    intercept_scaling, max_iter, tol, feature_random_state, random_state, accountant, classes
        As in :class:`dperm.PrivateKernelSVC` (``fit_intercept=False`` by
        default because the constant feature would count toward the norm bound).

    Attributes
    ----------
    linear_model_ : dperm.PrivateLogisticRegression
        The fitted private linear model on the features (``coef_``, ``intercept_``).
    features_, classes_, n_features_in_, feature_names_in_, privacy_
        As in :class:`dperm.PrivateKernelSVC`.

    Notes
    -----
    As in :class:`dperm.PrivateKernelSVC`: the released model is
    ``(W, psi, coefficients)`` and holds no training row; W and psi are public
    and data-independent, so ``privacy_`` (the linear model's record) is the
    whole guarantee (003 Sec. 5.3, Thm 5). X is never clipped: the features
    have norm at most ``sqrt(2)`` (paper note 10), the ``data_norm``
    of the linear model.

    See Also
    --------
    PrivateKernelSVC : the same with hinge-type losses.
    dperm.kernels.RandomFourierFeatures : the feature map alone.

    References
    ----------
    .. [1] K. Chaudhuri, C. Monteleoni, A. D. Sarwate. Differentially Private
       Empirical Risk Minimization. JMLR 12 (2011), Sec. 5, Alg. 3, Thm 5.
    .. [2] A. Rahimi, B. Recht. Random Features for Large-Scale Kernel
       Machines. NIPS 2007.

    Examples
    --------
    >>> from sklearn.datasets import make_circles
    >>> from dperm import PrivateKernelLogisticRegression
    >>> X, y = make_circles(2000, noise=0.05, factor=0.5, random_state=0)
    >>> model = PrivateKernelLogisticRegression(gamma=2.0, epsilon=10.0, alpha=1e-3)
    >>> model = model.fit(X, y)
    >>> model.predict_proba(X[:3]).shape
    (3, 2)
    """

    def __init__(
        self,
        *,
        kernel="rbf",
        gamma=1.0,
        n_components=100,
        epsilon=1.0,
        delta=0.0,
        alpha="auto",
        mechanism="auto",
        fit_intercept=False,
        intercept_scaling=1.0,
        max_iter=1000,
        tol=1e-8,
        feature_random_state=None,
        random_state=None,
        accountant=None,
        classes=None,
    ):
        self.kernel = kernel
        self.gamma = gamma
        self.n_components = n_components
        self.epsilon = epsilon
        self.delta = delta
        self.alpha = alpha
        self.mechanism = mechanism
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.max_iter = max_iter
        self.tol = tol
        self.feature_random_state = feature_random_state
        self.random_state = random_state
        self.accountant = accountant
        self.classes = classes

    def _make_linear_model(self, data_norm):
        return PrivateLogisticRegression(fallback=None, **self._linear_params(data_norm))  # not measured for kernels

    def predict_proba(self, X):
        """Class probabilities of the linear model on the features.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        features = self._features(X)  # checks the model is fitted
        return self.linear_model_.predict_proba(features)

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        features = self._features(X)  # checks the model is fitted
        return self.linear_model_.predict_log_proba(features)
