"""dperm: differentially private empirical risk minimisation.

Public names only; see the submodules for the mechanisms and their papers.
Comments and docstrings cite the papers by number (003, 004, 000, 002) and the
notes on them as "paper note N": section N of docs/paper_notes.md.
The names are imported on first use (PEP 562), so ``import dperm`` and the
``dperm`` command line start without importing scikit-learn or SciPy.

:data:`ESTIMATORS` is dperm's one table of estimators: the public estimator
names, :mod:`dperm.linear_model`'s names and the model files' estimators
(:mod:`dperm.model_io`) are read from it, and the tests' estimator list
(``tests/conftest.py``) is checked against it.
"""

import importlib
from dataclasses import dataclass

__version__ = "0.1.0"


@dataclass(frozen=True)
class EstimatorInfo:
    """Where a public estimator lives and how a model file stores it.

    Attributes
    ----------
    module : str
        The module ``dperm.<name>`` imports it from on first use. For an estimator
        of :mod:`dperm.linear_model`, the module that defines it: the package
        exports every row under it, so a new estimator needs no other line.
    model_file : {"classifier", "regressor", "kernel"} or None
        Its layout in a ``dperm-model`` file (:mod:`dperm.model_io`): one row of
        coefficients per problem and the labels; one coefficient vector and one
        intercept; or the linear model on public random Fourier features.
        ``None``: not written by :func:`dperm.model_io.save_model`.
    """

    module: str
    model_file: str | None = None


#: Every estimator a user imports, by class name, in the order the docs list them.
ESTIMATORS = {
    "PrivateLogisticRegression": EstimatorInfo("dperm.linear_model._logistic", "classifier"),
    "PrivateLinearSVC": EstimatorInfo("dperm.linear_model._svc", "classifier"),
    "PrivateLeastSquares": EstimatorInfo("dperm.linear_model._regression", "regressor"),
    "PrivateQuantileRegressor": EstimatorInfo("dperm.linear_model._regression", "regressor"),
    "PrivateRobustRegressor": EstimatorInfo("dperm.linear_model._regression", "regressor"),
    "PrivateKernelLogisticRegression": EstimatorInfo("dperm.linear_model._kernel", "kernel"),
    "PrivateKernelSVC": EstimatorInfo("dperm.linear_model._kernel", "kernel"),
    "PrivatePredictor": EstimatorInfo("dperm.prediction"),
    "PrivateParameterSearch": EstimatorInfo("dperm.tuning"),
    "LocalAggregationClassifier": EstimatorInfo("dperm.multiparty"),
    "PSGDClassifier": EstimatorInfo("dperm.multiparty"),
    "NewtonClassifier": EstimatorInfo("dperm.multiparty"),
}

#: Public name -> the module that defines it: the estimators, then the other public names.
_PUBLIC = {
    **{name: info.module for name, info in ESTIMATORS.items()},
    "BudgetAccountant": "dperm.privacy.accounting",
    "BudgetExceededError": "dperm.exceptions",
    "BudgetWarning": "dperm.exceptions",
    "CertificateError": "dperm.exceptions",
    "DataClippingWarning": "dperm.exceptions",
    "PrivacyLeakWarning": "dperm.exceptions",
    "WeakGuaranteeWarning": "dperm.exceptions",
    "NoiseSwampsSignalError": "dperm.exceptions",
    "RandomFourierFeatures": "dperm.kernels",
    "PrivacyRecord": "dperm.privacy.record",
}

__all__ = sorted([*_PUBLIC, "ESTIMATORS", "EstimatorInfo", "__version__"])


def __getattr__(name):
    if name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name]), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    raise AttributeError(f"module 'dperm' has no attribute {name!r}")


def __dir__():
    return __all__
