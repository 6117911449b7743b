"""dperm: differentially private empirical risk minimisation.

Public names only; see the submodules for the mechanisms and their papers.
Comments and docstrings cite the papers by number (003, 004, 000, 002) and the
notes on them as "paper note N": section N of docs/paper_notes.md.
The names are imported on first use (PEP 562), so ``import dperm`` and the
``dperm`` command line start without importing scikit-learn or SciPy.
"""

import importlib

__version__ = "0.1.0"

#: Public name -> the module that defines it.
_PUBLIC = {
    "BudgetAccountant": "dperm.privacy.accounting",
    "BudgetExceededError": "dperm.exceptions",
    "BudgetWarning": "dperm.exceptions",
    "CertificateError": "dperm.exceptions",
    "DataClippingWarning": "dperm.exceptions",
    "PrivacyLeakWarning": "dperm.exceptions",
    "WeakGuaranteeWarning": "dperm.exceptions",
    "NoiseSwampsSignalError": "dperm.exceptions",
    "RandomFourierFeatures": "dperm.kernels",
    "PrivateKernelLogisticRegression": "dperm.linear_model",
    "PrivateKernelSVC": "dperm.linear_model",
    "PrivateLeastSquares": "dperm.linear_model",
    "PrivateLinearSVC": "dperm.linear_model",
    "PrivateLogisticRegression": "dperm.linear_model",
    "PrivateQuantileRegressor": "dperm.linear_model",
    "LocalAggregationClassifier": "dperm.multiparty",
    "NewtonClassifier": "dperm.multiparty",
    "PSGDClassifier": "dperm.multiparty",
    "PrivatePredictor": "dperm.prediction",
    "PrivacyRecord": "dperm.privacy.record",
    "PrivateParameterSearch": "dperm.tuning",
}

__all__ = sorted([*_PUBLIC, "__version__"])


def __getattr__(name):
    if name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name]), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    raise AttributeError(f"module 'dperm' has no attribute {name!r}")


def __dir__():
    return __all__
