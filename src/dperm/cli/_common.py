"""Helpers shared by several ``dperm`` commands (standard library at import)."""

from __future__ import annotations

__all__ = ["expect_digest_option", "read_rows"]


def read_rows(path):
    """The CSV file's columns; a file with a header and no data row is refused by name."""
    from dperm.tabular import read_csv_columns

    columns = read_csv_columns(path)
    if not columns.line_numbers:
        raise ValueError(f"no data rows in {path}: the file has a header but no rows; add the "
                         "rows below the header.")
    return columns


def expect_digest_option(parser) -> None:
    """Add ``--expect-digest`` (predict, show, evaluate, report)."""
    parser.add_argument("--expect-digest", default=None, metavar="sha256:HEX",
                        help="refuse the model file unless its digest is this one (the digest "
                             "its publisher printed; dperm train prints it). A digest detects "
                             "edits and swapped files; it is not a signature")
