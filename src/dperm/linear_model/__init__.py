"""Private linear models (scikit-learn estimators): classifiers, regressors and kernel classifiers.

The public names are the rows of :data:`dperm.ESTIMATORS` defined in this
package, imported on first use (PEP 562).
"""

from dperm import ESTIMATORS
from dperm._lazy import lazy_attributes

#: Public name -> the module that defines it (the rows of dperm.ESTIMATORS under this package).
_PUBLIC = {name: info.module for name, info in ESTIMATORS.items() if info.module.startswith(f"{__name__}.")}

__all__ = sorted(_PUBLIC)

__getattr__, __dir__ = lazy_attributes(__name__, _PUBLIC, globals())
