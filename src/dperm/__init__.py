"""dperm: differentially private empirical risk minimisation.

Public names only; see the submodules for the mechanisms and their papers.
"""

from dperm.exceptions import (
    CertificateError,
    DataClippingWarning,
    OptimalityCertificateWarning,
    PrivacyLeakWarning,
)
from dperm.linear_model import PrivateLinearSVC, PrivateLogisticRegression
from dperm.privacy.record import PrivacyRecord

__version__ = "0.1.0"

__all__ = [
    "CertificateError",
    "DataClippingWarning",
    "OptimalityCertificateWarning",
    "PrivacyLeakWarning",
    "PrivacyRecord",
    "PrivateLinearSVC",
    "PrivateLogisticRegression",
    "__version__",
]
