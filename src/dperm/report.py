"""A model card: one Markdown page a reviewer reads before a private model is published.

It puts together what a model file already carries (the estimator, the public
schema, the privacy record, the digest) and the records of private evaluations
(:mod:`dperm.metrics`, ``dperm evaluate``), and adds up the budget. Every value
on the page is public input, noised output, or derived from those two: the card
is built from the model file and the evaluation records alone, never from data.
"""

from __future__ import annotations

import json
import math

from dperm.privacy.evaluation import EvaluationPrivacyRecord
from dperm.privacy.release import describe_guarantee

__all__ = ["load_evaluation", "model_card"]

#: Record fields shown in the card's calibration table (all of them, in the record's order), less
#: the long texts shown elsewhere.
_TEXT_FIELDS = {"protects", "reference", "summary"}


def load_evaluation(path) -> EvaluationPrivacyRecord:
    """Read an evaluation record written by ``dperm evaluate --out``; one-line errors name the file."""
    try:
        with open(path, encoding="utf-8") as handle:
            return EvaluationPrivacyRecord.from_dict(json.load(handle))
    except FileNotFoundError:
        raise ValueError(f"{path}: no such evaluation file; write one with dperm evaluate --out.") from None
    except (json.JSONDecodeError, ValueError, TypeError) as error:
        raise ValueError(f"{path}: not an evaluation record written by dperm evaluate ({error}).") from None


def _schema_rows(spec: dict) -> list[str]:
    rows = ["| feature | public domain |", "| --- | --- |"]
    for column in spec.get("columns", []):
        if column.get("type") == "categorical":
            domain = "one of " + ", ".join(str(c) for c in column["categories"])
        elif "lower" in column:
            domain = f"numbers in [{column['lower']:g}, {column['upper']:g}], clipped to it"
        else:
            domain = "numbers (no public range)"
        rows.append(f"| {column['name']} | {domain} |")
    return rows


def _value(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, tuple)) and len(value) > 8:
        return f"{len(value)} values"
    return str(value)


def _calibration_rows(privacy: dict) -> list[str]:
    rows = ["| field | value |", "| --- | --- |"]
    for name, value in privacy.items():
        if name not in _TEXT_FIELDS and not isinstance(value, dict):
            rows.append(f"| {name} | {_value(value)} |")
    return rows


def _evaluation_section(evaluations) -> list[str]:
    if not evaluations:
        return ["No private evaluation is attached. A score computed on private test rows "
                "without noise must not be published; see `dperm evaluate`."]
    lines = ["| metric | released value | guarantee | held-out rows | noise scale |",
             "| --- | --- | --- | --- | --- |"]
    for record in evaluations:
        value = record.value if isinstance(record.value, (list, tuple)) else f"{record.value:.4g}"
        scales = ", ".join(f"{s:.3g}" for s in record.noise_scales)
        lines.append(f"| {record.metric} | {value} | {describe_guarantee(record.epsilon, record.delta)} "
                     f"| {record.n_samples} | {scales} |")
    return lines


def _total(privacy: dict, evaluations) -> str:
    epsilon = float(privacy.get("epsilon", math.nan)) + sum(r.epsilon for r in evaluations)
    delta = float(privacy.get("delta", 0.0)) + sum(r.delta for r in evaluations)
    return describe_guarantee(epsilon, delta)


def model_card(document: dict, summary: str = "", evaluations=()) -> str:
    """The card, in Markdown, for a model file's ``document`` and evaluation records.

    Parameters
    ----------
    document : dict
        A model file as read by :func:`dperm.model_io.load_model` (its digest checked).
    summary : str
        The model's ``privacy_.summary()``.
    evaluations : sequence of EvaluationPrivacyRecord

    Returns
    -------
    str
    """
    privacy = document["privacy"]
    target = document.get("target")
    classes = document.get("classes")
    what = f"classes {classes}" if classes is not None else "a numeric target"
    lines = [
        f"# Model card: {document['estimator']} predicting {target!r}",
        "",
        "## What is published",
        "",
        f"- model file digest: `{document.get('digest', 'none')}` (check a copy with "
        "`dperm show --model FILE --expect-digest DIGEST`)",
        f"- estimator: {document['estimator']}, {what}, "
        f"{len(document['spec'].get('columns', []))} input columns",
        "",
        "## Privacy guarantee",
        "",
        f"**{describe_guarantee(privacy['epsilon'], privacy.get('delta', 0.0))}** for the released "
        "model, with respect to replacing one training record (the number of training rows, "
        f"{privacy.get('n_samples', 'n')}, is public).",
        "",
    ]
    if summary:
        lines += ["```", summary, "```", ""]
    if document.get("schema_from_data"):
        lines += [f"**Not covered:** the bounds or categories of {document['schema_from_data']} were "
                  "read from the training data.", ""]
    lines += ["## Public inputs: the data schema", "", *_schema_rows(document["spec"]), "",
              "## Calibration (the privacy record)", "", *_calibration_rows(privacy), "",
              "## Private evaluation", "", *_evaluation_section(evaluations), "",
              "## Total", "",
              f"Model and evaluations together: {_total(privacy, evaluations)} by basic composition "
              "(an upper bound; when the test rows are disjoint from the training rows, each row "
              "is covered by the larger of the two parts).", "",
              "## What this card does not cover", "",
              "The assumptions behind these numbers (public bounds, replace-one neighbours, one "
              "trusted curator, floating point, what is not released) are listed in "
              "docs/limitations.md (`python -m dperm.documentation docs/limitations.md`)."]
    return "\n".join(lines) + "\n"
