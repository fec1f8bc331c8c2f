"""Notebooks: checked like Python files, reported by cell, fixed with every other byte unchanged."""

from __future__ import annotations

import difflib
import json
import shutil
from pathlib import Path

import pytest

from attnlint.cli import main
from attnlint.config import Settings
from attnlint.notebook import mask_ipython, parse_notebook, split_program, write_back

DATA = Path(__file__).parent / "data" / "notebooks"
COURSE_NOTES = DATA / "course_notes.ipynb"


def notebook_text(*sources, as_string=False, indent=1) -> str:
    """A notebook as Jupyter writes it (indent 1, sorted keys, non-ASCII kept, final newline)."""
    cells = []
    for i, source in enumerate(sources):
        kind = "markdown" if source.startswith("#md ") else "code"
        text = source[4:] if kind == "markdown" else source
        cell = {
            "cell_type": kind,
            "id": f"c{i}",
            "metadata": {},
            "source": text if as_string else text.splitlines(True),
        }
        if kind == "code":
            cell.update(execution_count=i, outputs=[{"output_type": "stream", "name": "stdout", "text": ["ok é\n"]}])
        cells.append(cell)
    data = {"cells": cells, "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(data, indent=indent, ensure_ascii=False, sort_keys=True) + "\n"


@pytest.fixture
def course_notes(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "course_notes.ipynb"
    shutil.copyfile(COURSE_NOTES, target)
    return target


def run(capsys, *argv) -> tuple:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_findings_are_reported_by_cell_and_line(course_notes, capsys):
    code, out, _ = run(capsys, "check", "--no-cache", "--output-format", "concise", "course_notes.ipynb")
    assert code == 1
    headers = [line.split(" ", 2)[:2] for line in out.splitlines() if line.startswith("course_notes")]
    assert headers == [
        ["course_notes.ipynb:cell", "4:13:33:"],
        ["course_notes.ipynb:cell", "8:17:34:"],
        ["course_notes.ipynb:cell", "8:18:24:"],
    ]
    assert "ATN103" in out and "ATN204" in out and "ATN102" in out


def test_full_output_numbers_snippet_lines_within_the_cell(course_notes, capsys):
    _, out, _ = run(capsys, "check", "--no-cache", "course_notes.ipynb")
    assert "13 |         attn_scores = queries @ keys.T" in out


def test_fix_changes_only_the_fixed_lines(course_notes, capsys):
    before = course_notes.read_bytes()
    code, out, _ = run(capsys, "check", "--no-cache", "--fix", "course_notes.ipynb")
    after = course_notes.read_bytes()
    assert code == 1  # ATN102's fix is unsafe: one finding remains
    assert "cell 8:18:24" in out
    changed = [
        line
        for line in difflib.unified_diff(before.decode().splitlines(), after.decode().splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    # Two source lines change, in two cells: one list element, one line inside a string source.
    assert len(changed) == 4, changed
    old, new = json.loads(before), json.loads(after)
    assert new["cells"][3]["source"][12] == "        attn_scores = queries @ keys.transpose(-2, -1)\n"
    assert "self.mask[..., " in new["cells"][7]["source"] and isinstance(new["cells"][7]["source"], str)
    # Everything else is as it was: outputs, metadata, ids, magics, markdown, the other cells.
    for i, (a, b) in enumerate(zip(old["cells"], new["cells"])):
        if i not in (3, 7):
            assert a == b
        assert {k: v for k, v in a.items() if k != "source"} == {k: v for k, v in b.items() if k != "source"}
    assert old["metadata"] == new["metadata"]
    assert after.endswith(b"}\n")
    # The bytes outside the two changed `source` values are identical.
    assert outside_sources(before.decode(), [3, 7]) == outside_sources(after.decode(), [3, 7])


def outside_sources(text: str, cell_indexes) -> list:
    """The notebook's text cut at the `source` values of the given cells (0-based cell indexes)."""
    nb = parse_notebook(text)
    spans = [c.span for c in nb.cells if c.number - 1 in cell_indexes]
    pieces, position = [], 0
    for start, end in spans:
        pieces.append(text[position:start])
        position = end
    pieces.append(text[position:])
    return pieces


def test_fixing_twice_changes_nothing_more(course_notes, capsys):
    run(capsys, "check", "--no-cache", "--fix", "course_notes.ipynb")
    once = course_notes.read_bytes()
    run(capsys, "check", "--no-cache", "--fix", "course_notes.ipynb")
    assert course_notes.read_bytes() == once


def test_a_notebook_without_changes_round_trips_byte_for_byte():
    text = COURSE_NOTES.read_text(encoding="utf-8")
    nb = parse_notebook(text)
    assert write_back(nb, split_program(nb, nb.program)) == text


def test_magics_and_shell_escapes_are_masked_line_for_line():
    source = "%matplotlib inline\n!pip install torch\nfiles = !ls\nx = (1\n % 2)\nif x:\n    !echo hi\ntorch.softmax?\n"
    lines, replaced = mask_ipython(source)
    assert len(lines) == len(source.splitlines())
    assert sorted(replaced) == [0, 1, 2, 6, 7]
    assert lines[4] == " % 2)\n"  # modulo continuing an expression is Python, not a magic
    assert lines[6].startswith("    pass")  # the block stays a block
    compile("".join(lines), "<masked>", "exec")


def test_non_python_cell_magics_are_skipped_whole_python_ones_are_checked(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    buggy = "import torch\nk = torch.rand(2, 3, 4)\nq = torch.rand(2, 3, 4)\ns = q @ k.T\n"
    (tmp_path / "nb.ipynb").write_text(
        notebook_text("%%bash\nfor f in *; do echo $f; done\n", "%%time\n" + buggy), encoding="utf-8"
    )
    code, out, _ = run(capsys, "check", "--no-cache", "--output-format", "concise", "nb.ipynb")
    assert "ATN001" not in out
    assert "nb.ipynb:cell 2:5:" in out and "ATN103" in out


def test_cells_see_names_defined_by_earlier_cells(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nb.ipynb").write_text(
        notebook_text(
            "import torch\nkeys = torch.rand(2, 3, 4)\nqueries = torch.rand(2, 3, 4)",
            "#md The scores:",
            "scores = queries @ keys.T",
        ),
        encoding="utf-8",
    )
    _, out, _ = run(capsys, "check", "--no-cache", "--output-format", "concise", "nb.ipynb")
    assert "nb.ipynb:cell 3:1:20: ATN103" in out


@pytest.mark.parametrize(
    "content,reason",
    [
        ('{"cells": [', "not valid JSON"),
        ("[1, 2]", "no `cells` list"),
        ('{"cells": [], "nbformat": 3}', "nbformat 4"),
        ('{"cells": [{"cell_type": "code", "source": 5}], "nbformat": 4}', "neither a string"),
    ],
)
def test_an_invalid_notebook_is_reported_and_never_written(tmp_path, monkeypatch, capsys, content, reason):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "bad.ipynb"
    path.write_text(content, encoding="utf-8")
    code, out, _ = run(capsys, "check", "--no-cache", "--fix", "--output-format", "concise", "bad.ipynb")
    assert code == 1
    assert "bad.ipynb:1:1: ATN001" in out and reason in out
    assert path.read_text(encoding="utf-8") == content


def test_noqa_in_a_cell_and_file_level_noqa_in_any_cell(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    setup = "import torch\nkeys = torch.rand(2, 3, 4)\nqueries = torch.rand(2, 3, 4)"
    (tmp_path / "line.ipynb").write_text(
        notebook_text(setup, "a = queries @ keys.T  # noqa: ATN103\nb = queries @ keys.T"), encoding="utf-8"
    )
    (tmp_path / "file.ipynb").write_text(
        notebook_text(setup, "a = queries @ keys.T", "# attnlint: noqa\nprint(1)"), encoding="utf-8"
    )
    _, out, _ = run(capsys, "check", "--no-cache", "--output-format", "concise", "line.ipynb", "file.ipynb")
    assert "line.ipynb:cell 2:2:" in out
    assert "line.ipynb:cell 2:1:" not in out
    assert "file.ipynb" not in out


def test_json_output_has_ruffs_cell_field_and_rows_within_the_cell(course_notes, capsys):
    _, out, _ = run(capsys, "check", "--no-cache", "--output-format", "json", "course_notes.ipynb")
    first = json.loads(out)[0]
    assert first["cell"] == 4
    assert first["location"] == {"row": 13, "column": 33}
    assert first["noqa_row"] == 13
    assert first["fix"]["edits"][0]["location"] == {"row": 13, "column": 33}


def test_github_annotations_point_into_the_notebook_file(course_notes, capsys):
    _, out, _ = run(capsys, "check", "--no-cache", "--output-format", "github", "course_notes.ipynb")
    annotation = out.splitlines()[0]
    props = dict(p.split("=", 1) for p in annotation.split("::")[1].split(" ", 1)[1].split(","))
    line, col = int(props["line"]), int(props["col"])
    json_line = course_notes.read_text(encoding="utf-8").splitlines()[line - 1]
    assert json_line[col - 1 :].startswith("keys.T")
    assert "cell 4, line 13" in annotation


def test_github_columns_count_json_escapes(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nb.ipynb").write_text(
        notebook_text(
            'import torch\nkeys = torch.rand(2, 3, 4)\nqueries = torch.rand(2, 3, 4)\nlabel = "\\"q\\""; s = queries @ keys.T'
        ),
        encoding="utf-8",
    )
    _, out, _ = run(capsys, "check", "--no-cache", "--output-format", "github", "nb.ipynb")
    annotation = out.splitlines()[0]
    props = dict(p.split("=", 1) for p in annotation.split("::")[1].split(" ", 1)[1].split(","))
    json_line = (tmp_path / "nb.ipynb").read_text(encoding="utf-8").splitlines()[int(props["line"]) - 1]
    assert json_line[int(props["col"]) - 1 :].startswith("keys.T")


def test_sarif_for_a_notebook_is_valid_and_points_into_the_file(course_notes, capsys):
    jsonschema = pytest.importorskip("jsonschema")
    _, out, _ = run(capsys, "check", "--no-cache", "--output-format", "sarif", "course_notes.ipynb")
    report = json.loads(out)
    schema = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    jsonschema.validate(report, schema)
    first = report["runs"][0]["results"][0]
    assert first["locations"][0]["physicalLocation"]["region"]["startLine"] == 68
    assert "fixes" not in first  # an edit of the program is not an edit of the JSON text


def test_the_cache_keeps_cells(course_notes, capsys):
    first = run(capsys, "check", "--output-format", "concise", "course_notes.ipynb")
    second = run(capsys, "check", "--output-format", "concise", "course_notes.ipynb")
    assert first == second
    assert "cell 4:13:33" in second[1]


def test_directories_include_notebooks(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    shutil.copyfile(COURSE_NOTES, tmp_path / "pkg" / "notes.ipynb")
    _, out, _ = run(capsys, "check", "--no-cache", "--output-format", "concise", "pkg")
    assert "pkg/notes.ipynb:cell 4:13:33" in out


def test_add_noqa_in_a_notebook_keeps_the_rest(course_notes, capsys):
    before = json.loads(course_notes.read_text(encoding="utf-8"))
    code, out, _ = run(capsys, "check", "--no-cache", "--add-noqa", "course_notes.ipynb")
    after = json.loads(course_notes.read_text(encoding="utf-8"))
    assert after["cells"][3]["source"][12].rstrip("\n").endswith("# noqa: ATN103")
    assert after["cells"][0] == before["cells"][0] and after["cells"][4] == before["cells"][4]
    code, out, _ = run(capsys, "check", "--no-cache", "course_notes.ipynb")
    assert code == 0, out


def test_settings_apply_to_notebooks():
    from attnlint.notebook import check_notebook

    result = check_notebook(COURSE_NOTES.read_text(encoding="utf-8"), "n.ipynb", Settings(select=["ATN102"]))
    assert [d.code for d in result.diagnostics] == ["ATN102"]


def test_a_notebook_for_another_kernel_is_left_alone(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    data = json.loads(notebook_text("x <- c(1, 2)\nprint(x)"))
    data["metadata"] = {"language_info": {"name": "R"}, "kernelspec": {"language": "R", "name": "ir"}}
    (tmp_path / "r.ipynb").write_text(json.dumps(data), encoding="utf-8")
    code, out, _ = run(capsys, "check", "--no-cache", "r.ipynb")
    assert code == 0 and "ATN001" not in out


def test_a_notebook_on_stdin(course_notes, monkeypatch, capsys):
    import io

    text = course_notes.read_text(encoding="utf-8")
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    code, out, _ = run(capsys, "check", "--output-format", "concise", "--stdin-filename", "notes.ipynb", "-")
    assert code == 1 and "notes.ipynb:cell 4:13:33: ATN103" in out
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    code, out, err = run(capsys, "check", "--fix", "--stdin-filename", "notes.ipynb", "-")
    assert json.loads(out)["cells"][3]["source"][12] == "        attn_scores = queries @ keys.transpose(-2, -1)\n"
    assert "cell 8:18:24: ATN102" in err


def test_diff_shows_the_changed_cells_and_writes_nothing(course_notes, capsys):
    before = course_notes.read_bytes()
    code, out, err = run(capsys, "check", "--no-cache", "--diff", "course_notes.ipynb")
    assert code == 1 and course_notes.read_bytes() == before
    assert "--- a/course_notes.ipynb:cell 4\n+++ b/course_notes.ipynb:cell 4\n" in out
    assert "-        attn_scores = queries @ keys.T\n+        attn_scores = queries @ keys.transpose(-2, -1)\n" in out
    assert "cell 8" in out and '"outputs"' not in out
    assert "Would fix 2 errors." in err


def test_a_fix_that_would_merge_cells_is_not_written(monkeypatch):
    """If the cells cannot be told apart after fixing, the notebook is left as it is and a warning
    says why (forced here by a fixer that drops the boundary line)."""
    import attnlint.engine as engine
    from attnlint.notebook import CELL_BOUNDARY, check_notebook

    text = COURSE_NOTES.read_text(encoding="utf-8")
    real_fix_source = engine.fix_source

    def merging_fix_source(source, path, settings):
        result = real_fix_source(source, path, settings)
        result.fixed_source = result.fixed_source.replace(CELL_BOUNDARY + "\n", "", 1)
        return result

    monkeypatch.setattr(engine, "fix_source", merging_fix_source)
    result = check_notebook(text, "n.ipynb", Settings(), fix=True)
    assert result.fixed_source == text and not result.fixed
    assert any("cell boundary" in w for w in result.fix_warnings)
    assert [d.code for d in result.diagnostics] == ["ATN103", "ATN204", "ATN102"]


def test_other_ci_formats_place_notebook_findings(course_notes, capsys):
    _, out, _ = run(capsys, "check", "--no-cache", "--output-format", "grouped", "course_notes.ipynb")
    assert "  cell 4:13:33 ATN103" in out
    _, out, _ = run(capsys, "check", "--no-cache", "--output-format", "pylint", "course_notes.ipynb")
    assert out.startswith("course_notes.ipynb:68: [ATN103] cell 4, line 13: ")
    _, out, _ = run(capsys, "check", "--no-cache", "--output-format", "azure", "course_notes.ipynb")
    assert "linenumber=68;columnnumber=38;code=ATN103;]cell 4, line 13:" in out
