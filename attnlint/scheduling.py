"""Running many files: the result cache first, then the misses over a process pool, big files first.

This module imports neither LibCST nor the rules. A re-run with nothing changed is answered from
the cache here, in the parent process, and never loads the parser (importing LibCST and the rules
costs about a second, more than checking a warm tree). Only a miss imports :mod:`attnlint.engine`.

Scheduling, because the cost of a file is very uneven (most files are rejected by the text
pre-filter in microseconds; one 6,000-line module with attention code takes seconds):

- the misses are sorted by size, largest first, and handed out one chunk at a time as workers free
  up (longest-processing-time-first), so that the run does not end with one worker still parsing a
  big file that happened to sit at the end of its chunk while the other core idles;
- a chunk is one big file, or several small ones up to :data:`CHUNK_BYTES`, which keeps the pickling
  and IPC per file small without coarse-grained chunks;
- a pool is started only when the misses are worth it: starting one costs each worker its own import
  of LibCST and the rules, which a handful of small files does not repay.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, List, Optional, Sequence, Tuple

if TYPE_CHECKING:  # pragma: no cover
    from attnlint.config import Settings
    from attnlint.diagnostics import FileResult

# A chunk holds files up to this many bytes together (a bigger file is a chunk of its own).
CHUNK_BYTES = 64 * 1024
# Below this many bytes of uncached files, one process does the work: a pool's start-up (each
# worker imports LibCST and the rules) costs more than it would save.
POOL_MIN_BYTES = 256 * 1024
POOL_MIN_FILES = 8


@dataclass(frozen=True)
class Job:
    path: str
    display: str
    fix: bool
    write: bool  # False for --diff: compute the fixed text but leave the file alone
    use_cache: bool = False
    # `check --fix --verify`: (source, path, settings) -> allow_fix for fix_source. A module-level
    # function (attnlint.verify.gate.verified_fixes), so jobs stay picklable.
    fix_gate: Optional[Callable] = None


def process_files(
    jobs: Sequence[Job],
    settings: "Settings",
    workers: Optional[int] = None,
    progress: Optional[Callable[[int], None]] = None,
) -> List["FileResult"]:
    """Check (and fix) many files; results come back in the order of `jobs`.

    `progress(n)` is called as files finish, with the number of files finished so far."""
    report = progress or (lambda done: None)
    results: List[Optional["FileResult"]] = [None] * len(jobs)
    misses = _answer_from_cache(jobs, settings, results)
    finished = [len(jobs) - len(misses)]

    def done(index: int, result: "FileResult") -> None:
        results[index] = result
        finished[0] += 1
        report(finished[0])

    if finished[0]:
        report(finished[0])
    if misses:
        workers = workers if workers is not None else (os.cpu_count() or 1)
        sizes = [_size(jobs[i].path) for i in misses]
        if workers <= 1 or len(misses) < POOL_MIN_FILES or sum(sizes) < POOL_MIN_BYTES:
            for index in misses:
                done(index, _run_one(jobs[index], settings))
        else:
            _run_pooled(jobs, settings, misses, sizes, workers, done)
    return results  # type: ignore[return-value]  # every slot is filled


def _answer_from_cache(jobs: Sequence[Job], settings: "Settings", results: list) -> List[int]:
    """Fill `results` with cache hits; return the indices of the jobs that still need checking."""
    cacheable = [i for i, job in enumerate(jobs) if job.use_cache and not job.fix]
    if not cacheable:
        return list(range(len(jobs)))
    from attnlint.cache import result_cache

    from attnlint.fileio import read_regular
    from attnlint.notebook import attach_notebook, is_notebook_path

    cache = result_cache(settings)
    if settings.cache_dir is not None:  # --cache-dir (the cache keys on settings, not on place)
        cache.directory = settings.cache_dir
    if not cache.directory.is_dir():  # a first run: nothing to find, do not hash every file twice
        return list(range(len(jobs)))
    for index in cacheable:
        job = jobs[index]
        try:
            data = read_regular(job.path)  # regular files only: a named pipe must not hang the run
        except OSError:
            continue  # the engine reports it
        hit = cache.get(job.display, data)
        if hit is not None:
            if is_notebook_path(job.path) and hit.diagnostics and hit.source is not None:
                hit = attach_notebook(hit, hit.source)  # the cell map is rebuilt, not cached
            results[index] = hit
    return [i for i, result in enumerate(results) if result is None]


def _run_one(job: Job, settings: "Settings") -> "FileResult":
    from attnlint.engine import process_file

    result = process_file(job, settings)
    if not job.fix and not result.diagnostics:
        # The text is kept for reporters, which only show it around findings; dropping it here
        # keeps a run's memory flat in the number of files (and does not pickle it back).
        result.source = None
    return result


def _run_chunk(chunk: Sequence[Tuple[int, Job]], settings: "Settings") -> List[Tuple[int, "FileResult"]]:
    return [(index, _run_one(job, settings)) for index, job in chunk]


def plan_chunks(sizes: Sequence[int], chunk_bytes: int = CHUNK_BYTES) -> List[List[int]]:
    """Positions into `sizes`, grouped into chunks, largest files first.

    Each chunk is either one file of at least `chunk_bytes`, or consecutive (in size order) files
    whose sizes add up to at most `chunk_bytes`."""
    order = sorted(range(len(sizes)), key=lambda i: -sizes[i])
    chunks: List[List[int]] = []
    current: List[int] = []
    current_bytes = 0
    for position in order:
        size = sizes[position]
        if current and current_bytes + size > chunk_bytes:
            chunks.append(current)
            current, current_bytes = [], 0
        current.append(position)
        current_bytes += size
    if current:
        chunks.append(current)
    return chunks


def _run_pooled(
    jobs: Sequence[Job], settings: "Settings", misses: List[int], sizes: List[int], workers: int, done
) -> None:
    chunks = [[(misses[p], jobs[misses[p]]) for p in chunk] for chunk in plan_chunks(sizes)]
    pending = list(range(len(chunks)))
    while pending:
        broken = _run_pool(chunks, pending, settings, min(workers, len(pending)), done)
        if not broken:
            return
        # A worker died (a native crash in a parser) and took every unfinished chunk with it. The
        # culprit is among the chunks that were running or queued first: check those one file per
        # process (only the culprit is lost, as ATN003), and the rest in a fresh pool.
        suspects, pending = broken[: workers + 1], broken[workers + 1 :]
        from attnlint.engine import process_isolated

        for chunk in suspects:
            for index, job in chunks[chunk]:
                done(index, process_isolated(job, settings))


def _run_pool(chunks, indices: Sequence[int], settings: "Settings", workers: int, done) -> List[int]:
    """Run the chunks at `indices`, passing each result to `done`; the indices of chunks that broke."""
    broken: List[int] = []
    with ProcessPoolExecutor(max_workers=workers) as pool:
        # Submitted in order, taken by whichever worker is free: the largest work goes first.
        futures = [(chunk, pool.submit(_run_chunk, chunks[chunk], settings)) for chunk in indices]
        for chunk, future in futures:
            try:
                for index, result in future.result():
                    done(index, result)
            except BrokenProcessPool:
                broken.append(chunk)
    return broken


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
