"""`# noqa` as flake8 and ruff users write it, applied by attnlint itself in standalone mode."""

from __future__ import annotations

import pytest

from attnlint import cli
from attnlint.config import Settings
from attnlint.engine import check_source
from attnlint.noqa import add_noqa, parse_noqa

# ATN103 at 3:17 (0-based); `{c}` is what follows the statement on the finding's line.
T103 = (
    "def attention(q, k, v):\n"
    "    b, n, d = k.shape\n"
    "    scores = q @ k.T / d ** 0.5{c}\n"
    "    return scores.softmax(-1) @ v\n"
)
# ATN102 at 4:11 and ATN103 at 8:17 in one file.
BOTH = (
    "def forward(self, q, k, v):\n"
    "    b, n, d = q.shape\n"
    "    scores = q @ k.transpose(-2, -1) * d ** -0.5\n"
    "    return scores.softmax(1) @ v{c102}\n"
    "\n"
    "def attention(q, k, v):\n"
    "    b, n, d = k.shape\n"
    "    scores = q @ k.T / d ** 0.5{c103}\n"
    "    return scores.softmax(-1) @ v\n"
)


def codes(source: str):
    return [(d.code, d.start.line, d.start.column) for d in check_source(source, "x.py", Settings()).diagnostics]


def test_baseline_finding():
    assert codes(T103.format(c="")) == [("ATN103", 3, 17)]


@pytest.mark.parametrize(
    "comment",
    [
        "  # noqa",
        "  # NOQA",
        "  #noqa",
        "  # noqa: ATN103",
        "  # noqa:ATN103",
        "  # noqa:ATN103,ATN101 reason text",
        "  # noqa: ATN101, ATN103",
        "  # noqa: ATN101 ATN103",
        "  # noqa: ATN1",
        "  # noqa: ATN",
        "  # noqa: atn103",
        "  # type: ignore  # noqa: ATN103",
    ],
)
def test_noqa_silences(comment):
    assert codes(T103.format(c=comment)) == []


@pytest.mark.parametrize(
    "comment",
    [
        "  # noqa: ATN101",
        "  # noqa: ATN102, ATN101",
        "  # noqa: ATN104",
        "  # noqa: E501",
        "  # noqa: ATN1031",  # a longer code is not a prefix of ATN103
        "  # no qa",
    ],
)
def test_noqa_for_other_codes_does_not_silence(comment):
    assert codes(T103.format(c=comment)) == [("ATN103", 3, 17)]


def test_noqa_only_on_its_statement():
    both = BOTH.format(c102="  # noqa", c103="")
    assert codes(both) == [("ATN103", 8, 17)]
    both = BOTH.format(c102="", c103="  # noqa: ATN103")
    assert codes(both) == [("ATN102", 4, 11)]


def test_noqa_on_previous_line_does_not_count():
    source = T103.format(c="").replace("    b, n, d = k.shape\n", "    b, n, d = k.shape  # noqa\n")
    assert codes(source) == [("ATN103", 3, 17)]


MULTI = (
    "def attention(q, k, v):\n"
    "    b, n, d = k.shape\n"
    "    scores = ({c1}\n"
    "        q\n"
    "        @ k.T{c2}\n"
    "        / d ** 0.5\n"
    "    ){c3}\n"
    "    return scores.softmax(-1) @ v\n"
)


def test_multiline_baseline():
    assert codes(MULTI.format(c1="", c2="", c3="")) == [("ATN103", 5, 10)]


@pytest.mark.parametrize("where", ["c1", "c2", "c3"])
def test_noqa_anywhere_in_multiline_statement(where):
    parts = {"c1": "", "c2": "", "c3": ""}
    parts[where] = "  # noqa: ATN103"
    assert codes(MULTI.format(**parts)) == []


def test_noqa_in_multiline_statement_respects_codes():
    assert codes(MULTI.format(c1="  # noqa: ATN101", c2="", c3="")) == [("ATN103", 5, 10)]


# ---------------------------------------------------------------------------------------------
# File level
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "header,expected",
    [
        ("# attnlint: noqa\n", []),
        ("# flake8: noqa\n", []),
        ("# attnlint: noqa: ATN103\n", [("ATN102", 5, 11)]),
        ("# attnlint:noqa:ATN102\n", [("ATN103", 9, 17)]),
        ("# attnlint: noqa: ATN1\n", []),
        ("# attnlint: noqa: ATN101\n", [("ATN102", 5, 11), ("ATN103", 9, 17)]),
        ("# nothing here\n", [("ATN102", 5, 11), ("ATN103", 9, 17)]),
    ],
)
def test_file_level_noqa(header, expected):
    assert codes(header + BOTH.format(c102="", c103="")) == expected


