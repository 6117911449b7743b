"""Tests of dperm.tabular: the public table schema, the CSV reader and the cell parser."""

import json
import math
import warnings

import numpy as np
import pytest

from dperm import DataClippingWarning
from dperm.tabular import (
    CategoricalColumn,
    NumericColumn,
    RawNumericColumn,
    TableCellError,
    TabularSpec,
    build_spec,
    find_missing_rows,
    finite_numbers,
    parse_labels,
    parse_numbers,
    read_bounds_file,
    read_csv_columns,
)


@pytest.fixture
def no_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


# ---------------------------------------------------------------- TabularSpec


def small_spec(**kwargs) -> TabularSpec:
    kwargs.setdefault("row_norm_mode", "constant")
    return TabularSpec(
        [
            NumericColumn("age", 17, 90),
            NumericColumn("gain", 0, 99_999, transform="log1p"),
            CategoricalColumn("sex", ["Female", "Male"]),
        ],
        **kwargs,
    )


def test_spec_round_trips_through_dict_and_json():
    spec = small_spec(row_norm_mode="scale", data_norm=2.0)
    as_dict = spec.to_dict()
    assert TabularSpec.from_dict(as_dict) == spec
    text = spec.to_json(indent=2)
    assert json.loads(text) == as_dict
    assert TabularSpec.from_json(text) == spec


def test_spec_describes_its_features():
    spec = small_spec()
    assert spec.feature_names() == ["age", "log1p(gain)", "sex=Female", "sex=Male"]
    assert spec.n_features == 4
    assert spec.column_names == ["age", "gain", "sex"]
    assert spec.max_row_norm() == pytest.approx(math.sqrt(3))


def test_spec_transform_scales_clips_and_one_hots():
    spec = small_spec(row_norm_mode="clip", data_norm=10.0)
    columns = {
        "age": [" 53.5", "100", "17"],
        "gain": ["0", "99999", "9"],
        "sex": ["Male ", "Female", "Unknown"],
        "label": ["ignored", "ignored", "ignored"],
    }
    with pytest.warns(DataClippingWarning, match=r"1 in 'age'"):
        X = spec.transform(columns)
    expected_gain = math.log1p(9) / math.log1p(99_999)
    np.testing.assert_allclose(
        X,
        [[0.5, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 0.0], [0.0, expected_gain, 0.0, 0.0]],
    )


def test_spec_row_modes_bound_the_norm(no_warnings):
    columns = {"age": [90, 17], "gain": [99_999, 0], "sex": ["Male", "Other"]}
    constant = small_spec(row_norm_mode="constant").transform(columns)
    np.testing.assert_allclose(np.linalg.norm(constant, axis=1), [1.0, 0.0], atol=1e-12)
    scaled = small_spec(row_norm_mode="scale", data_norm=3.0).transform(columns)
    # The second row encodes to all zeros and stays zero.
    np.testing.assert_allclose(np.linalg.norm(scaled, axis=1), [3.0, 0.0])


def test_spec_clip_mode_warns_when_rows_are_clipped():
    columns = {"age": [90], "gain": [99_999], "sex": ["Male"]}
    with pytest.warns(DataClippingWarning, match="some rows"):
        X = small_spec(row_norm_mode="clip", data_norm=1.0).transform(columns)
    assert np.linalg.norm(X) == pytest.approx(1.0)


def test_spec_missing_numeric_value_names_column_and_row():
    columns = {"age": ["20", "?", "30"], "gain": ["0", "0", ""], "sex": ["Male"] * 3}
    with pytest.raises(TableCellError) as caught:
        small_spec().transform(columns, source="people.csv")
    message = str(caught.value)
    assert message.startswith("people.csv: column 'age', data row 2 (1-based")
    assert '"fill"' in message and "never drops a row" in message and "\n" not in message
    assert (caught.value.column, caught.value.row) == ("age", 1)


@pytest.mark.parametrize("cell", ["?", "", "  ", "nan", None, float("nan")])
def test_spec_every_missing_marker_is_an_error_without_a_fill(cell):
    columns = {"age": np.array(["20", cell], dtype=object), "gain": ["0", "0"],
               "sex": ["Male", "Male"]}
    with pytest.raises(TableCellError, match=r"column 'age', data row 2 .*missing"):
        small_spec().transform(columns)


