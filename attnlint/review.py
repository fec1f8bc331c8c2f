"""Post a `github-review` payload as a pull-request review: `python -m attnlint.review REVIEW.json`.

The GitHub Action runs `attnlint check --diff-base auto --output-format github-review -o REVIEW.json`
and then this. Everything it needs comes from the environment GitHub Actions sets:

- `GITHUB_TOKEN`: read from the environment only, never from argv, never printed;
- `GITHUB_REPOSITORY` (`owner/name`), `GITHUB_API_URL` (GitHub Enterprise sets its own);
- `GITHUB_EVENT_PATH`: the event, for the pull request's number and head commit.

A pull request from a fork runs with a read-only token: GitHub answers 403 and the review cannot be
posted. That is not an error of the change under review, so it exits 0 with a note; the workflow's
annotations and SARIF still carry every finding. A 422 (usually a comment on a line GitHub does
not show, when the checkout is not the pull request's head) is retried once with the comments moved
into the review's body. Only the standard library is used, so the step needs nothing installed
beyond attnlint itself.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from attnlint.reporters.github_review import NO_PROBLEMS

DEFAULT_API_URL = "https://api.github.com"
API_VERSION = "2022-11-28"
TIMEOUT_S = 30

EXIT_POSTED, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class ReviewError(Exception):
    """The review cannot be built or sent; the message says why (and never holds the token)."""


@dataclass(frozen=True)
class PullRequest:
    repository: str  # owner/name
    number: int
    head_sha: Optional[str]
    # True when the head lives in another repository: GitHub gives such runs a read-only token.
    from_fork: bool


def pull_request_from_event(event: Dict[str, Any], repository: str) -> PullRequest:
    pr = event.get("pull_request")
    if not isinstance(pr, dict) or "number" not in pr:
        raise ReviewError("the event has no pull request (run this on `pull_request` events)")
    head = pr.get("head") or {}
    base = pr.get("base") or {}
    head_repo = (head.get("repo") or {}).get("full_name")
    base_repo = (base.get("repo") or {}).get("full_name") or repository
    return PullRequest(
        repository=repository,
        number=int(pr["number"]),
        head_sha=head.get("sha"),
        from_fork=bool(head_repo and base_repo and head_repo != base_repo),
    )


def build_request(review: Dict[str, Any], pr: PullRequest, token: str, api_url: str) -> urllib.request.Request:
    """The HTTP request for "create a review for a pull request"."""
    payload = dict(review)
    if pr.head_sha:
        # Line numbers refer to this commit; GitHub would otherwise take the pull request's latest.
        payload["commit_id"] = pr.head_sha
    url = f"{api_url.rstrip('/')}/repos/{pr.repository}/pulls/{pr.number}/reviews"
    return urllib.request.Request(
        url,
        data=json.dumps(payload).encode("utf-8"),
        method="POST",
        headers={
            "Accept": "application/vnd.github+json",
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "User-Agent": "attnlint-review",
            "X-GitHub-Api-Version": API_VERSION,
        },
    )


def _send(request: urllib.request.Request) -> Dict[str, Any]:
    with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:  # noqa: S310 - the API URL
        body = response.read()
    return json.loads(body.decode("utf-8")) if body else {}


def _error_text(exc: urllib.error.HTTPError) -> str:
    try:
        data = json.loads(exc.read().decode("utf-8", "replace"))
    except (ValueError, OSError):
        return exc.reason or ""
    message = data.get("message", "") if isinstance(data, dict) else ""
    errors = data.get("errors") if isinstance(data, dict) else None
    if errors:
        message += " " + json.dumps(errors)
    return message


def comments_in_body(review: Dict[str, Any]) -> Dict[str, Any]:
    """The review with its comments written into the body (for when GitHub refuses a comment)."""
    lines: List[str] = [review.get("body", ""), "", "GitHub did not accept these as line comments:"]
    for comment in review.get("comments", []):
        first = comment.get("start_line", comment["line"])
        where = f"{comment['path']}:{first}" + (f"-{comment['line']}" if first != comment["line"] else "")
        lines.append(f"\n**`{where}`**\n\n{comment['body']}")
    return {"event": review.get("event", "COMMENT"), "body": "\n".join(lines), "comments": []}


def post_review(review: Dict[str, Any], pr: PullRequest, token: str, api_url: str = DEFAULT_API_URL, log=print) -> int:
    """Send the review; returns the exit status (0 also when a fork's token cannot post)."""
    if not review.get("comments") and review.get("body", "").startswith(NO_PROBLEMS):
        log("attnlint: no new findings in this change; no review posted.")
        return EXIT_POSTED
    fork_note = (
        "attnlint: this pull request comes from a fork, whose workflow token is read-only, so the review "
        "cannot be posted; the findings are in this job's annotations and SARIF."
    )
    for attempt in (review, comments_in_body(review)):
        try:
            answer = _send(build_request(attempt, pr, token, api_url))
        except urllib.error.HTTPError as exc:
            reason = _error_text(exc)
            if exc.code in (401, 403, 404) and (pr.from_fork or exc.code == 403):
                log(
                    fork_note
                    if pr.from_fork
                    else f"attnlint: GitHub refused the review ({exc.code} {reason}); "
                    "the token needs `pull-requests: write`. The findings are in the annotations and SARIF."
                )
                return EXIT_POSTED
            if exc.code == 422 and attempt is review and review.get("comments"):
                log(f"attnlint: GitHub rejected a line comment ({reason}); posting them in the review body.")
                continue
            raise ReviewError(f"GitHub answered {exc.code}: {reason}") from None
        except urllib.error.URLError as exc:
            raise ReviewError(f"cannot reach {api_url}: {exc.reason}") from None
        where = answer.get("html_url") if isinstance(answer, dict) else None
        log(
            f"attnlint: review posted with {len(attempt.get('comments', []))} comments"
            + (f": {where}" if where else ".")
        )
        return EXIT_POSTED
    return EXIT_FAILED  # pragma: no cover - the loop always returns


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attnlint.review",
        description="Post an `attnlint check --output-format github-review` payload to the pull request "
        "(token from GITHUB_TOKEN; repository, API URL and pull request from the GitHub Actions environment).",
    )
    parser.add_argument("review", type=Path, help="the JSON written by --output-format github-review")
    parser.add_argument("--pr", type=int, help="pull request number (default: from GITHUB_EVENT_PATH)")
    parser.add_argument("--commit", help="the commit the line numbers refer to (default: the pull request's head)")
    args = parser.parse_args(argv)
    try:
        review = json.loads(args.review.read_text(encoding="utf-8"))
        repository = os.environ.get("GITHUB_REPOSITORY", "")
        if "/" not in repository:
            raise ReviewError("GITHUB_REPOSITORY (owner/name) is not set")
        event: Dict[str, Any] = {}
        event_path = os.environ.get("GITHUB_EVENT_PATH")
        if event_path and Path(event_path).is_file():
            event = json.loads(Path(event_path).read_text(encoding="utf-8"))
        if args.pr is not None:
            pr = PullRequest(repository, args.pr, args.commit, from_fork=False)
        else:
            pr = pull_request_from_event(event, repository)
            if args.commit:
                pr = PullRequest(pr.repository, pr.number, args.commit, pr.from_fork)
        token = os.environ.get("GITHUB_TOKEN", "")
        if not token:
            if pr.from_fork:
                print("attnlint: a fork's pull request has no token to post with; see the annotations and SARIF.")
                return EXIT_POSTED
            raise ReviewError("GITHUB_TOKEN is not set (pass it in the step's `env:`, never as an argument)")
        api_url = os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL
        return post_review(review, pr, token, api_url)
    except (OSError, ValueError) as exc:
        print(f"attnlint: error: cannot read the review: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ReviewError as exc:
        print(f"attnlint: error: {exc}", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
