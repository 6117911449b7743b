"""Audits of mechanisms built on others: kernel models, private prediction, multiparty.

Each builder sets up a worst-case neighbouring pair for its mechanism, runs the
real dperm estimator on it, and returns :func:`dperm.audit.audit`'s result.
``noise_factor < 1`` audits a deliberately under-noised copy (the estimator
calibrated for ``epsilon / noise_factor``, :func:`~dperm.audit._noise.under_noised_epsilon`)
against the honest claim, to check power.
"""

from __future__ import annotations

import warnings

import numpy as np

from dperm.audit._collusion import collusion_shards
from dperm.audit._core import audit
from dperm.audit._noise import under_noised_epsilon, under_noised_label

#: Seed of the public random features of the kernel audit (the map is data-independent).
_KERNEL_FEATURE_SEED = 12345


def _label_flip_pair(canary, n=20, seed=0):
    """``n`` rows in [-1, 1]; the last is ``canary`` with label +1 in D and -1 in D'."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 1))
    y = np.where(X[:, 0] > 0, 1, -1)
    X[-1] = canary
    y[-1] = 1
    y_prime = y.copy()
    y_prime[-1] = -1
    return X, y, y_prime


def strongest_kernel_canary(n_components=2, gamma=1.0):
    """The input whose public random features have the largest norm (close to sqrt(2)).

    The margin at the canary moves by ``2 ||v(x_c)||^2 / (n alpha)`` against noise of
    scale ``||v(x_c)|| S / epsilon``: the test is sharpest where ``||v(x_c)||`` is largest.
    """
    from dperm.kernels import RandomFourierFeatures

    grid = np.linspace(-1, 1, 4001)[:, None]
    features = RandomFourierFeatures(n_components=n_components, gamma=gamma,
                                     random_state=_KERNEL_FEATURE_SEED).fit(grid)
    return grid[np.argmax(np.linalg.norm(features.transform(grid), axis=1))]


def _label_flip_audit(canary, score, epsilon, n_runs, confidence, random_state, label, noise_factor):
    """Audit ``score(X, labels, classes, rng)`` (a fit's value at ``canary``) on the label-flip pair around it."""
    X, y, y_prime = _label_flip_pair(canary)
    classes = np.unique(np.concatenate([y, y_prime]))  # the audit's own labels

    def runner(labels):
        return lambda rng: score(X, labels, classes, rng)

    return audit(runner(y), runner(y_prime), None, epsilon, n_runs=n_runs, confidence=confidence,
                 random_state=random_state, label=under_noised_label(label, noise_factor))


def audit_kernel_estimator(epsilon, *, mechanism="output", n_runs=1500, confidence=0.95,
                           noise_factor=1.0, random_state=None):
    """Audit :class:`dperm.PrivateKernelSVC` (003 Alg. 3) on a label-flip canary."""
    from dperm.linear_model import PrivateKernelSVC

    canary = strongest_kernel_canary()
    fit_epsilon = under_noised_epsilon(epsilon, noise_factor)

    def score(X, labels, classes, rng):
        model = PrivateKernelSVC(loss="huber", mechanism=mechanism, epsilon=fit_epsilon, alpha=5.0,
                                 n_components=2, gamma=1.0, feature_random_state=_KERNEL_FEATURE_SEED,
                                 classes=classes, random_state=rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X, labels)
        return float(model.decision_function(canary[None])[0])

    return _label_flip_audit(canary, score, epsilon, n_runs, confidence, random_state,
                             f"PrivateKernelSVC(mechanism={mechanism!r})", noise_factor)


def audit_private_predictor(epsilon, *, n_runs=1500, confidence=0.95, noise_factor=1.0,
                            random_state=None):
    """Audit one answer of :class:`dperm.PrivatePredictor` (000 Prop. 1, paper note 6).

    Hinge loss with strong regularisation: flipping the canary's label moves the
    exact kernel model's value at the canary by the full ``B_Delta``.
    """
    from dperm.prediction import PrivatePredictor

    canary = np.array([0.05])
    fit_epsilon = under_noised_epsilon(epsilon, noise_factor)

    def score(X, labels, classes, rng):
        predictor = PrivatePredictor(epsilon_total=fit_epsilon, epsilon_per_query=fit_epsilon, loss="hinge",
                                     alpha=2.0, gamma=1.0, classes=classes, random_state=rng)
        return float(predictor.fit(X, labels).decision_function(canary[None])[0])

    return _label_flip_audit(canary, score, epsilon, n_runs, confidence, random_state,
                             "PrivatePredictor(loss='hinge'), one answer", noise_factor)


#: The multiparty schemes :func:`audit_multiparty` audits.
_MULTIPARTY_KINDS = ("psgd", "psgd_coordinator_dp", "local_aggregation", "newton")


def audit_multiparty(kind, epsilon, delta=0.04, *, n_rounds=20, n_runs=1500, confidence=0.95,
                     noise_factor=1.0, random_state=None):
    """Audit a multiparty classifier's released model on a label-flip pair of two-party data.

    ``kind`` is ``"psgd"`` (:class:`dperm.PSGDClassifier`, (epsilon, delta)-DP,
    004 Thm 4.2), ``"psgd_coordinator_dp"`` (the same with ``coordinator_dp=True``:
    the coordinator's whole view is (epsilon, delta)-DP by dp-accounting's PLD
    accountant, and the released model is a post-processing of it) or
    ``"local_aggregation"`` (:class:`dperm.LocalAggregationClassifier`, pure DP)
    or ``"newton"`` (:class:`dperm.multiparty.NewtonClassifier`: the coordinator's
    view of ``n_rounds`` noisy gradient-and-Hessian sums is (epsilon, delta)-DP).
    The pair has 20 rows in all, so ``delta`` must stay below 1/20 (fits refuse
    ``delta >= 1/n``); the default 0.04 keeps a large delta, which the audit needs
    to see the Gaussian mechanisms' tails within ``n_runs`` runs.
    """
    from dperm.multiparty import LocalAggregationClassifier, NewtonClassifier, PSGDClassifier

    if kind not in _MULTIPARTY_KINDS:
        raise ValueError(f"kind must be one of {list(_MULTIPARTY_KINDS)}; got {kind!r}.")
    claimed_delta = 0.0 if kind == "local_aggregation" else delta
    fit_epsilon = under_noised_epsilon(epsilon, noise_factor)

    # The auditor sees the released model alone, a post-processing of the secure sums with no colluder:
    # collusion_threshold=0 makes that exactly the view the claimed (epsilon, delta) is calibrated for
    # (with t >= 1 the sum carries more noise than the claim needs, and an under-noised copy could hide).
    def make(noise):
        if kind.startswith("psgd"):
            return PSGDClassifier(epsilon=fit_epsilon, delta=delta, alpha=5.0, n_rounds=n_rounds,
                                  loss="huber", coordinator_dp=kind == "psgd_coordinator_dp",
                                  collusion_threshold=0, random_state=noise)
        if kind == "newton":
            return NewtonClassifier(epsilon=fit_epsilon, delta=delta, alpha=5.0, n_rounds=min(n_rounds, 5),
                                    loss="huber", collusion_threshold=0, random_state=noise)
        return LocalAggregationClassifier(epsilon=fit_epsilon, alpha=5.0, loss="huber", random_state=noise)

    def runner(flip):
        shards = collusion_shards(2, flip)  # two parties; the canary ends party 0's shard

        def run(rng):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = make(rng).fit(shards)
            return float(model.decision_function(np.array([[1.0]]))[0])
        return run

    return audit(runner(False), runner(True), None, epsilon, claimed_delta, n_runs=n_runs,
                 confidence=confidence, random_state=random_state,
                 label=under_noised_label(f"multiparty {kind}", noise_factor))
