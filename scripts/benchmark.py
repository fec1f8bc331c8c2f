"""attnlint's speed against ruff, flake8 and TorchFix, on real trees, in one command.

    python scripts/benchmark.py                      # torch + timm + transformers, 3 rounds
    python scripts/benchmark.py --corpus torch --rounds 5
    python scripts/benchmark.py --scaling            # one file of N attention modules, N = 100..800
    python scripts/benchmark.py --profile transformers   # where the time goes (cProfile)
    python scripts/benchmark.py --corpus torch --tools attnlint-cold --baseline /tmp/old \
        --select ATN101,ATN102,ATN103,ATN201,ATN202,ATN203,ATN204,ATN205   # before/after, same rules

It builds the corpus under --cache-dir (default ~/.cache/attnlint-benchmark): torch's own `nn` and
`distributed` sources copied from the installed torch, the `transformers` and `timm` wheels fetched
with `pip download --no-deps` (pinned, so that numbers can be compared) and unpacked. The tools
other than attnlint get their own virtual environments there: ruff (`ruff check --select ALL`, the
speed of light) and TorchFix (which pins an older LibCST). flake8 runs attnlint's plugin from the
environment running this script.

Each round runs every tool once, in turn, so that a machine that gets busier or quieter during
the run affects every tool alike (the numbers are ratios in one run, not absolute times):
attnlint cold (no cache), warm (the cache of the cold run, nothing changed), cold with `--jobs 1`,
`flake8 --select=ATN`, ruff and TorchFix. It prints the median of each, the ratio to ruff, lines per
second and the peak memory of the whole process tree (pool workers included), sampled from /proc.

Speed targets live here, never in the test suite.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

WHEELS = {"transformers": "5.24.0", "timm": "1.0.31"}
TORCH_PARTS = ("nn", "distributed")
CORPORA = ("torch", "timm", "transformers")
TOOLS = ("attnlint-cold", "attnlint-warm", "attnlint-jobs1", "flake8", "ruff", "torchfix")


# ---------------------------------------------------------------------------------------------
# Corpus and tools
# ---------------------------------------------------------------------------------------------
def build_corpus(name: str, cache: Path) -> Path:
    target = cache / "corpus" / name
    if target.is_dir():
        return target
    staging = Path(tempfile.mkdtemp(dir=cache, prefix=f".{name}-"))
    if name == "torch":
        import importlib.util

        spec = importlib.util.find_spec("torch")
        if spec is None or spec.origin is None:
            raise SystemExit("the torch corpus needs torch installed (pip install torch==2.13.0)")
        root = Path(spec.origin).parent
        for part in TORCH_PARTS:
            shutil.copytree(root / part, staging / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    else:
        wheel_dir = cache / "wheels"
        wheel_dir.mkdir(parents=True, exist_ok=True)
        wheel = next(wheel_dir.glob(f"{name}-{WHEELS[name]}-*.whl"), None)
        if wheel is None:
            _run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--no-deps",
                    "-q",
                    "-d",
                    str(wheel_dir),
                    f"{name}=={WHEELS[name]}",
                ]
            )
            wheel = next(wheel_dir.glob(f"{name}-{WHEELS[name]}-*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            members = [m for m in archive.namelist() if m.startswith(f"{name}/")]
            archive.extractall(staging, members)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging.rename(target)
    return target


def tool_venv(cache: Path, name: str, requirement: str, executable: str) -> Optional[Path]:
    """A virtual environment of its own for a tool; None when it does not install here."""
    venv = cache / "venvs" / name
    binary = venv / "bin" / executable
    if binary.exists():
        return binary
    try:
        _run([sys.executable, "-m", "venv", str(venv)])
        _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", requirement])
    except subprocess.CalledProcessError as exc:
        print(f"note: {name} does not install here ({exc}); it is left out", file=sys.stderr)
        return None
    return binary if binary.exists() else None


def _run(argv: Sequence[str]) -> None:
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)


def count_lines(root: Path) -> int:
    return sum(p.read_bytes().count(b"\n") for p in root.rglob("*.py"))


# ---------------------------------------------------------------------------------------------
# Timing with the peak memory of the process tree
# ---------------------------------------------------------------------------------------------
@dataclass
class Sample:
    seconds: float
    peak_rss_kib: int
    returncode: int


def _tree_rss_kib(pid: int) -> int:
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        try:
            with open(f"/proc/{current}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as children:
                    stack.extend(int(c) for c in children.read().split())
        except (OSError, ValueError):
            continue
    return total


def measure(argv: Sequence[str], cwd: Path, timeout: float, env: Optional[Dict[str, str]] = None) -> Sample:
    start = time.perf_counter()
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = 0
    while process.poll() is None:
        peak = max(peak, _tree_rss_kib(process.pid))
        if time.perf_counter() - start > timeout:
            process.kill()
            process.wait()
            return Sample(float("inf"), peak, -9)
        time.sleep(0.02)
    return Sample(time.perf_counter() - start, peak, process.returncode)


# ---------------------------------------------------------------------------------------------
# The comparison
# ---------------------------------------------------------------------------------------------
@dataclass
class Tool:
    name: str
    argv: List[str]
    before: Optional[Callable[[Path], None]] = None  # e.g. drop the cache: a cold run
    env: Optional[Dict[str, str]] = None


@dataclass
class Result:
    samples: Dict[str, List[Sample]] = field(default_factory=dict)


def _drop_cache(corpus: Path) -> None:
    shutil.rmtree(corpus / ".attnlint_cache", ignore_errors=True)


def tools_for(
    cache: Path, wanted: Sequence[str], baseline: Optional[Path] = None, select: Optional[str] = None
) -> List[Tool]:
    attnlint = [sys.executable, "-m", "attnlint", "check", "--exit-zero"]
    if select:
        # The same rules for attnlint and the baseline: what a change to the analysis costs,
        # apart from files that rules added since then parse.
        attnlint += ["--select", select]
    tools = {
        "attnlint-cold": Tool("attnlint-cold", attnlint + ["."], before=_drop_cache),
        "attnlint-warm": Tool("attnlint-warm", attnlint + ["."]),  # runs after the cold one: a full cache
        "attnlint-jobs1": Tool("attnlint-jobs1", attnlint + ["--no-cache", "--jobs", "1", "."]),
        "flake8": Tool("flake8", [sys.executable, "-m", "flake8", "--select=ATN", "--isolated", "."]),
    }
    if "ruff" in wanted:
        ruff = tool_venv(cache, "ruff", "ruff", "ruff")
        if ruff is not None:
            tools["ruff"] = Tool(
                "ruff", [str(ruff), "check", "--select", "ALL", "--no-cache", "--isolated", "--exit-zero", "-q", "."]
            )
    if "torchfix" in wanted:
        torchfix = tool_venv(cache, "torchfix", "torchfix", "torchfix")
        if torchfix is not None:
            tools["torchfix"] = Tool("torchfix", [str(torchfix), "."])
    if baseline is not None:
        # Another checkout of attnlint (e.g. `git worktree add /tmp/main main`), run from its source
        # tree with this environment's dependencies: before/after in the same run.
        env = {**os.environ, "PYTHONPATH": str(baseline)}
        tools["baseline-cold"] = Tool("baseline-cold", attnlint + ["."], before=_drop_cache, env=env)
        tools["baseline-warm"] = Tool("baseline-warm", attnlint + ["."], env=env)
        wanted = [*wanted, "baseline-cold", "baseline-warm"]
    return [tools[name] for name in wanted if name in tools]


def compare(corpus: Path, tools: List[Tool], rounds: int, timeout: float) -> Result:
    result = Result({tool.name: [] for tool in tools})
    for round_number in range(rounds):
        for tool in tools:
            if tool.before is not None:
                tool.before(corpus)
            sample = measure(tool.argv, corpus, timeout, tool.env)
            result.samples[tool.name].append(sample)
            memory = sample.peak_rss_kib / 1024
            print(f"  round {round_number + 1}: {tool.name:15s} {sample.seconds:8.2f} s  {memory:7.1f} MiB", flush=True)
    return result


def report(name: str, corpus: Path, result: Result) -> str:
    files = sum(1 for _ in corpus.rglob("*.py"))
    lines = count_lines(corpus)
    medians = {tool: statistics.median(s.seconds for s in samples) for tool, samples in result.samples.items()}
    peaks = {tool: max(s.peak_rss_kib for s in samples) for tool, samples in result.samples.items()}
    ruff = medians.get("ruff")
    cold = medians.get("attnlint-cold")
    out = [f"\n{name}: {files} files, {lines:,} lines, {len(next(iter(result.samples.values())))} rounds"]
    out.append(f"| {'tool':15s} | median s | x ruff | lines/s | peak MiB |")
    out.append(f"|{'-' * 17}|---------:|-------:|--------:|---------:|")
    for tool, median in medians.items():
        ratio = f"{median / ruff:.2f}" if ruff else "-"
        speed = f"{lines / median:,.0f}" if median and median != float("inf") else "-"
        out.append(f"| {tool:15s} | {median:8.2f} | {ratio:>6s} | {speed:>7s} | {peaks[tool] / 1024:8.1f} |")
    if cold and "attnlint-warm" in medians:
        out.append(f"warm / cold = {medians['attnlint-warm'] / cold:.3f} (target <= 0.05)")
    if cold and "attnlint-jobs1" in medians:
        out.append(f"cold (all cores) / --jobs 1 = {cold / medians['attnlint-jobs1']:.2f} (2 cores: ideal 0.5)")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# Scaling: one file of N attention modules
# ---------------------------------------------------------------------------------------------
MODULE = """
class Attention{i}(nn.Module):
    def __init__(self, dim, heads=8):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, mask=None):
        b, n, _ = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(b, n, self.heads, self.head_dim).transpose(1, 2)
        k = k.view(b, n, self.heads, self.head_dim).transpose(1, 2)
        v = v.view(b, n, self.heads, self.head_dim).transpose(1, 2)
        scores = q @ k.transpose(-2, -1){scale}
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        attn = scores.softmax(dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(b, n, -1)
        return self.proj(out)
"""


def attention_modules(count: int) -> str:
    """`count` attention modules; every other one lacks the 1/sqrt(d) scale (an ATN101 finding)."""
    parts = ["import torch\nfrom torch import nn\n"]
    for i in range(count):
        parts.append(MODULE.format(i=i, scale=" * self.head_dim**-0.5" if i % 2 else ""))
    return "".join(parts)


_TIME_ONE = textwrap.dedent(
    """
    import sys, time
    from attnlint import engine
    source = open(sys.argv[1], encoding="utf-8").read()
    engine.check_source(source[: source.index("class Attention1(")], "warmup.py")  # imports, caches
    start = time.perf_counter()
    result = engine.check_source(source, sys.argv[1])
    print(time.perf_counter() - start, len(result.diagnostics))
    """
)


def scaling(sizes: Sequence[int], rounds: int, timeout: float) -> str:
    """Engine time (parse + analysis + rules + positions) of one file, in its own process."""
    rows, times = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for count in sizes:
            path = Path(tmp) / f"modules_{count}.py"
            path.write_text(attention_modules(count), encoding="utf-8")
            lines = path.read_text().count("\n")
            samples, findings = [], None
            for _ in range(rounds):
                try:
                    out = subprocess.run(
                        [sys.executable, "-c", _TIME_ONE, str(path)],
                        capture_output=True,
                        text=True,
                        timeout=timeout,
                        check=True,
                    ).stdout.split()
                except subprocess.TimeoutExpired:
                    samples.append(float("inf"))
                    break
                samples.append(float(out[0]))
                findings = int(out[1])
            times[count] = statistics.median(samples)
            rows.append(
                f"| {count:4d} | {lines:6d} | {findings if findings is not None else '-':>8} | {times[count]:8.2f} |"
            )
            print(rows[-1], flush=True)
            if times[count] == float("inf"):
                break
    out = [
        "\nOne file of N attention modules (engine time, median):",
        "|    N |  lines | findings |        s |",
        "|-----:|-------:|---------:|---------:|",
    ]
    out += rows
    first, last = sizes[0], sizes[-1]
    if first in times and last in times:
        out.append(f"{last} / {first} modules: {times[last] / times[first]:.1f}x (linear: {last / first:.0f}x)")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# Where the time goes
# ---------------------------------------------------------------------------------------------
def profile(target: Path, top: int, sample_every: int) -> str:
    """cProfile of the engine over `target` (a file, or every `sample_every`-th file of a tree)."""
    import cProfile
    import io
    import pstats

    from attnlint import engine
    from attnlint.config import Settings

    files = [target] if target.is_file() else sorted(target.rglob("*.py"))[::sample_every]
    sources = [(str(f), f.read_text(encoding="utf-8", errors="replace")) for f in files]
    settings = Settings(respect_gitignore=False)
    engine.check_source("import torch\n", "warmup.py", settings)
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    for path, source in sources:
        engine.check_source(source, path, settings)
    profiler.disable()
    elapsed = time.perf_counter() - start
    buffer = io.StringIO()
    stats = pstats.Stats(profiler, stream=buffer)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    lines = sum(s.count("\n") for _, s in sources)
    return f"{len(sources)} files, {lines:,} lines, {elapsed:.1f} s under the profiler\n" + buffer.getvalue()


# ---------------------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default=",".join(CORPORA), help=f"comma-separated, of {', '.join(CORPORA)}")
    parser.add_argument("--tools", default=",".join(TOOLS), help=f"comma-separated, of {', '.join(TOOLS)}")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=1800, help="seconds before one run is given up")
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "attnlint-benchmark")
    parser.add_argument("--baseline", type=Path, help="a source tree of another attnlint to time alongside")
    parser.add_argument(
        "--select", help="rule codes for attnlint and the baseline alike (e.g. the rules the baseline has)"
    )
    parser.add_argument("--scaling", action="store_true", help="time one file of 100..800 attention modules")
    parser.add_argument("--sizes", default="100,200,400,800")
    parser.add_argument(
        "--profile", metavar="TARGET", help="cProfile the engine instead: a corpus name, a path, or modules:N"
    )
    parser.add_argument("--sample-every", type=int, default=10, help="with --profile on a tree: every k-th file")
    args = parser.parse_args()
    cache = args.cache_dir.expanduser().resolve()
    cache.mkdir(parents=True, exist_ok=True)

    if args.scaling:
        sizes = [int(s) for s in args.sizes.split(",")]
        print(scaling(sizes, args.rounds, args.timeout))
        return 0
    if args.profile:
        if args.profile in CORPORA:
            target = build_corpus(args.profile, cache)
        elif args.profile.startswith("modules:"):  # a generated file, e.g. modules:800
            target = cache / f"modules_{args.profile[len('modules:') :]}.py"
            target.write_text(attention_modules(int(args.profile[len("modules:") :])), encoding="utf-8")
        else:
            target = Path(args.profile)
        print(profile(target, 30, args.sample_every))
        return 0

    wanted = [t for t in args.tools.split(",") if t]
    tables = []
    for name in [c for c in args.corpus.split(",") if c]:
        corpus = build_corpus(name, cache)
        print(f"{name}: {corpus}", flush=True)
        result = compare(corpus, tools_for(cache, wanted, args.baseline, args.select), args.rounds, args.timeout)
        tables.append(report(name, corpus, result))
        print(tables[-1], flush=True)
    print("\n".join(tables))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