def _filled_spec():
    return TabularSpec(
        [
            NumericColumn("age", 17, 90, fill=53.5),
            CategoricalColumn("sex", ["Female", "Male"]),
            CategoricalColumn("job", ["a", "b", "?"]),
        ],
        row_norm_mode="constant",
    )


def test_spec_never_drops_a_row_and_uses_the_public_fill(no_warnings):
    columns = {
        "age": np.array([20.0, np.nan, 30.0, 53.5]),
        "sex": np.array(["Male", "", None, "Female"], dtype=object),
        "job": ["a", "?", "", "b"],
    }
    X = _filled_spec().transform(columns)
    assert X.shape == (4, 6)  # one row out per row in: n never depends on the data
    scale = 1 / math.sqrt(3)
    np.testing.assert_allclose(X[1, 0], (53.5 - 17) / (90 - 17) * scale)  # the fill
    np.testing.assert_array_equal(X[1:3, 1:3], 0.0)  # missing sex: the all-zero block
    np.testing.assert_allclose(X[1, 3:], [0, 0, scale])  # "?" listed: its own category
    np.testing.assert_array_equal(X[2, 3:], 0.0)  # "" not listed: the all-zero block


def test_neighbours_with_a_missing_cell_encode_to_the_same_number_of_rows(no_warnings):
    # replace-one neighbours: D' replaces D's last row by one with missing cells
    D = {"age": ["20", "30", "40"], "sex": ["Male", "Female", "Male"], "job": ["a", "b", "b"]}
    D_prime = {"age": ["20", "30", "?"], "sex": ["Male", "Female", ""], "job": ["a", "b", ""]}
    X, X_prime = _filled_spec().transform(D), _filled_spec().transform(D_prime)
    assert X.shape == X_prime.shape == (3, 6)
    np.testing.assert_array_equal(X[:2], X_prime[:2])


@pytest.mark.parametrize("fill, message", [
    (100.0, r"fill value 100.0 must lie within its public bounds \[17, 90\]"),
    ("40", "fill value must be a finite number"),
    (float("inf"), "fill value must be a finite number"),
])
def test_numeric_fill_must_be_a_public_value_inside_the_bounds(fill, message):
    with pytest.raises(ValueError, match=message):
        NumericColumn("age", 17, 90, fill=fill)


def test_fill_round_trips_and_is_absent_when_unset():
    spec = _filled_spec()
    assert spec.to_dict()["columns"][0]["fill"] == 53.5
    assert TabularSpec.from_json(spec.to_json()) == spec
    assert "fill" not in small_spec().to_dict()["columns"][0]


def test_bounds_file_entry_gives_the_fill():
    spec, from_data = build_spec({"age": ["20", "?"]}, ["age"],
                                 public_bounds={"age": {"lower": 0, "upper": 100, "fill": 50}})
    assert from_data == [] and spec.columns[0].fill == 50.0
    np.testing.assert_allclose(spec.transform({"age": ["20", "?"]}), [[0.2], [0.5]])
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['fil'\]"):
        build_spec({"age": ["1"]}, ["age"],
                   public_bounds={"age": {"lower": 0, "upper": 1, "fil": 0}})


@pytest.mark.parametrize("cell", ["", " ", "?", None, float("nan")])
def test_a_missing_label_is_an_error_not_a_class(cell):
    with pytest.raises(TableCellError) as caught:
        parse_labels(np.array(["yes", "no", cell], dtype=object), "label", source="t.csv")
    assert str(caught.value).startswith("t.csv: column 'label', data row 3 (1-based")
    assert "not a class" in str(caught.value)
    assert parse_labels([" yes", "no "], "label").tolist() == ["yes", "no"]


def test_find_missing_rows_marks_rows_for_a_public_dataset_only():
    columns = {"age": np.array([20.0, np.nan]), "sex": ["Male", "?"]}
    assert find_missing_rows(columns, ["sex"]).tolist() == [False, True]
    assert find_missing_rows(columns).tolist() == [False, True]


def test_spec_unparsable_number_is_reported():
    with pytest.raises(TableCellError, match=r"column 'age', data row 1 .*'old' is not a number"):
        small_spec().transform({"age": ["old"], "gain": ["0"], "sex": ["Male"]})


