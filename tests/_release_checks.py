"""The neighbour-swap tests' view of a fit: what must not depend on the data.

Public API of :mod:`dperm.privacy.release` until issue 29 (what only the tests use
moved out of the library); the text is as it was there.
"""

from __future__ import annotations

from dperm.privacy.release import FITTED_ATTRIBUTES, NOISED, RecordBase, release_kinds, released_attributes


def non_noised(estimator) -> dict:
    """The released attributes and record fields that must not depend on the data.

    Everything :func:`~dperm.privacy.release.released_attributes` returns except ``NOISED`` attributes,
    with every record expanded to its fields (``privacy_.epsilon`` ...). Fits on
    neighbouring data sets with the same ``random_state`` must agree on all of
    it; the neighbour-swap tests check that.
    """
    out = {}
    for name, value in released_attributes(estimator).items():
        if FITTED_ATTRIBUTES[name.rsplit(".", 1)[-1]] == NOISED:
            continue
        if isinstance(value, RecordBase):
            kinds = release_kinds(value)
            for key, (field, _, _) in value._serialised_keys().items():
                if kinds[field] != NOISED:
                    out[f"{name}.{key}"] = getattr(value, key)
        else:
            out[name] = value
    return out
