"""The child process: isolation, limits, and that every failure comes back as a failed check."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from attnlint.verify import supported_rules, verify
from attnlint.verify.runner import package_parent_dir

REPO = Path(__file__).resolve().parents[2]

TINY = textwrap.dedent(
    """
    import os
    import torch
    import torch.nn as nn

    class Attn(nn.Module):
        def __init__(self, d_in, d_out):
            super().__init__()
            self.W_q = nn.Parameter(torch.randn(d_in, d_out))
            self.W_k = nn.Parameter(torch.randn(d_in, d_out))
            self.W_v = nn.Parameter(torch.randn(d_in, d_out))
            {init_extra}

        def forward(self, x):
            {forward_extra}
            q, k, v = x @ self.W_q, x @ self.W_k, x @ self.W_v
            return torch.softmax(q @ k.T / k.shape[-1] ** 0.5, dim=-1) @ v
    """
)


def _source(init_extra="pass", forward_extra="pass"):
    return TINY.format(init_extra=init_extra, forward_extra=forward_extra)


def _fixed(source):
    return source.replace("k.T", "k.transpose(-2, -1)")


CPU32 = {"devices": ["cpu"], "dtypes": {"cpu": ["float32"]}}


def test_importing_attnlint_verify_does_not_import_torch():
    code = "import sys, attnlint.verify; assert 'torch' not in sys.modules, 'torch imported'"
    done = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(REPO)!r}); {code}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


def test_child_is_pointed_at_this_checkout():
    assert Path(package_parent_dir()) == REPO


def test_unknown_rule_is_a_usage_error():
    assert "ATN103" in supported_rules()
    with pytest.raises(ValueError, match="no verification recipe"):
        verify("ATN999", "", "", entry="X")


def test_rule_name_is_accepted_and_user_output_cannot_corrupt_the_reply():
    # User code writing to fd 1 from Python and from the OS level, on every forward call.
    noisy = _source(forward_extra='print("{"); os.write(1, b"not json\\n")')
    reports = verify("batched-transpose", noisy, _fixed(noisy), entry="Attn", **CPU32)
    assert [r.dtype for r in reports] == ["float32"]
    assert reports[0].ok, reports[0].summary()


def test_no_evidence_is_not_success():
    source = _source()
    (report,) = verify("ATN103", source, _fixed(source), entry="Attn", devices=["cpu"], dtypes={"cpu": []})
    assert not report.ok and report.checks[0].name == "no_evidence"


def test_fix_that_changes_the_parameters_fails_the_strict_load():
    source = _source()
    renamed = _fixed(source).replace("self.W_v", "self.W_value")
    (report,) = verify("ATN103", source, renamed, entry="Attn", **CPU32)
    assert not report.ok
    assert report.checks[0].name == "build_modules"
    assert "state_dict" in report.checks[0].detail or "Missing key" in report.checks[0].detail


def test_fixed_source_without_the_entry_is_a_failed_check():
    source = _source()
    (report,) = verify("ATN103", source, "import torch\n", entry="Attn", **CPU32)
    assert not report.ok and report.checks[0].name == "extract_entry"


def test_interpreter_exit_in_user_code_is_a_failed_check():
    source = _source(init_extra="os._exit(3)")
    (report,) = verify("ATN103", source, _fixed(source), entry="Attn", **CPU32)
    assert not report.ok
    assert report.checks[0].name == "child_process"
    assert "status 3" in report.checks[0].detail


def test_endless_user_code_times_out_and_is_killed():
    source = _source(init_extra="while True: pass")
    (report,) = verify("ATN103", source, _fixed(source), entry="Attn", timeout_s=4, **CPU32)
    assert not report.ok
    assert "timed out" in report.checks[0].detail


def test_child_limits_itself_before_importing_torch():
    pytest.importorskip("resource")
    code = (
        "import resource, sys; from attnlint.verify.child import apply_limits; "
        "apply_limits({'cpu_seconds': 77, 'memory_bytes': 3 * 1024**3}); "
        "print(resource.getrlimit(resource.RLIMIT_CPU)[0], resource.getrlimit(resource.RLIMIT_CORE)[0], "
        "resource.getrlimit(resource.RLIMIT_AS)[0], 'torch' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(REPO)!r}); {code}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    cpu, core, address_space, torch_loaded = done.stdout.split()
    assert (int(cpu), int(core), torch_loaded) == (77, 0, "False")
    # The address-space limit is skipped where an NVIDIA driver exists (CUDA reserves huge ranges).
    from attnlint.verify.child import _nvidia_device_present

    if not _nvidia_device_present():
        assert int(address_space) == 3 * 1024**3