@pytest.mark.parametrize(
    "columns, message",
    [
        ({"age": [1], "sex": ["Male"]}, r"missing column\(s\) \['gain'\]"),
        ({"age": [20, 30], "gain": [0], "sex": ["Male"]}, "same length"),
        ({"age": [[20]], "gain": [0], "sex": ["Male"]}, "1-D"),
        ([[20, 0, "Male"]], "dict"),
    ],
)
def test_spec_rejects_malformed_input(columns, message):
    with pytest.raises(ValueError, match=message):
        small_spec().transform(columns)


def _valid_spec_dict():
    return small_spec().to_dict()


def _edited(edit):
    spec = _valid_spec_dict()
    edit(spec)
    return spec


@pytest.mark.parametrize(
    "spec, message",
    [
        ([], "must be a dict"),
        ({"row_norm_mode": "clip"}, r"missing key\(s\) \['columns'\]"),
        (_edited(lambda s: s.update(extra=1)), r"unknown key\(s\) \['extra'\]"),
        (_edited(lambda s: s.update(columns="age")), "list of column dicts"),
        (_edited(lambda s: s.update(columns=[])), "at least one column"),
        (_edited(lambda s: s["columns"].append(3)), r"columns\[3\] must be a dict"),
        (_edited(lambda s: s["columns"][0].update(type="date")), r"columns\[0\] 'type'"),
        (_edited(lambda s: s["columns"][0].pop("upper")), r"missing key\(s\) \['upper'\]"),
        (_edited(lambda s: s["columns"][0].update(bound=1)), r"unknown key\(s\) \['bound'\]"),
        (_edited(lambda s: s["columns"][0].update(lower=90)), "lower < upper"),
        (_edited(lambda s: s["columns"][0].update(upper="90")), "finite number"),
        (_edited(lambda s: s["columns"][0].update(upper=float("nan"))), "finite number"),
        (_edited(lambda s: s["columns"][0].update(name="")), "non-empty string"),
        (_edited(lambda s: s["columns"][1].update(transform="log")), "transform"),
        (_edited(lambda s: s["columns"][1].update(lower=-2)), "lower > -1"),
        (_edited(lambda s: s["columns"][2].update(categories="Male")), "list of strings"),
        (_edited(lambda s: s["columns"][2].update(categories=[])), "no categories"),
        (_edited(lambda s: s["columns"][2].update(categories=["a", "a"])), "duplicate"),
        (_edited(lambda s: s["columns"][2].update(categories=[1, 2])), "must be strings"),
        (_edited(lambda s: s["columns"][2].update(name="age")), "unique"),
        (_edited(lambda s: s.update(row_norm_mode="l2")), "row_norm_mode"),
        (_edited(lambda s: s.update(data_norm=0)), "data_norm"),
        (_edited(lambda s: s.update(format="other")), "format"),
        (_edited(lambda s: s.update(version=2)), "version"),
    ],
)
def test_spec_from_dict_rejects_malformed_input(spec, message):
    with pytest.raises(ValueError, match=message):
        TabularSpec.from_dict(spec)


def test_spec_from_json_rejects_invalid_json():
    with pytest.raises(ValueError, match="could not be parsed"):
        TabularSpec.from_json("{not json")


# ---------------------------------------------------------------- RawNumericColumn


def raw_spec(**kwargs) -> TabularSpec:
    return TabularSpec([RawNumericColumn("x0"), NumericColumn("age", 0, 100), RawNumericColumn("x1")], **kwargs)


def test_raw_numeric_column_takes_values_as_they_are(no_warnings):
    columns = {"x0": ["0.25", "-0.5"], "age": ["50", "0"], "x1": [" 1e-3 ", "0"]}
    X = raw_spec(data_norm=10.0).transform(columns)
    np.testing.assert_array_equal(X, [[0.25, 0.5, 1e-3], [-0.5, 0.0, 0.0]])  # no clip, no scale
    assert raw_spec().feature_names() == ["x0", "age", "x1"] and raw_spec().n_features == 3


def test_raw_numeric_column_rows_follow_the_row_step():
    spec = TabularSpec([RawNumericColumn("a"), RawNumericColumn("b")], row_norm_mode="clip", data_norm=1.0)
    with pytest.warns(DataClippingWarning):
        X = spec.transform({"a": ["3", "0.1"], "b": ["4", "0.2"]})
    np.testing.assert_allclose(X, [[0.6, 0.8], [0.1, 0.2]])
    spec = TabularSpec(spec.columns, row_norm_mode="scale", data_norm=2.0)
    np.testing.assert_allclose(spec.transform({"a": ["3", "0"], "b": ["4", "0"]}), [[1.2, 1.6], [0.0, 0.0]])


