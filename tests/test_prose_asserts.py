"""Tests test behaviour, not wording (issue 48): few asserts pin a string literal of 30 characters
or more (a sentence, most often; nbval already guards every page's words). Counted from the
source with ``ast``: an assert counts once if its condition holds any such literal (its message
does not count)."""

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
LONG = 30  # characters: a literal this long is a phrase, not a key word
MOST = 40  # asserts that may hold one, in all of tests/


def prose_asserts(source: str) -> list[int]:
    """The line numbers of the asserts whose condition holds a string literal of ``LONG`` or more."""

    def long(node) -> bool:
        return isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) >= LONG

    asserts = (node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Assert))
    return [node.lineno for node in asserts if any(map(long, ast.walk(node.test)))]


def test_the_count_sees_a_long_literal_in_the_condition_only():
    source = (
        "assert x == 'thirty characters, exactly 30.'\n"  # 30: counts
        "assert x == 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxx'\n"  # 29: does not
        "assert f(['a', 'a phrase of more than thirty characters'])\n"  # nested: counts
        "assert x, 'a message of more than thirty characters'\n"  # the message: does not
    )
    assert prose_asserts(source) == [1, 3]


def test_at_most_forty_asserts_pin_a_long_string():
    per_file = {path: len(prose_asserts(path.read_text())) for path in sorted(TESTS.rglob("*.py"))}
    worst = sorted(((n, path.relative_to(TESTS).as_posix()) for path, n in per_file.items() if n), reverse=True)
    assert sum(per_file.values()) <= MOST, f"most in: {worst[:8]}"
