"""``dperm evaluate`` (private scores of a model file) and ``dperm report`` (the model card)."""

import json

import numpy as np
import pytest

from dperm.cli import main
from dperm.privacy.evaluation import EvaluationPrivacyRecord


def _table(path, n, seed, label_rule=True):
    rng = np.random.default_rng(seed)
    lines = ["age,color,label"]
    for _ in range(n):
        age = int(rng.integers(18, 90))
        label = "yes" if (age > 50) == label_rule else "no"
        lines.append(f"{age},{rng.choice(['red', 'blue'])},{label}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture()
def trained(tmp_path):
    (tmp_path / "bounds.json").write_text(json.dumps({"age": [0, 120], "color": ["red", "green", "blue"]}))
    train = _table(tmp_path / "train.csv", 3000, 0)
    model = tmp_path / "model.json"
    assert main(["train", "--data", str(train), "--target", "label", "--categorical", "color", "--bounds",
                 str(tmp_path / "bounds.json"), "--classes", "no,yes", "--epsilon", "3", "--out", str(model)]) == 0
    return tmp_path, model


def test_evaluate_releases_a_noised_accuracy_and_its_record(trained, capsys):
    tmp_path, model = trained
    test = _table(tmp_path / "test.csv", 2000, 1)
    capsys.readouterr()
    assert main(["evaluate", "--model", str(model), "--data", str(test), "--epsilon", "1",
                 "--out", str(tmp_path / "eval.json")]) == 0
    assert "private accuracy =" in capsys.readouterr().out
    record = EvaluationPrivacyRecord.from_dict(json.loads((tmp_path / "eval.json").read_text()))
    assert record.metric == "accuracy" and record.epsilon == 1.0 and record.n_samples == 2000
    assert record.value > 0.75  # the rule is learnable; the noise on 2000 rows at epsilon 1 is ~0.0007


def test_evaluate_refuses_a_regression_metric_for_a_classifier_and_a_missing_target(trained, capsys):
    tmp_path, model = trained
    test = _table(tmp_path / "test.csv", 50, 1)
    assert main(["evaluate", "--model", str(model), "--data", str(test), "--epsilon", "1", "--metric", "r2"]) == 2
    assert "--metric r2 does not fit" in capsys.readouterr().err
    (tmp_path / "nolabel.csv").write_text("age,color\n30,red\n", encoding="utf-8")
    assert main(["evaluate", "--model", str(model), "--data", str(tmp_path / "nolabel.csv"), "--epsilon", "1"]) == 2
    assert "target column 'label'" in capsys.readouterr().err


def test_report_builds_the_card_from_the_model_file_and_evaluations_only(trained, capsys):
    tmp_path, model = trained
    test = _table(tmp_path / "test.csv", 500, 2)
    main(["evaluate", "--model", str(model), "--data", str(test), "--epsilon", "0.5", "--out",
          str(tmp_path / "eval.json")])
    main(["evaluate", "--model", str(model), "--data", str(test), "--epsilon", "0.5", "--metric",
          "confusion_matrix", "--out", str(tmp_path / "cm.json")])
    card_path = tmp_path / "card.md"
    assert main(["report", "--model", str(model), "--evaluation", str(tmp_path / "eval.json"),
                 "--evaluation", str(tmp_path / "cm.json"), "--out", str(card_path)]) == 0
    card = card_path.read_text(encoding="utf-8")
    document = json.loads(model.read_text())
    assert document["digest"] in card
    assert "| age | numbers in [0, 120], clipped to it |" in card
    assert "| color | one of red, green, blue |" in card
    assert "| accuracy |" in card and "| confusion_matrix |" in card
    assert "Model and evaluations together: 4-DP" in card  # 3 (model) + 0.5 + 0.5
    for name, value in document["privacy"].items():
        if isinstance(value, str) and name not in {"reference"}:
            assert f"| {name} | {value} |" in card
    # the test rows' exact accuracy appears nowhere: only the released, noised value
    released = json.loads((tmp_path / "eval.json").read_text())["value"]
    assert f"{released:.4g}" in card


def test_report_names_a_bad_evaluation_file(trained, capsys):
    tmp_path, model = trained
    (tmp_path / "bad.json").write_text("{}", encoding="utf-8")
    assert main(["report", "--model", str(model), "--evaluation", str(tmp_path / "bad.json")]) == 2
    assert "bad.json: not an evaluation record" in capsys.readouterr().err
    assert main(["report", "--model", str(model), "--evaluation", str(tmp_path / "missing.json")]) == 2
    assert "missing.json: no such evaluation file" in capsys.readouterr().err
