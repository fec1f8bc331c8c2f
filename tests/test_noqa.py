"""`# noqa` as flake8 and ruff users write it, applied by attnlint itself in standalone mode."""

from __future__ import annotations

import pytest

from attnlint import cli
from attnlint.config import Settings
from attnlint.engine import check_source, fix_source
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
    """Findings other than ATN100 (whose own tests are below)."""
    result = check_source(source, "x.py", Settings(ignore=["ATN100"]))
    return [(d.code, d.start.line, d.start.column) for d in result.diagnostics]


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
    # The ATN101 that was there before suppresses nothing: ATN100 says so, and --fix drops it.
    assert cli.main(["check", "--output-format", "concise", "x.py"]) == 1
    assert "x.py:4:35: ATN100 [*] Unused `noqa` directive (unused: `ATN101`)" in capsys.readouterr().out
    assert cli.main(["check", "--fix", "x.py"]) == 0
    assert (tmp_path / "x.py").read_text(encoding="utf-8") == BOTH.format(
        c102="  # noqa: ATN102", c103="  # noqa: ATN103"
    )


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


# ---------------------------------------------------------------------------------------------
# Malformed suppressions (issue 13): reported, never obeyed in the widest sense
# ---------------------------------------------------------------------------------------------
def warnings_of(source: str):
    return [w.render(f"x.py:{w.line}") for w in check_source(source, "x.py", Settings()).warnings]


@pytest.mark.parametrize("comment", ["  # noqa ATN103", "  # noqa : ATN103", "  # noqa: A quick hack", "  # noqa:"])
def test_malformed_line_noqa_silences_nothing_and_warns(comment):
    source = T103.format(c=comment)
    assert codes(source) == [("ATN103", 3, 17)]
    (warning,) = warnings_of(source)
    assert warning.startswith("Invalid `# noqa` directive on x.py:3: expected ")
    assert "comma-separated list of codes (e.g., `# noqa: ATN101, ATN203`)." in warning


@pytest.mark.parametrize("comment", ["  # noqa F403", "  # noqa 42", "  # noqa E231 spacing"])
def test_other_tools_loose_noqa_silences_nothing_without_a_warning(comment):
    # flake8 projects write `# noqa F403` by the hundred (diffusers, speechbrain): not attnlint's
    # to judge, and a warning for each would bury the one about an attnlint code.
    source = T103.format(c=comment)
    assert codes(source) == [("ATN103", 3, 17)]
    assert warnings_of(source) == []


def test_file_noqa_without_colon_does_not_silence_the_file():
    source = "# attnlint: noqa ATN103\n" + BOTH.format(c102="", c103="")
    assert [c for c, _, _ in codes(source)] == ["ATN102", "ATN103"]
    (warning,) = warnings_of(source)
    assert warning == (
        "Invalid `# attnlint: noqa` directive on x.py:1: expected `:` followed by a comma-separated list"
        " of codes (e.g., `# attnlint: noqa: ATN101, ATN203`)."
    )


@pytest.mark.parametrize(
    "comment", ["  # noqa: ATN103;ATN101", "  # noqa: ATN101;ATN103", "  # noqa: ATN101; ATN103 why"]
)
def test_semicolon_separated_codes_are_accepted(comment):
    assert codes(T103.format(c=comment)) == []
    assert warnings_of(T103.format(c=comment)) == []


def test_ruff_file_noqa_is_honoured():
    assert codes("# ruff: noqa: ATN103\n" + BOTH.format(c102="", c103="")) == [("ATN102", 5, 11)]
    assert codes("# ruff: noqa\n" + BOTH.format(c102="", c103="")) == []


def test_malformed_noqa_is_warned_on_the_command_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.py").write_text(T103.format(c="  # noqa ATN103"), encoding="utf-8")
    assert cli.main(["check", "--output-format", "concise", "x.py"]) == 1
    captured = capsys.readouterr()
    assert "x.py:3:18: ATN103" in captured.out
    assert "attnlint: warning: Invalid `# noqa` directive on x.py:3: expected `:`" in captured.err
    # The warning is shown on every run (a result with warnings is not cached).
    cli.main(["check", "--output-format", "concise", "x.py"])
    assert "Invalid `# noqa` directive" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# ruff's suppression comments
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "comment",
    ["  # ruff: ignore[ATN103]", "  # ruff: ignore[batched-transpose]", "  # ruff: ignore[E501, batched-transpose]"],
)
def test_ruff_ignore_at_the_end_of_a_line(comment):
    assert codes(T103.format(c=comment)) == []


def test_ruff_ignore_for_another_rule_does_not_silence():
    assert codes(T103.format(c="  # ruff: ignore[missing-attention-scale]")) == [("ATN103", 3, 17)]