def test_file_level_noqa_anywhere_in_file():
    source = BOTH.format(c102="", c103="") + "# attnlint: noqa: ATN103\n"
    assert codes(source) == [("ATN102", 4, 11)]


# ---------------------------------------------------------------------------------------------
# Strings are not comments
# ---------------------------------------------------------------------------------------------
def test_noqa_inside_string_literal_does_not_count():
    source = (
        "def attention(q, k, v):\n"
        "    b, n, d = k.shape\n"
        '    scores = (q @ k.T / d ** 0.5, "# noqa")\n'
        "    return scores\n"
    )
    assert codes(source) == [("ATN103", 3, 18)]


def test_file_noqa_inside_string_literal_does_not_count():
    source = '"""Docs.\n\n# attnlint: noqa\n"""\n' + T103.format(c="")
    assert codes(source) == [("ATN103", 7, 17)]
    source = 'X = "# flake8: noqa"\n' + T103.format(c="")
    assert codes(source) == [("ATN103", 4, 17)]


def test_parse_noqa_map():
    noqa = parse_noqa("a = 1  # noqa: ATN101,ATN102 why\nb = 2  # noqa\nc = '# noqa'\n")
    assert noqa.by_line == {1: frozenset({"ATN101", "ATN102"}), 2: None}
    assert noqa.line_silences(1, "ATN102") and not noqa.line_silences(1, "ATN103")
    assert noqa.line_silences(2, "ATN103")
    assert not noqa.line_silences(3, "ATN103")
    assert not noqa.file_exempt and noqa.file_codes == frozenset()


def test_apply_noqa_false_leaves_suppression_to_caller():
    result = check_source(T103.format(c="  # noqa"), "x.py", Settings(), apply_noqa=False)
    assert [d.code for d in result.diagnostics] == ["ATN103"]


# ---------------------------------------------------------------------------------------------
# add_noqa
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "before,codes_,after",
    [
        ("x = 1\n", ["ATN103"], "x = 1  # noqa: ATN103\n"),
        ("x = 1   \n", ["ATN103", "ATN101"], "x = 1  # noqa: ATN101, ATN103\n"),
        ("x = 1  # noqa: ATN101\n", ["ATN103"], "x = 1  # noqa: ATN101, ATN103\n"),
        ("x = 1  #noqa:ATN103\n", ["ATN103"], "x = 1  # noqa: ATN103\n"),
        ("x = 1  # noqa: ATN103\n", ["ATN101"], "x = 1  # noqa: ATN101, ATN103\n"),
        ("x = 1  # noqa: ATN101 because\r\n", ["ATN103"], "x = 1  # noqa: ATN101, ATN103 because\r\n"),
        ("x = 1  # noqa\n", ["ATN103"], "x = 1  # noqa\n"),
        ("x = 1  # type: ignore\n", ["ATN102"], "x = 1  # type: ignore  # noqa: ATN102\n"),
        ("x = 1", ["ATN102"], "x = 1  # noqa: ATN102"),
    ],
)
def test_add_noqa(before, codes_, after):
    assert add_noqa(before, {1: codes_}) == after


def test_add_noqa_several_rows_and_out_of_range():
    source = "a = 1\r\nb = 2\r\nc = 3\r\n"
    assert add_noqa(source, {3: ["ATN101"], 1: ["ATN102"], 9: ["ATN103"]}) == (
        "a = 1  # noqa: ATN102\r\nb = 2\r\nc = 3  # noqa: ATN101\r\n"
    )


def test_add_noqa_result_silences(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.py").write_text(BOTH.format(c102="  # noqa: ATN101", c103=""), encoding="utf-8")
    assert cli.main(["check", "--add-noqa", "x.py"]) == 0
    assert capsys.readouterr().out == "Added 2 noqa directives.\n"
    assert (tmp_path / "x.py").read_text(encoding="utf-8") == BOTH.format(
        c102="  # noqa: ATN101, ATN102", c103="  # noqa: ATN103"
    )
    assert cli.main(["check", "x.py"]) == 0
    assert capsys.readouterr().out == "All checks passed!\n"


def test_add_noqa_does_not_touch_string_literals():
    source = (
        "def attention(q, k, v):\n"
        "    b, n, d = k.shape\n"
        '    scores = (q @ k.T / d ** 0.5, "# noqa: ATN101")\n'
        "    return scores\n"
    )
    new = add_noqa(source, {3: ["ATN103"]})
    assert '"# noqa: ATN101"' in new
    assert codes(new) == []


def test_a_mistyped_code_does_not_silence_a_whole_family():
    from attnlint.noqa import parse_noqa

    noqa = parse_noqa("x = 1  # noqa: ATN1O3\n")
    assert not noqa.line_silences(1, "ATN103")
    assert parse_noqa("x = 1  # noqa: ATN1\n").line_silences(1, "ATN103")
