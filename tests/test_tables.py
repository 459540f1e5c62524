"""Result tables: Markdown for the book, aligned text for nbval, one clear error for a bad shape."""

import pytest

from stiefel_book.tables import Table, markdown_table


def test_markdown_and_text_forms_hold_the_same_cells():
    t = Table(["arm", "acc (%)"], [["baseline", "46.83"], ["fixed_step", "45.90"]], align="lr")
    assert t._repr_markdown_().splitlines() == [
        "| arm | acc (%) |",
        "| --- | ---: |",
        "| baseline | 46.83 |",
        "| fixed_step | 45.90 |",
    ]
    assert repr(t).splitlines() == ["arm         acc (%)", "baseline      46.83", "fixed_step    45.90"]
    assert len(t) == 2


def test_a_pipe_in_a_cell_cannot_split_its_row():
    assert markdown_table(["a"], [["x | y"]]).splitlines()[-1] == "| x \\| y |"


@pytest.mark.parametrize(
    "rows, align, message",
    [
        ([["only one cell"]], None, "a row has 1 cells for 2 columns"),
        ([["a", "b"]], "lx", "align must give one of"),
        ([["a", "b"]], "l", "align must give one of"),
    ],
)
def test_bad_shapes_are_refused_with_what_is_wrong(rows, align, message):
    with pytest.raises(ValueError, match=message):
        Table(["h1", "h2"], rows, align)
