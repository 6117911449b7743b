"""The public label set of a classifier: the ``classes`` parameter, checked in one place.

A classifier's label set is released (``classes_``, the model file) and, for
more than two labels, fixes the one-vs-rest split: ``n_problems`` binary
problems, each run at ``epsilon / n_problems`` (basic composition, Dwork &
Roth 2014, Thm 3.16). Differential privacy bounds what the output reveals
about one record only if everything that shapes the output is either noised
or fixed before the data is seen (Dwork & Roth 2014, Def. 2.4: the guarantee
compares the output distributions on neighbouring datasets). Read from the
data, the label set is neither: replacing one record by one of a rare class
changes ``classes_``, the shape of ``coef_`` and the epsilon per problem with
certainty, so no epsilon covers it (issue #14, finding 3).

Hence ``classes``: the *public* label set, given by the user. It alone sets
``classes_`` and the split; a training label outside it is an error, and a
label of the set that no training row carries is fine (its one-vs-rest
problem is fitted with every row negative, still a strongly convex ERM
problem, so the mechanisms' guarantees are unchanged). Without it, dperm
reads the set from the data as scikit-learn does, warns with a
:class:`~dperm.exceptions.PrivacyLeakWarning`, and the privacy record says the
label set is not covered.
"""

from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np

from dperm.exceptions import PrivacyLeakWarning, warn_at_caller

__all__ = ["LabelSet", "check_classes", "one_vs_rest_positives", "resolve_label_set",
           "warn_label_set_from_data"]


class LabelSet(NamedTuple):
    """The label set a fit uses and whether it is a public input."""

    classes: np.ndarray
    public: bool


def _label_kind(label) -> str | None:
    """``"text"`` or ``"number"`` for a usable label, ``None`` otherwise."""
    if isinstance(label, (str, np.str_)):
        return "text"
    if isinstance(label, numbers.Real) and np.isfinite(label):  # ints, bools, finite floats
        return "number"
    return None


def check_classes(classes, name: str = "classes", n_classes: int | None = None):
    """Check a public label set; return it sorted like :func:`numpy.unique`, or None.

    Runs with the other parameter checks, before any budget is spent.

    Parameters
    ----------
    classes : None or sequence of str or numbers
        The public labels. ``None`` means "read them from the data" (warned).
    name : str
        Parameter name used in error messages.
    n_classes : int, optional
        The exact number of labels required (2 for binary-only classifiers).

    Returns
    -------
    ndarray of shape (n_classes,) or None

    Raises
    ------
    ValueError
        If ``classes`` is a string or a mapping, not one-dimensional, holds a
        label that is not a string or a finite number, mixes strings and
        numbers, repeats a label, or has fewer than two labels (or not
        ``n_classes``).
    """
    if classes is None:
        return None
    if isinstance(classes, (str, bytes, dict)):
        raise ValueError(f"{name} must be a list of labels, e.g. {name}=['no', 'yes']; got {classes!r}.")
    labels = np.asarray(list(classes) if isinstance(classes, (set, frozenset)) else classes, dtype=object)
    if labels.ndim != 1:
        raise ValueError(f"{name} must be a flat list of labels; got an array of shape {labels.shape}.")
    kinds = [_label_kind(label) for label in labels]
    if None in kinds:
        bad = labels[kinds.index(None)]
        raise ValueError(f"{name} must hold strings or finite numbers; got {bad!r}.")
    if len(set(kinds)) > 1:
        raise ValueError(f"{name} mixes strings and numbers ({labels.tolist()}); use one type, "
                         "the type of the training labels.")
    unique = np.unique(np.asarray(labels.tolist()))
    if unique.size != labels.size:
        raise ValueError(f"{name} repeats a label ({labels.tolist()}); list each label once.")
    if unique.size < 2 or (n_classes is not None and unique.size != n_classes):
        needed = f"exactly {n_classes}" if n_classes is not None else "at least two"
        raise ValueError(f"{name} must list {needed} labels; got {labels.tolist()}.")
    return unique


def warn_label_set_from_data(name: str = "classes") -> None:
    """The :class:`~dperm.exceptions.PrivacyLeakWarning` of a label set read from the data,
    attributed to the user's line (:func:`~dperm.exceptions.warn_at_caller`)."""
    warn_at_caller(
        f"{name}=None: the label set (classes_ and the one-vs-rest split of epsilon) is read "
        "from the private training data and is NOT covered by the privacy guarantee; pass "
        f"the public label set, e.g. {name}=['no', 'yes'].",
        PrivacyLeakWarning,
    )


def resolve_label_set(classes, y, name: str = "classes") -> LabelSet:
    """The label set of a fit: the checked public ``classes``, or the data's (warned).

    Parameters
    ----------
    classes : ndarray or None
        The output of :func:`check_classes`.
    y : ndarray of shape (n_samples,)
        The training labels, already validated.
    name : str
        Parameter name used in messages.

    Raises
    ------
    ValueError
        If a training label is not in ``classes`` (one line naming the label
        and the parameter), or, without ``classes``, if ``y`` has one class.
    """
    if classes is None:
        observed = np.unique(y)
        if observed.size < 2:
            raise ValueError(
                f"y has {observed.size} class ({observed.tolist()}); a classifier needs at least two."
            )
        warn_label_set_from_data(name)
        return LabelSet(observed, public=False)
    outside = np.unique(np.asarray(y)[~np.isin(y, classes)])
    if outside.size:
        shown = ", ".join(repr(label) for label in outside[:5].tolist())
        more = f" and {outside.size - 5} more" if outside.size > 5 else ""
        label, it = ("labels", "them") if outside.size > 1 else ("label", "it")
        raise ValueError(
            f"y has {label} {shown}{more} not in {name}={classes.tolist()}; add {it} to {name} "
            "(the public label set) or remove those rows before fitting."
        )
    return LabelSet(classes, public=True)


def one_vs_rest_positives(classes: np.ndarray) -> np.ndarray:
    """The positive class of each binary problem: ``classes[1]`` for two labels, else each label."""
    return classes[1:] if classes.size == 2 else classes