@pytest.mark.parametrize("cell, problem", [
    ("?", "the value is missing"), ("", "the value is missing"), ("nan", "the value is missing"),
    ("inf", "'inf' is not a finite number"), ("-1e999", "'-1e999' is not a finite number"),
    ("old", "'old' is not a number"),
])
def test_raw_numeric_column_refuses_a_bad_cell_in_one_line(cell, problem):
    columns = {"x0": ["0.1", "0.2", "0.3"], "age": ["1", "2", "3"], "x1": ["0", cell, "0"]}
    for check in (raw_spec().transform, raw_spec().validate):
        with pytest.raises(TableCellError) as caught:
            check(columns, source="shard.csv")
        message = str(caught.value)
        assert message.startswith(f"shard.csv: column 'x1', data row 2 (1-based, header not counted): {problem}")
        assert "finite number" in message and "\n" not in message


@pytest.mark.parametrize("cell, problem", [
    ("inf", "'inf' is not a finite number; "),
    ("-Infinity", "'-Infinity' is not a finite number; "),
    ("1e400", "'1e400' is not a finite number (it is beyond the largest float"),
    (np.inf, "inf is not a finite number; "),  # a float cell, as a Parquet column holds it
])
def test_bounded_column_refuses_an_infinite_cell_instead_of_clipping_it(cell, problem, no_warnings):
    columns = {"age": np.array(["20", cell, "30"], dtype=object), "gain": ["0", "0", "0"],
               "sex": ["Male", "Male", "Female"]}
    for check in (small_spec().transform, small_spec().validate):
        with pytest.raises(TableCellError) as caught:  # and no DataClippingWarning
            check(columns, source="t.csv")
        message = str(caught.value)
        assert message.startswith("t.csv: column 'age', data row 2 (1-based, header not counted): "
                                  + problem), message
        assert "write a finite number" in message and "\n" not in message


def test_bounds_read_from_the_data_refuse_an_infinite_cell():
    columns = {"x": ["1", "2", "1e400"], "y": ["a", "b", "a"]}
    with pytest.raises(TableCellError, match=r"t\.csv: column 'x', data row 3 .*'1e400' is not a finite"):
        build_spec(columns, ["x"], source="t.csv")


def test_raw_numeric_column_round_trips_with_its_type():
    spec = raw_spec(row_norm_mode="scale", data_norm=3.0)
    as_dict = spec.to_dict()
    assert as_dict["columns"][0] == {"name": "x0", "type": "raw_numeric"}
    assert TabularSpec.from_dict(as_dict) == spec and TabularSpec.from_json(spec.to_json()) == spec
    as_dict["columns"][0]["lower"] = 0
    with pytest.raises(ValueError, match=r"columns\[0\] has unknown key\(s\) \['lower'\]"):
        TabularSpec.from_dict(as_dict)


def test_a_raw_numeric_column_has_no_worst_case_norm_so_constant_is_refused():
    assert raw_spec().max_row_norm() == math.inf
    assert small_spec().max_row_norm() == pytest.approx(math.sqrt(3))
    with pytest.raises(ValueError, match=r"'constant' needs a bound on every column, and \['x0', 'x1'\]"):
        raw_spec(row_norm_mode="constant")
    as_dict = raw_spec().to_dict()
    as_dict["row_norm_mode"] = "constant"
    with pytest.raises(ValueError, match="use row_norm_mode 'clip' or 'scale'"):
        TabularSpec.from_dict(as_dict)
    with pytest.raises(ValueError, match="non-empty string"):
        RawNumericColumn("")


# ---------------------------------------------------------------- read_csv_columns


def test_read_csv_columns_strips_and_feeds_a_spec(tmp_path, no_warnings):
    path = tmp_path / "people.csv"
    path.write_text("age , gain,sex,label\n 53.5, 0 ,Male,1\n\n17,9, Female ,0\n")
    columns = read_csv_columns(path)
    assert list(columns) == ["age", "gain", "sex", "label"]
    assert columns["sex"].tolist() == ["Male", "Female"]
    X = small_spec(row_norm_mode="constant").transform(columns)
    assert X.shape == (2, 4)


