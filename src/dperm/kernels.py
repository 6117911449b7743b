"""Random Fourier features: the data-independent map of private kernel ERM.

Chaudhuri, Monteleoni & Sarwate (2011), Sec. 5.2 and Alg. 3, reduce private
learning with a translation-invariant kernel ``k(x, x') = k(x - x')`` to the
linear case. By Bochner's theorem the kernel is the Fourier transform of a
probability measure (003 eq. 91), so D frequencies ``theta_j = (omega_j, psi_j)``
drawn from it give a map ``R : x -> v`` with

    v_j(x) = sqrt(2 / D) cos(omega_j . x + psi_j),    j = 1, ..., D,

and ``E[v(x) . v(x')] = k(x, x')`` (Rahimi & Recht 2007). A private linear
classifier trained on the ``v`` is a private kernel classifier.

Why the map keeps the privacy guarantee
---------------------------------------
The frequencies are drawn **independently of the data**: :meth:`RandomFourierFeatures.fit`
uses only the number of features of X. Training rows enter the released model
only through the private linear classifier, so the guarantee of Algorithm 1 or 2
carries over unchanged (003 Sec. 5.3, Thm 5). The frequencies ``frequencies_``
(W) and phases ``phases_`` (psi) are therefore **public**: they are released
with the model, and anyone may see them.

The norm bound (paper note 10)
----------------------------------------------
Each coordinate is at most ``sqrt(2 / D)`` in absolute value, so
``||v(x)||^2 = (2 / D) sum_j cos^2(.) <= 2``: the features have norm up to
``sqrt(2)``, not 1 as 003 Thm 5 assumes. dperm keeps the map of Alg. 3 exactly
(so ``v(x) . v(x')`` estimates ``k(x, x')`` without a factor) and exposes the
bound as ``output_norm_bound_ = sqrt(2)``; a private linear model on these
features must be calibrated with ``data_norm=output_norm_bound_`` (paper
note 2), which :class:`dperm.PrivateKernelSVC` and
:class:`dperm.PrivateKernelLogisticRegression` do. The bound holds for every
input ``x``, however large, so no clipping of X is needed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Callable

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.metrics.pairwise import laplacian_kernel, rbf_kernel
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from dperm.validation import check_random_state

__all__ = [
    "KERNELS",
    "KERNEL_NAMES",
    "PAIR_MAP_KAPPA",
    "RFF_NORM_BOUND",
    "Kernel",
    "RandomFourierFeatures",
    "get_kernel",
    "kernel_matrix",
    "random_fourier_map",
    "random_fourier_pair_map",
    "sample_frequencies",
]

@dataclass(frozen=True)
class Kernel:
    """One translation-invariant kernel ``k(x, x') = k(x - x')``, as every part of dperm uses it.

    Attributes
    ----------
    name : str
        The value of ``kernel=`` in the estimators.
    formula : str
        ``k(x, x')`` with the kernel parameter ``gamma``.
    function : callable
        ``function(A, B, gamma=gamma)``: the matrix ``k(a_i, b_j)`` (scikit-learn's
        pairwise kernel of the same convention).
    kappa : float
        ``sup_x sqrt(k(x, x)) = sqrt(k(0))``, the bound 000 Prop. 1 needs; 1 for
        every kernel here, whatever the data, so X needs no clipping.
    sample_frequencies : callable
        ``sample_frequencies(gamma, shape, rng)``: frequencies drawn from the
        kernel's spectral distribution (Bochner, 003 eq. 91), for random features.
    reference : str
        Where the kernel and its spectral distribution are stated.
    """

    name: str
    formula: str
    function: Callable
    kappa: float
    sample_frequencies: Callable
    reference: str


def _gaussian_frequencies(gamma: float, shape, rng):
    """Rows ``N(0, 2 gamma I_d)``: the Fourier transform of ``exp(-gamma ||t||_2^2)``."""
    return rng.normal(loc=0.0, scale=math.sqrt(2.0 * gamma), size=shape)


def _cauchy_frequencies(gamma: float, shape, rng):
    """Entries iid ``Cauchy(0, gamma)``: the Fourier transform of ``prod_k exp(-gamma |t_k|)``."""
    return gamma * rng.standard_cauchy(size=shape)


#: The one kernel table: private prediction (:mod:`dperm.mechanisms.prediction`,
#: :mod:`dperm.solvers.kernel`), random Fourier features and the private kernel
#: classifiers all read it (003 Sec. 5.1).
KERNELS = {
    "rbf": Kernel(
        name="rbf", formula="exp(-gamma ||x - x'||_2^2)", function=rbf_kernel, kappa=1.0,
        sample_frequencies=_gaussian_frequencies,
        reference="003 eq. 98 and Sec. 5.2 (frequencies N(0, 2 gamma I))",
    ),
    "laplacian": Kernel(
        name="laplacian", formula="exp(-gamma ||x - x'||_1)", function=laplacian_kernel, kappa=1.0,
        sample_frequencies=_cauchy_frequencies,
        reference="Rahimi & Recht (2007), Fig. 1 (frequencies iid Cauchy(0, gamma))",
    ),
}
#: The names of :data:`KERNELS`, for messages and parameter constraints.
KERNEL_NAMES = tuple(KERNELS)
#: ``sup_x ||z(x)||`` of the cos/sin pair map :func:`random_fourier_pair_map`: the
#: finite-rank kernel ``z(x) . z(x')`` has ``kappa = 1`` exactly, whatever x.
PAIR_MAP_KAPPA = 1.0

#: ``max_x ||v(x)||`` for ``v = sqrt(2/D) cos(W x + psi)``: ``sqrt(D * 2/D)``
#: (paper note 10; 003 Alg. 3, line 2).
RFF_NORM_BOUND = math.sqrt(2.0)


def get_kernel(name) -> Kernel:
    """The :class:`Kernel` called ``name``; ValueError naming the choices otherwise."""
    try:
        return KERNELS[name]
    except (KeyError, TypeError):
        raise ValueError(f"kernel must be one of {KERNEL_NAMES}; got {name!r}.") from None


def kernel_matrix(kernel: str, A, B, gamma: float) -> np.ndarray:
    """``k(a_i, b_j)`` for every row ``a_i`` of A and ``b_j`` of B (the conventions of :data:`KERNELS`)."""
    return get_kernel(kernel).function(A, B, gamma=gamma)


def sample_frequencies(kernel: str, gamma: float, n_components: int, n_features: int, rng):
    """Draw the ``D x d`` frequency matrix W from the kernel's spectral distribution.

    Parameters
    ----------
    kernel : {"rbf", "laplacian"}
        ``"rbf"``: ``k(x, x') = exp(-gamma ||x - x'||_2^2)`` (003 eq. 98), whose
        Fourier transform is Gaussian: rows of W are ``N(0, 2 gamma I_d)``
        (003 Sec. 5.2). ``"laplacian"``: ``k(x, x') = exp(-gamma ||x - x'||_1)``,
        a product over coordinates of ``exp(-gamma |t|)``, whose Fourier
        transform is the Cauchy density ``gamma / (pi (gamma^2 + w^2))``: the
        entries of W are iid ``Cauchy(0, gamma)`` (Rahimi & Recht 2007, Fig. 1).
    gamma : float
        Kernel parameter, > 0.
    n_components : int
        D, the number of random features.
    n_features : int
        d, the input dimension.
    rng : numpy.random.Generator

    Returns
    -------
    W : ndarray of shape (n_components, n_features)
    """
    return get_kernel(kernel).sample_frequencies(gamma, (n_components, n_features), rng)


def _sample_phases(n_components: int, rng):
    """Draw the phases psi ~ U[0, 2 pi), one per feature.

    003 Sec. 5.2 writes ``Uniform[-pi, pi]``; cos is 2 pi-periodic, so the two
    give the same distribution of features.
    """
    return rng.uniform(0.0, 2.0 * math.pi, size=n_components)


def random_fourier_map(X, frequencies, phases):
    """``v = sqrt(2/D) cos(W x + psi)`` for every row x of X (003 Alg. 3, line 2).

    Raises ValueError when ``W x`` overflows to infinity for some row (its
    entries are then near the largest float); cos of such an argument is not
    defined, and at that magnitude it is meaningless anyway.
    """
    n_components = frequencies.shape[0]
    return math.sqrt(2.0 / n_components) * np.cos(_checked_projection(X, frequencies, phases))


def random_fourier_pair_map(X, frequencies):
    """``z(x) = D^(-1/2) [cos(W x), sin(W x)]``: the random feature map with ``||z(x)|| = 1``.

    With ``D`` frequencies ``omega_j`` drawn from the kernel's spectral
    distribution, ``z(x) . z(x') = (1/D) sum_j cos(omega_j . (x - x'))``, an
    unbiased estimate of ``k(x, x')`` (Rahimi & Recht 2007, the cos/sin form).
    Unlike :func:`random_fourier_map` (``||v(x)||^2 <= 2``), every row has
    ``||z(x)||^2 = (1/D) sum_j (cos^2 + sin^2) = 1`` (up to rounding), so the
    finite-rank kernel ``z(x) . z(x')`` has ``kappa = sup_x sqrt(k(x, x)) = 1``
    exactly, whatever x (used by :class:`dperm.PrivatePredictor`'s
    ``solver="features"``).

    Returns
    -------
    Z : ndarray of shape (n_samples, 2 D)
    """
    n_frequencies = frequencies.shape[0]
    projection = _checked_projection(X, frequencies, None)
    scale = 1.0 / math.sqrt(n_frequencies)
    return np.hstack([np.cos(projection), np.sin(projection)]) * scale


def _checked_projection(X, frequencies, phases):
    """``W x (+ psi)`` for every row of X, refused when it overflows to infinity."""
    with np.errstate(over="ignore", invalid="ignore"):
        projection = X @ frequencies.T
        if phases is not None:
            projection += phases
    finite = np.isfinite(projection)
    if not finite.all():
        rows = np.flatnonzero(~finite.all(axis=1))
        raise ValueError(
            f"W x overflowed for {rows.size} row(s) of X (first: row {rows[0]}); their "
            "entries are too large for the random Fourier map. Rescale X, e.g. with "
            "dperm.preprocessing.PublicBoundsScaler."
        )
    return projection


class RandomFourierFeatures(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Random Fourier features of a translation-invariant kernel (003 Alg. 3).

    Maps ``x`` to ``v(x) = sqrt(2 / D) cos(W x + psi)`` with ``D = n_components``
    frequencies drawn from the kernel's spectral distribution, so that
    ``v(x) . v(x')`` approximates ``k(x, x')`` (Chaudhuri, Monteleoni & Sarwate
    2011, Sec. 5.1-5.2; Rahimi & Recht 2007).

    The map is **data-independent**: :meth:`fit` reads only the number of
    columns of X (it checks the values are finite but never uses them), so it
    costs no privacy, and W and psi are public. They are released with any
    model trained on the features (003 Sec. 5.3, Thm 5). Training a private
    linear model on ``transform(X)`` gives a private kernel model; see
    :class:`dperm.PrivateKernelSVC` and :class:`dperm.PrivateKernelLogisticRegression`.

    Parameters
    ----------
    kernel : {"rbf", "laplacian"}, default="rbf"
        ``"rbf"``: ``k(x, x') = exp(-gamma ||x - x'||_2^2)``, rows of W drawn
        from ``N(0, 2 gamma I)`` (003 eq. 98). ``"laplacian"``:
        ``k(x, x') = exp(-gamma ||x - x'||_1)``, entries of W drawn from
        ``Cauchy(0, gamma)``. Same conventions as
        :func:`sklearn.metrics.pairwise.rbf_kernel` and
        :func:`sklearn.metrics.pairwise.laplacian_kernel`.
    gamma : float, default=1.0
        Kernel parameter, > 0 (larger means a narrower kernel). Choose it from
        public knowledge or with a private tuning procedure, not from the data.
    n_components : int, default=100
        D, the number of random features (the output dimension). The kernel
        approximation error shrinks like ``1 / sqrt(D)``.
    random_state : None, int or numpy Generator, default=None
        Source of W and psi. ``None`` draws them from OS entropy
        (:func:`dperm.validation.check_random_state`). They are public either
        way, so a seed here costs no privacy; but never draw them from the
        generator that draws a model's privacy noise, since W and psi are
        published and could reveal that generator's state.

    Attributes
    ----------
    frequencies_ : ndarray of shape (n_components, n_features)
        W, the frequencies ``omega_j`` of 003 Sec. 5.2, one per row. Public.
    phases_ : ndarray of shape (n_components,)
        psi, drawn from ``U[0, 2 pi)``. Public.
    output_norm_bound_ : float
        ``sqrt(2)``, the largest L2 norm of ``transform(x)`` for any ``x``
        (paper note 10). dperm does not rescale the features
        to norm 1; a private linear model on them must use
        ``data_norm=output_norm_bound_``.
    n_features_in_ : int
        Number of features seen in :meth:`fit`.
    feature_names_in_ : ndarray of shape (n_features,)
        Column names seen in :meth:`fit`, when X had string column names.

    See Also
    --------
    dperm.PrivateKernelSVC, dperm.PrivateKernelLogisticRegression :
        the private kernel classifiers of 003 Alg. 3 built on this map.
    sklearn.kernel_approximation.RBFSampler : the same map for the RBF kernel
        (its ``random_weights_`` is the transpose of ``frequencies_``).

    References
    ----------
    .. [1] K. Chaudhuri, C. Monteleoni, A. D. Sarwate. Differentially Private
       Empirical Risk Minimization. JMLR 12 (2011), Sec. 5.1-5.3, Alg. 3, Thm 5.
    .. [2] A. Rahimi, B. Recht. Random Features for Large-Scale Kernel
       Machines. NIPS 2007.

    Examples
    --------
    >>> import numpy as np
    >>> from dperm.kernels import RandomFourierFeatures
    >>> rff = RandomFourierFeatures(gamma=0.5, n_components=4000, random_state=0)
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0]])
    >>> V = rff.fit_transform(X)
    >>> V.shape
    (2, 4000)
    >>> bool(abs(V[0] @ V[1] - np.exp(-0.5)) < 0.05)
    True
    >>> bool(np.linalg.norm(V, axis=1).max() <= rff.output_norm_bound_)
    True
    """

    def __init__(self, kernel="rbf", gamma=1.0, n_components=100, random_state=None):
        self.kernel = kernel
        self.gamma = gamma
        self.n_components = n_components
        self.random_state = random_state

    _parameter_constraints: dict = {
        "kernel": [StrOptions(set(KERNEL_NAMES))],
        "gamma": [Interval(Real, 0, math.inf, closed="neither")],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "random_state": "no_validation",  # None, int or Generator: check_random_state
    }

    def fit(self, X, y=None):
        """Draw W and psi for X's number of features; X's values are not used.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Only its shape (and column names, if any) are read; it must be finite.
        y : ignored

        Returns
        -------
        self : RandomFourierFeatures
        """
        self._validate_params()
        X = validate_data(self, X, accept_sparse=("csr", "csc"), dtype=np.float64, reset=True)
        # Data independence (003 Sec. 5.3): from here on only the shape of X is used.
        n_features = X.shape[1]
        rng = check_random_state(self.random_state)
        n_components = int(self.n_components)
        self.frequencies_ = sample_frequencies(self.kernel, float(self.gamma), n_components, n_features, rng)
        self.phases_ = _sample_phases(n_components, rng)
        self.output_norm_bound_ = RFF_NORM_BOUND
        return self

    def transform(self, X):
        """Map X to ``sqrt(2/D) cos(X W^T + psi)``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Any finite values; the output norm is at most ``sqrt(2)`` regardless.

        Returns
        -------
        V : ndarray of shape (n_samples, n_components)
        """
        check_is_fitted(self, ("frequencies_", "phases_"))
        X = validate_data(self, X, accept_sparse=("csr", "csc"), dtype=np.float64, reset=False)
        return random_fourier_map(X, self.frequencies_, self.phases_)

    @property
    def _n_features_out(self):
        """Number of output features, for ``get_feature_names_out``."""
        return self.phases_.shape[0]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None
        tags.input_tags.sparse = True
        return tags
