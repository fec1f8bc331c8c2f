"""The GitHub Action and `attnlint.review`, offline.

`attnlint.review` sends its request to an HTTP server on 127.0.0.1 started here; the action's
steps (action.yml) run one by one in a throwaway repository with a local `origin`, exactly as the
runner would run them, expressions evaluated from the inputs. Only `pip install` is stubbed (the
attnlint under test is the one installed).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Dict, List, Optional

import jsonschema
import pytest
import yaml
from gitutil import git

from attnlint import review as review_module
from attnlint.review import PullRequest, build_request, comments_in_body, post_review


ROOT = Path(__file__).resolve().parents[1]
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
SCHEMA_PATH = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"
TOKEN = "ghs_test-token-never-printed"


# ---------------------------------------------------------------------------------------------
# A local stand-in for api.github.com
# ---------------------------------------------------------------------------------------------
class FakeGitHub:
    def __init__(self, statuses: Optional[List[int]] = None) -> None:
        self.requests: List[Dict] = []
        self.statuses = list(statuses or [200])
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length", 0))
                fake.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": json.loads(self.rfile.read(length))}
                )
                status = fake.statuses.pop(0) if fake.statuses else 200
                answer = (
                    {"html_url": "https://github.test/pr/7#review"}
                    if status == 200
                    else {
                        "message": {403: "Resource not accessible by integration", 422: "Unprocessable Entity"}[status],
                        "errors": ["Line could not be resolved"] if status == 422 else [],
                    }
                )
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


REVIEW = {
    "event": "COMMENT",
    "body": "**attnlint** found 1 problem in the lines this change adds.",
    "comments": [{"path": "src/m.py", "line": 3, "side": "RIGHT", "body": "**ATN103** ..."}],
}
PR = PullRequest("octo/repo", 7, "abc123", from_fork=False)


def test_request_is_githubs_create_a_review_call():
    request = build_request(REVIEW, PR, TOKEN, "https://api.github.com/")
    assert request.full_url == "https://api.github.com/repos/octo/repo/pulls/7/reviews"
    assert request.get_method() == "POST"
    assert request.get_header("Authorization") == f"Bearer {TOKEN}"
    assert request.get_header("Accept") == "application/vnd.github+json"
    assert request.get_header("X-github-api-version") == "2022-11-28"
    assert json.loads(request.data) == dict(REVIEW, commit_id="abc123")


def test_posts_to_the_server(capsys):
    with FakeGitHub() as server:
        assert post_review(REVIEW, PR, TOKEN, server.url) == 0
    (sent,) = server.requests
    assert sent["path"] == "/repos/octo/repo/pulls/7/reviews"
    assert sent["headers"]["Authorization"] == f"Bearer {TOKEN}"
    assert sent["body"] == dict(REVIEW, commit_id="abc123")
    assert "review posted with 1 comments: https://github.test/pr/7#review" in capsys.readouterr().out


def test_a_forks_read_only_token_falls_back_with_a_note(capsys):
    fork = PullRequest("octo/repo", 7, "abc123", from_fork=True)
    with FakeGitHub([403]) as server:
        assert post_review(REVIEW, fork, TOKEN, server.url) == 0
    assert len(server.requests) == 1
    out = capsys.readouterr().out
    assert "comes from a fork" in out and "annotations and SARIF" in out


def test_rejected_line_comments_are_moved_into_the_body(capsys):
    with FakeGitHub([422, 200]) as server:
        assert post_review(REVIEW, PR, TOKEN, server.url) == 0
    first, second = server.requests
    assert first["body"]["comments"] == REVIEW["comments"]
    assert second["body"]["comments"] == []
    assert "**`src/m.py:3`**" in second["body"]["body"]
    assert second["body"] == dict(comments_in_body(REVIEW), commit_id="abc123")


def test_nothing_to_say_posts_nothing(capsys):
    quiet = {
        "event": "COMMENT",
        "body": "**attnlint** found no problems in the lines this change adds.",
        "comments": [],
    }
    with FakeGitHub() as server:
        assert post_review(quiet, PR, TOKEN, server.url) == 0
    assert server.requests == []


def event_file(tmp_path: Path, fork: bool = False) -> Path:
    head_repo = "someone/repo" if fork else "octo/repo"
    event = {
        "pull_request": {
            "number": 7,
            "head": {"sha": "abc123", "repo": {"full_name": head_repo}},
            "base": {"repo": {"full_name": "octo/repo"}},
        }
    }
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event), encoding="utf-8")
    return path


def test_module_reads_the_environment_and_never_prints_the_token(tmp_path):
    review_path = tmp_path / "review.json"
    review_path.write_text(json.dumps(REVIEW), encoding="utf-8")
    with FakeGitHub() as server:
        env = dict(
            os.environ,
            GITHUB_TOKEN=TOKEN,
            GITHUB_API_URL=server.url,
            GITHUB_REPOSITORY="octo/repo",
            GITHUB_EVENT_PATH=str(event_file(tmp_path)),
        )
        proc = subprocess.run(
            [sys.executable, "-m", "attnlint.review", str(review_path)], env=env, capture_output=True, text=True
        )
    assert proc.returncode == 0, proc.stderr
    assert TOKEN not in proc.stdout + proc.stderr
    (sent,) = server.requests
    assert sent["body"]["commit_id"] == "abc123"


def test_module_without_a_token_is_an_error(tmp_path, monkeypatch, capsys):
    review_path = tmp_path / "review.json"
    review_path.write_text(json.dumps(REVIEW), encoding="utf-8")
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    monkeypatch.setenv("GITHUB_REPOSITORY", "octo/repo")
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event_file(tmp_path)))
    assert review_module.main([str(review_path)]) == 1
    assert "GITHUB_TOKEN is not set" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# action.yml, step by step
# ---------------------------------------------------------------------------------------------
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
_CONTEXT = re.compile(r"\b(?:inputs|steps|github|env)\.[A-Za-z0-9_.-]+")


def evaluate(expression: str, context: Dict[str, str]):
    """GitHub's expression syntax, as far as action.yml uses it: names, ==, !=, &&, ||, startsWith."""
    python = _CONTEXT.sub(lambda m: repr(context.get(m.group(0), "")), expression)
    python = python.replace("&&", " and ").replace("||", " or ")
    return eval(python, {"startsWith": lambda s, prefix: s.startswith(prefix)})  # noqa: S307 - our own file


