"""``privacy_`` of :class:`~dperm.tuning.PrivateParameterSearch`."""

from __future__ import annotations

from dperm.privacy.references import REFERENCES
from dperm.privacy.release import NOISED, PUBLIC, DERIVED, RecordBase, describe_guarantee, privacy_record, released


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
        Rows in each of the ``m + 1`` disjoint parts (the last is for
        validation): a function of the public ``n`` and ``m`` only.
    selected_index : int
        The exponential mechanism's choice (noised output).
    candidate_record : object
        ``privacy_`` of the selected model (trained on its part with ``epsilon``).
    reference : str
    """

    epsilon: float = released(PUBLIC)
    delta: float = released(PUBLIC)
    n_candidates: int = released(PUBLIC)
    part_sizes: tuple = released(PUBLIC)
    selected_index: int = released(NOISED)
    candidate_record: object = released(DERIVED)
    reference: str = released(PUBLIC, REFERENCES["tuning_alg4"])

    @property
    def guarantee(self) -> str:
        return describe_guarantee(self.epsilon, self.delta)

    @property
    def label_set_public(self):
        """The selected candidate's ``label_set_public`` (None if its record has none)."""
        return getattr(self.candidate_record, "label_set_public", None)

    def summary(self) -> str:
        lines = [
            f"Guarantee: {self.guarantee} for the selected model and its parameters.",
            f"Procedure: {self.reference}.",
            f"{self.n_candidates} candidates each trained on its own part of "
            f"{list(self.part_sizes[:-1])} rows; validation part of {self.part_sizes[-1]} rows; "
            f"selected candidate {self.selected_index}.",
        ]
        if self.label_set_public is not None:
            lines.append("Label set: public (given)." if self.label_set_public else
                         "Label set: read from the training data; NOT covered by the guarantee.")
        return "\n".join(lines)