def test_read_csv_columns_then_missing_value_is_reported(tmp_path):
    path = tmp_path / "people.csv"
    path.write_text("age,gain,sex\n20,0,Male\n?,0,Female\n")
    columns = read_csv_columns(path)
    with pytest.raises(TableCellError, match=r"people.csv: line 3, column 'age': "):
        small_spec().transform(columns, source=path)


def test_read_csv_columns_keeps_a_row_of_empty_cells(tmp_path):
    # a line with delimiters is a record even if every cell is empty; a blank line is not
    path = tmp_path / "people.csv"
    path.write_text("age,sex\n20,Male\n,\n   \n\n30,Female\n")
    assert read_csv_columns(path)["age"].tolist() == ["20", "", "30"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty"),
        ("a,b\n1,2\n3\n", "line 3 has 1 field"),
        ("a,a\n1,2\n", "duplicated"),
        ("a,\n1,2\n", "empty column name"),
    ],
)
def test_read_csv_columns_rejects_malformed_files(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        read_csv_columns(path)


def test_read_csv_columns_with_header_only(tmp_path):
    path = tmp_path / "header.csv"
    path.write_text("a,b\n")
    assert {k: v.tolist() for k, v in read_csv_columns(path).items()} == {"a": [], "b": []}


# ---------------------------------------------------------------- the one cell parser


@pytest.mark.parametrize("cells, expected_missing", [
    (np.array(["1", " 2.5 ", "-3e2"]), [False, False, False]),
    (np.array(["1", "?", "", " ? ", "nan"]), [False, True, True, True, True]),
    (np.array(["4", None, float("nan")], dtype=object), [False, True, True]),
    (np.array([1.0, np.nan]), [False, True]),
    (np.array([3, 4]), [False, False]),
])
def test_parse_numbers_reads_numbers_and_marks_missing_cells(cells, expected_missing):
    numbers, missing = parse_numbers(cells, "c")
    assert missing.tolist() == expected_missing and len(numbers) == len(cells)  # no row dropped
    assert np.isnan(numbers[missing]).all()
    present = [float(cell) for cell, gone in zip(cells.tolist(), expected_missing) if not gone]
    assert numbers[~missing].tolist() == present


def test_parse_numbers_names_file_column_and_row():
    with pytest.raises(TableCellError) as caught:
        parse_numbers(np.array(["1", "?", "x1"]), "age", source="data.csv", remedy="fix it")
    assert str(caught.value) == ("data.csv: column 'age', data row 3 (1-based, header not counted): "
                                 "'x1' is not a number; fix it")


@pytest.mark.parametrize("cells, row, problem", [
    (["1", "2", "?"], 3, "the value is missing"),
    (["1", "", "2"], 2, "the value is missing"),
    (["inf", "1"], 1, "'inf' is not a finite number"),
    (["1", "-inf"], 2, "'-inf' is not a finite number"),
    (["1", "one"], 2, "'one' is not a number"),
])
def test_finite_numbers_refuses_the_first_bad_cell(cells, row, problem):
    with pytest.raises(TableCellError) as caught:
        finite_numbers(np.array(cells), "x", source="shard.csv", remedy="fix the cell")
    assert str(caught.value) == (f"shard.csv: column 'x', data row {row} (1-based, header not counted): "
                                 f"{problem}; fix the cell")
    assert isinstance(caught.value, ValueError)


def test_finite_numbers_reads_a_csv_column(tmp_path):
    path = tmp_path / "shard.csv"
    path.write_text("x,label\n 0.5 ,1\n-2,0\n", encoding="utf-8")
    columns = read_csv_columns(path)
    assert finite_numbers(columns["x"], "x", source=path).tolist() == [0.5, -2.0]
    assert finite_numbers(columns["label"], "label", source=path).tolist() == [1.0, 0.0]


def test_read_bounds_file_names_the_file(tmp_path):
    path = tmp_path / "bounds.json"
    path.write_text('{"age": [17, 90], "sex": ["Female", "Male"]}', encoding="utf-8")
    assert read_bounds_file(path) == {"age": [17, 90], "sex": ["Female", "Male"]}
    path.write_text("[17, 90]", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bounds\.json must hold a JSON object: column -> bounds"):
        read_bounds_file(path)
    path.write_text("{age: 1}", encoding="utf-8")
    with pytest.raises(ValueError, match=r"the bounds file .*bounds\.json is not valid JSON"):
        read_bounds_file(path)