def substitute(value: str, context: Dict[str, str]) -> str:
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: str(evaluate(m.group(1), context)), str(value))


def run_action(workdir: Path, inputs: Dict[str, str], env: Dict[str, str], tmp: Path) -> Dict[str, object]:
    """Run the composite action's steps as the runner does; returns outputs, logs and statuses."""
    context = {f"inputs.{name}": str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
    context.update({f"inputs.{k}": v for k, v in inputs.items()})
    context.update(
        {"github.action_path": str(ROOT), "github.event_name": env.get("GITHUB_EVENT_NAME", ""), "github.token": TOKEN}
    )
    logs, statuses = [], {}
    for step in ACTION["runs"]["steps"]:
        assert "run" in step and step["shell"] == "bash", "every step runs locally"
        if "if" in step and not evaluate(step["if"], context):
            statuses[step["name"]] = "skipped"
            continue
        output = tmp / f"output-{len(statuses)}"
        output.write_text("", encoding="utf-8")
        step_env = dict(env, GITHUB_OUTPUT=str(output))
        step_env.update({k: substitute(v, context) for k, v in (step.get("env") or {}).items()})
        proc = subprocess.run(["bash", "-c", step["run"]], cwd=workdir, env=step_env, capture_output=True, text=True)
        logs.append(proc.stdout + proc.stderr)
        statuses[step["name"]] = proc.returncode
        for line in output.read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition("=")
            if step.get("id"):
                context[f"steps.{step['id']}.outputs.{key}"] = value
        if proc.returncode != 0:
            break
    return {"logs": logs, "statuses": statuses, "context": context}


@pytest.fixture
def pull_request(tmp_path: Path) -> Dict[str, object]:
    """A bare `origin` with main, and a checkout of a pull-request branch that adds one bug."""
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(origin), str(work))
    (work / "src").mkdir()
    old = "def old(q, k):\n    # q, k: (batch, heads, seq, dim)\n    return q @ k.T\n"
    (work / "src" / "m.py").write_text(old, encoding="utf-8")
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "old")
    git(work, "push", "-q", "origin", "main")
    git(work, "checkout", "-q", "-b", "feature")
    new = old + "\n\ndef new(q, k):\n    # q, k: (batch, heads, seq, dim)\n    return q @ k.T\n"
    (work / "src" / "m.py").write_text(new, encoding="utf-8")
    git(work, "commit", "-q", "-am", "new")
    # actions/checkout leaves no local main: the action must fetch the base branch itself.
    git(work, "update-ref", "-d", "refs/remotes/origin/main")
    return {"work": work, "tmp": tmp_path}


