"""Time `attnlint check` on a source tree: files, lines, seconds, lines per second.

    python scripts/benchmark.py [PATH ...] [--jobs N] [--repeat R]

With no PATH it measures torch's own `torch/nn` sources (needs torch installed). Speed targets
are checked here, by a person or a scheduled job, never inside the test suite.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*")
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    paths = args.paths
    if not paths:
        import importlib.util

        spec = importlib.util.find_spec("torch")
        if spec is None or spec.origin is None:
            parser.error("no PATH given and torch is not installed")
        paths = [str(Path(spec.origin).parent / "nn")]

    from attnlint import engine
    from attnlint.config import Settings
    from attnlint.discovery import collect_files

    settings = Settings(respect_gitignore=False)
    files = collect_files(paths, settings)
    lines = sum(f.read_bytes().count(b"\n") for f in files)
    jobs = [engine.Job(path=str(f), display=str(f), fix=False, write=False) for f in files]
    timings, findings = [], 0
    for _ in range(args.repeat):
        start = time.perf_counter()
        results = engine.process_files(jobs, settings, workers=args.jobs)
        timings.append(time.perf_counter() - start)
        findings = sum(len(r.diagnostics) for r in results)
    best, median = min(timings), statistics.median(timings)
    print(f"{len(files)} files, {lines} lines, {findings} findings")
    print(f"best {best:.2f} s, median {median:.2f} s over {args.repeat} runs ({lines / best:,.0f} lines/s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
