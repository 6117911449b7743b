"""scripts/replay.py, the tool that proves a refactoring changed no released value (issue 29)."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "replay.py"


@pytest.fixture(scope="module")
def replay():
    spec = importlib.util.spec_from_file_location("replay", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_array_digest_sees_dtype_and_shape_not_only_bytes(replay):
    values = np.arange(4, dtype=np.int64)
    assert replay.array_digest(values) == replay.array_digest(values.copy())
    assert replay.array_digest(values) != replay.array_digest(values.reshape(2, 2))
    assert replay.array_digest(values) != replay.array_digest(values.view(np.float64))
    assert replay.array_digest(np.asfortranarray(np.eye(2))) == replay.array_digest(np.eye(2))


def test_timings_are_left_out_and_nothing_else(replay):
    one = {"seconds": 1.0, "rows": [{"cpu_seconds": 2.0, "error": 0.25}]}
    other = {"seconds": 3.0, "rows": [{"cpu_seconds": 4.0, "error": 0.25}]}
    assert replay.json_digest(one, timings=False) == replay.json_digest(other, timings=False)
    assert replay.json_digest(one) != replay.json_digest(other)
    other["rows"][0]["error"] = 0.5
    assert replay.json_digest(one, timings=False) != replay.json_digest(other, timings=False)


def test_a_case_is_reproducible_and_sees_a_different_seed(replay):
    first = replay.run_cases(only="estimator/logistic-objective", stream=None)
    again = replay.run_cases(only="estimator/logistic-objective", stream=None)
    assert first == again and set(first) == {"estimator/logistic-objective"}
    fields = first["estimator/logistic-objective"]
    assert {"coef_", "intercept_", "privacy.json", "privacy.str", "model_file"} <= set(fields)
    from dperm import PrivateLogisticRegression

    X, y = replay.classification_data()
    reseeded = replay.fit_and_save(PrivateLogisticRegression(mechanism="objective", alpha=0.05, classes=[0, 1],
                                                             random_state=99), X, y)
    assert reseeded["coef_"] != fields["coef_"] and reseeded["privacy.json"] == fields["privacy.json"]


def test_compare_reports_changed_missing_and_errors_and_exits_1(replay, tmp_path, capsys):
    before = {"a": {"coef_": "1", "privacy.json": "2"}, "b": {"coef_": "3"}, "c": {"coef_": "4"}}
    after = {"a": {"coef_": "1", "privacy.json": "X"}, "b": {"error": "ValueError: boom"}, "d": {"coef_": "5"}}
    rows, same = replay.compare(before, after)
    assert not same
    assert rows == [("a", "coef_", "same"), ("a", "privacy.json", "CHANGED"), ("b", "coef_", "missing in B"),
                    ("b", "error", "ERROR in B"), ("c", "*", "missing in B"), ("d", "*", "missing in A")]
    paths = []
    for name, document in (("before", before), ("after", after)):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(document))
    assert replay.main(["--compare", *map(str, paths)]) == 1
    assert "| a | privacy.json | CHANGED |" in capsys.readouterr().out
    assert replay.main(["--compare", str(paths[0]), str(paths[0])]) == 0
    assert replay.main(["--compare", *map(str, paths), "--only", "a"]) == 1  # a's record changed