def action_env(pull_request, server_url: str, stub_bin: Path, fork: bool = False) -> Dict[str, str]:
    tmp = pull_request["tmp"]
    runner_temp = tmp / "runner"
    runner_temp.mkdir(exist_ok=True)
    bin_dir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "ATTNLINT_"))}
    env.update(
        PATH=os.pathsep.join([str(stub_bin), bin_dir, env.get("PATH", "")]),
        RUNNER_TEMP=str(runner_temp),
        GITHUB_EVENT_NAME="pull_request",
        GITHUB_BASE_REF="main",
        GITHUB_REPOSITORY="octo/repo",
        GITHUB_API_URL=server_url,
        GITHUB_EVENT_PATH=str(event_file(tmp, fork=fork)),
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
    )
    return env


def stub_pip(tmp: Path) -> Path:
    """A `python3` whose `-m pip` records its arguments (the real one would reinstall attnlint)."""
    stub = tmp / "stub-bin"
    stub.mkdir(exist_ok=True)
    script = stub / "pip-python"
    script.write_text(f'#!/bin/sh\necho "$@" >> "{tmp}/pip-calls"\n', encoding="utf-8")
    script.chmod(0o755)
    return stub


@needs_git
@pytest.mark.slow
def test_action_end_to_end(pull_request):
    tmp = pull_request["tmp"]
    stub = stub_pip(tmp)
    with FakeGitHub() as server:
        env = action_env(pull_request, server.url, stub)
        env["ATTNLINT_PYTHON"] = str(stub / "pip-python")
        run = run_action(pull_request["work"], {"version": "0.1.0", "args": "src"}, env, tmp)
    statuses = run["statuses"]
    assert statuses == {
        "Install attnlint": 0,
        "Resolve the change to review": 0,
        "SARIF": 0,
        "Review": 0,
        "Annotations": 1,  # the new finding fails the job, after everything else was written
    }, run["logs"]
    assert (tmp / "pip-calls").read_text(encoding="utf-8").split() == [
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "attnlint==0.1.0",
    ]
    # Annotations: only the new bug (line 8), not the old one (line 3).
    annotations = [line for line in run["logs"][-1].splitlines() if line.startswith("::error")]
    assert annotations == [
        "::error title=attnlint (ATN103),file=src/m.py,line=8,col=16,endLine=8,endColumn=19::ATN103 "
        "`k.T` reverses all 4 axes of a batched tensor; use `.transpose(-2, -1)` to swap only the last two"
    ]
    # SARIF for upload-sarif: the whole tree (both bugs), valid against the schema.
    sarif_path = Path(run["context"]["steps.sarif.outputs.file"])
    sarif = json.loads(sarif_path.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))).validate(sarif)
    assert [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in sarif["runs"][0]["results"]] == [3, 8]
    # The review reached the server, with the token from the environment.
    (sent,) = server.requests
    assert sent["path"] == "/repos/octo/repo/pulls/7/reviews"
    assert sent["headers"]["Authorization"] == f"Bearer {TOKEN}"
    body = sent["body"]
    assert body["commit_id"] == "abc123"
    assert [(c["path"], c["line"]) for c in body["comments"]] == [("src/m.py", 8)]
    assert body["comments"][0]["body"].endswith("```suggestion\n    return q @ k.transpose(-2, -1)\n```")
    assert all(TOKEN not in log for log in run["logs"])


@needs_git
@pytest.mark.slow
def test_action_on_a_fork_falls_back_to_annotations(pull_request):
    tmp = pull_request["tmp"]
    with FakeGitHub([403]) as server:
        env = action_env(pull_request, server.url, stub_pip(tmp), fork=True)
        run = run_action(pull_request["work"], {"version": "installed", "args": "src", "sarif": "false"}, env, tmp)
    assert run["statuses"] == {
        "Install attnlint": 0,
        "Resolve the change to review": 0,
        "SARIF": "skipped",
        "Review": 0,
        "Annotations": 1,
    }, run["logs"]
    review_log = run["logs"][2]
    assert "comes from a fork" in review_log
    assert run["logs"][-1].count("::error ") == 1
