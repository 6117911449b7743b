"""``privacy_`` of :class:`~dperm.tuning.PrivateParameterSearch`."""

from __future__ import annotations

from dataclasses import dataclass

from dperm.privacy.references import REFERENCES
from dperm.privacy.release import DERIVED, NOISED, PUBLIC, RecordBase, privacy_record, released

__all__ = ["NO_STOPPING", "StoppingRule", "TuningRecord"]


@dataclass(frozen=True)
class StoppingRule:
    """The public law of random stopping's number of repetitions ``K`` (Papernot & Steinke 2022, Thm 2).

    Attributes
    ----------
    distribution : str
        ``"truncated_negative_binomial"``, or ``""`` (003 Alg. 4: no random stopping).
    shape, gamma, mean : float or None
        ``eta``, ``gamma`` of ``D_{eta, gamma}`` and its mean ``E[K]``; None for Alg. 4.
    """

    distribution: str = ""
    shape: float | None = None
    gamma: float | None = None
    mean: float | None = None


#: Alg. 4's (no random stopping).
NO_STOPPING = StoppingRule()


@privacy_record
class TuningRecord(RecordBase):
    """The guarantee of a :class:`PrivateParameterSearch` and how it was composed.

    Attributes
    ----------
    epsilon, delta : float
        The guarantee of the released model and the released parameters.
    n_candidates : int
        ``m``, the size of the public grid.
    part_sizes : tuple of int
        ``"alg4"``: rows in each of the ``m + 1`` disjoint parts (the last is
        for validation). ``"random_stopping"``: rows of the training and of the
        validation part of every repetition. A function of the public ``n``,
        ``m`` and ``validation_fraction`` only.
    selected_index : int
        The index in the grid of the released candidate (noised output).
    candidate_record : object
        ``privacy_`` of the selected model (trained on its part with the
        per-candidate epsilon).
    reference : str
    method : str
        ``"alg4"`` or ``"random_stopping"``.
    stopping_rule : StoppingRule
        One field, serialised as the keys ``stopping`` (``"truncated_negative_binomial"``
        for random stopping, ``""`` for Alg. 4), ``stopping_shape``, ``stopping_gamma`` and
        ``stopping_mean``: the public parameters ``eta``, ``gamma`` of the distribution of
        the number of repetitions ``K`` and its mean ``E[K]``. ``K`` itself is not released.
    per_repetition_epsilon, per_repetition_delta : float
        The guarantee of one repetition (train + noisy validation count);
        Alg. 4: of each candidate and of the selection.
    candidate_budgets : tuple of (float, float)
        ``(epsilon, delta)`` each grid candidate spends when trained (Alg. 4: on
        its own part; random stopping: on a training part), with
        ``mechanism="auto"`` resolved from the public part size as the candidate's
        own ``fit`` resolves it. A function of public inputs only. Alg. 4's
        ``delta`` is their largest (parallel composition); random stopping
        needs them all pure.
    """

    epsilon: float = released(PUBLIC)
    delta: float = released(PUBLIC)
    n_candidates: int = released(PUBLIC)
    part_sizes: tuple = released(PUBLIC)
    selected_index: int = released(NOISED)
    candidate_record: object = released(DERIVED)
    reference: str = released(PUBLIC, REFERENCES["tuning_alg4"])
    method: str = released(PUBLIC, "alg4")
    stopping_rule: StoppingRule = released(DERIVED, NO_STOPPING, embed=StoppingRule, names={
        "distribution": "stopping", "shape": "stopping_shape", "gamma": "stopping_gamma", "mean": "stopping_mean"})
    per_repetition_epsilon: float | None = released(DERIVED, None)
    per_repetition_delta: float | None = released(DERIVED, None)
    candidate_budgets: tuple = released(DERIVED, ())

    @property
    def label_set_public(self):
        """The selected candidate's ``label_set_public`` (None if its record has none)."""
        return getattr(self.candidate_record, "label_set_public", None)

    def summary(self) -> str:
        lines = [
            f"Guarantee: {self.guarantee} for the selected model and its parameters.",
            f"Procedure: {self.reference}.",
        ]
        if self.method == "random_stopping":
            lines.append(
                f"Random stopping: K ~ truncated negative binomial (eta={self.stopping_shape:g}, "
                f"gamma={self.stopping_gamma:.6g}, E[K]={self.stopping_mean:.4g}); each repetition "
                f"trains a uniformly drawn candidate on {self.part_sizes[0]} rows and counts its "
                f"mistakes on {self.part_sizes[1]} rows, both with epsilon="
                f"{self.per_repetition_epsilon:.6g}; K and the scores are not released; "
                f"selected candidate {self.selected_index}."
            )
        else:
            lines.append(
                f"{self.n_candidates} candidates each trained on its own part of "
                f"{list(self.part_sizes[:-1])} rows; validation part of {self.part_sizes[-1]} rows; "
                f"selected candidate {self.selected_index}."
            )
        if self.label_set_public is not None:
            lines.append("Label set: public (given)." if self.label_set_public else
                         "Label set: read from the training data; NOT covered by the guarantee.")
        return "\n".join(lines)
