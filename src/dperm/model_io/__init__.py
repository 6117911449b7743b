"""Model files: JSON with coefficients, the public schema and the privacy record.

:func:`load_model` reads every format in the table of formats: this package's
own ``dperm-model`` (every estimator family ``dperm train`` fits: linear
classifiers, linear regressors and random-Fourier-feature classifiers) and the
multiparty format written by ``dperm coordinate``, which
:mod:`dperm.multiparty.model_file` registers (:func:`register_format`); the
first file of that format imports it by name (:data:`FORMAT_MODULES`), so this
package never imports ``dperm.multiparty``.

A model file never contains training rows. Loading checks the schema and the
shapes, so a malformed, truncated or tampered file gets a clear ValueError
instead of a model that predicts garbage.

A ``dperm-model`` file cannot lie quietly about its guarantee: loading rebuilds
the privacy record a fit with the file's public inputs (``params``, ``n``, the
number of features and problems) would write, with the library's own
calibration functions (:meth:`~dperm.linear_model._base.PrivateLinearModelBase._public_record`),
and refuses a file whose recorded numbers differ, naming the first field
(:func:`check_calibration`); every released coefficient must lie on the grid
that calibration releases on (:func:`check_on_grid`). An edit of a public
input *together with* everything derived from it is consistent and cannot be
detected that way: the file's ``digest`` (:func:`document_digest`, SHA-256 of
the canonical JSON) lets a reader match the digest its publisher printed
(``dperm show --expect-digest``). A digest is not a signature: whoever can
edit the file can recompute it; it detects accidental or naive edits and a
file that differs from the one published.

One job per module: ``_formats`` (the table of formats and :func:`load_model`),
``_digest`` (the content digest), ``_linear`` (the ``dperm-model`` format,
registered on import) and ``_checks`` (a ``dperm-model`` file's guarantee
recomputed from its public inputs).
"""

from dperm.model_io._checks import CALIBRATION_RTOL, check_calibration, check_on_grid
from dperm.model_io._digest import check_digest, document_digest, with_digest
from dperm.model_io._formats import (
    FORMAT_MODULES,
    ModelFormat,
    describe_model,
    finite_array,
    load_model,
    register_format,
)
from dperm.model_io._linear import (
    CLASSIFIERS,
    ESTIMATORS,
    KERNEL_CLASSIFIERS,
    READABLE_VERSIONS,
    REGRESSORS,
    REQUIRED_KEYS,
    model_from_dict,
    model_to_dict,
    save_model,
)

__all__ = [
    "CALIBRATION_RTOL", "CLASSIFIERS", "ESTIMATORS", "FORMAT_MODULES", "KERNEL_CLASSIFIERS",
    "ModelFormat", "READABLE_VERSIONS", "REGRESSORS", "REQUIRED_KEYS", "check_calibration",
    "check_digest", "check_on_grid", "describe_model", "document_digest", "finite_array",
    "load_model", "model_from_dict", "model_to_dict", "register_format", "save_model",
    "with_digest",
]