def test_ruff_ignore_on_its_own_line_applies_to_the_next_statement():
    source = T103.format(c="").replace("    scores =", "    # ruff: ignore[ATN103]\n\n    scores =")
    assert codes(source) == []
    source = T103.format(c="").replace("    b, n, d", "    # ruff: ignore[ATN103]\n    b, n, d")
    assert codes(source) == [("ATN103", 4, 17)]


def test_ruff_file_ignore_and_disable_enable_ranges():
    assert codes("# ruff: file-ignore[softmax-wrong-axis]\n" + BOTH.format(c102="", c103="")) == [("ATN103", 9, 17)]
    ranged = BOTH.format(c102="", c103="").replace("def attention", "# ruff: disable[ATN103]\ndef attention")
    assert codes(ranged) == [("ATN102", 4, 11)]
    closed = ranged.replace("    b, n, d = k.shape\n", "    b, n, d = k.shape\n    # ruff: enable[ATN103]\n")
    assert [c for c, _, _ in codes(closed)] == ["ATN102", "ATN103"]


def test_malformed_ruff_comment_warns():
    (warning,) = warnings_of(T103.format(c="  # ruff: ignore ATN103"))
    assert warning.startswith("Invalid suppression comment directive on x.py:3")


# ---------------------------------------------------------------------------------------------
# ATN100 unused-noqa
# ---------------------------------------------------------------------------------------------
def unused(source: str, **settings):
    result = check_source(source, "x.py", Settings(**settings))
    return [(d.start.line, d.message) for d in result.diagnostics if d.code == "ATN100"]


def test_unused_noqa_reports_codes_that_suppressed_nothing():
    source = BOTH.format(c102="  # noqa: ATN102, ATN101", c103="  # noqa: ATN103")
    assert unused(source) == [(4, "Unused `noqa` directive (unused: `ATN101`)")]


def test_unused_noqa_leaves_other_tools_and_blanket_noqa_alone():
    assert unused(BOTH.format(c102="  # noqa: E501", c103="  # noqa")) == []
    assert unused("x = 1  # noqa: E501, W291\n") == []


def test_unused_noqa_does_not_judge_rules_that_did_not_run():
    source = BOTH.format(c102="  # noqa: ATN102", c103="  # noqa: ATN103, ATN201")
    assert unused(source, select=["ATN1"]) == []  # ATN201 was not selected: not judged
    assert unused(source) == [(8, "Unused `noqa` directive (unused: `ATN201`)")]
    assert unused(source, per_file_ignores={"x.py": ["ATN201"]}) == []


def test_unused_noqa_fix_removes_only_the_unused_codes():
    source = BOTH.format(c102="  # noqa: ATN101, E501, ATN102 reason", c103="  # noqa: ATN103, ATN101")
    fixed = fix_source(source, "x.py", Settings()).fixed_source
    assert fixed == BOTH.format(c102="  # noqa: E501, ATN102 reason", c103="  # noqa: ATN103")
    assert unused(fixed) == []
    whole = fix_source(T103.format(c="  # noqa: ATN103").replace("k.shape\n", "k.shape  # noqa: ATN101 old\n"), "x.py")
    assert whole.fixed_source == T103.format(c="  # noqa: ATN103")


def test_unused_noqa_is_listed_and_documented(capsys):
    assert cli.main(["rules"]) == 0
    assert "ATN100  unused-noqa" in capsys.readouterr().out
    assert cli.main(["rule", "ATN100"]) == 0
    assert "# unused-noqa (ATN100)" in capsys.readouterr().out


def test_noqa_for_atn100_itself():
    assert unused("x = 1  # noqa: ATN999, ATN100\n") == []


# ---------------------------------------------------------------------------------------------
# --add-noqa=REASON
# ---------------------------------------------------------------------------------------------
def test_add_noqa_with_a_reason(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.py").write_text(T103.format(c=""), encoding="utf-8")
    assert cli.main(["check", "--add-noqa=legacy, see #12", "x.py"]) == 0
    assert (tmp_path / "x.py").read_text(encoding="utf-8") == T103.format(c="  # noqa: ATN103 legacy, see #12")
    assert cli.main(["check", "x.py"]) == 0


def test_add_noqa_reason_function():
    assert add_noqa("x = 1\n", {1: ["ATN103"]}, reason="why") == "x = 1  # noqa: ATN103 why\n"
    # An existing directive keeps its own reason.
    assert (
        add_noqa("x = 1  # noqa: ATN101 old\n", {1: ["ATN103"]}, reason="new") == "x = 1  # noqa: ATN101, ATN103 old\n"
    )
