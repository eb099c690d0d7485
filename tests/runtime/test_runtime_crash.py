"""One readable line for what went wrong, and where a task was when it died."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from runtime_helpers import job_env
from tfc_runtime import crash


class InvalidArgumentError(Exception):
    """Stands in for TensorFlow's class of the same name (the summary reads only the name)."""


def test_in_user_code_gives_the_last_line() -> None:
    exc = AttributeError(
        'in user code:\n\n    File "script.py", line 12, in train_step  *\n'
        "        optimizer.apply_gradients(zip(grads, vars))\n\n"
        "    AttributeError: 'NoneType' object has no attribute 'merge_call'\n"
    )
    assert crash.summary(exc) == "AttributeError: 'NoneType' object has no attribute 'merge_call'"


def test_plain_messages_keep_their_first_line() -> None:
    assert crash.summary(ValueError("bad value 3\nmore detail")) == "ValueError: bad value 3"
    assert crash.summary(KeyError("k")) == "KeyError: 'k'"
    assert crash.summary(RuntimeError()) == "RuntimeError"
    assert len(crash.summary(ValueError("x" * 1000))) < 320


def test_complex_collectives_are_explained() -> None:
    exc = InvalidArgumentError(
        "Value for attr 'T' of complex64 is not in the list of allowed values: bool, float\n"
        "\t; NodeDef: {{node CollectiveBcastSend}} [Op:CollectiveBcastSend]"
    )
    text = crash.summary(exc)
    assert text.startswith("InvalidArgumentError: Value for attr 'T' of complex64")
    assert "cannot all-reduce complex values" in text


def test_a_full_disk_says_where_and_how_much_is_free(tmp_path: Path) -> None:
    # a real ENOSPC: /dev/full is always full
    with pytest.raises(OSError) as info, open("/dev/full", "w") as fh:
        fh.write("weights")
    assert crash.explain(info.value).startswith("a disk the job writes to is full: free some")
    exc = OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "model" / "x.keras"))
    hint = crash.explain(exc)
    assert f"the disk holding {tmp_path} is full (" in hint and "MB free)" in hint
    assert "another disk" in hint


def test_position_file_follows_the_main_thread(tmp_path: Path) -> None:
    """A task killed with SIGKILL (an OOM kill) leaves the notebook line it was running."""
    script = tmp_path / "script.py"
    script.write_text("import time\nx = 1\ntime.sleep(30)\n")
    driver = (
        "import runpy, sys\nfrom tfc_runtime import crash\n"
        f"crash.track_position({str(script)!r}, 'chief-0', lambda n: f'cell 4, line {{n}}')\n"
        f"runpy.run_path({str(script)!r})\n"
    )
    env = {**job_env(), "TFC_JOB_DIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-c", driver], env=env)
    where = tmp_path / "status" / "chief-0.where"
    deadline = time.monotonic() + 20
    try:
        while not where.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    assert where.read_text() == "cell 4, line 3"


@pytest.mark.skipif(sys.platform != "linux", reason="faulthandler output format on Linux")
def test_fault_log_names_the_script_line(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text("import ctypes\n\nctypes.string_at(0)\n")
    driver = (
        "import runpy\nfrom tfc_runtime import crash\ncrash.enable_fault_log('worker-0')\n"
        f"runpy.run_path({str(script)!r})\n"
    )
    env = {**job_env(), "TFC_JOB_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", driver], env=env, timeout=60, check=False)
    assert done.returncode == -signal.SIGSEGV
    fault = (tmp_path / "errors" / "worker-0.fault").read_text()
    assert "Segmentation fault" in fault and f'File "{script}", line 3' in fault


def test_a_wrapped_error_is_summed_up_by_its_real_message() -> None:
    """TensorFlow's "in user code:" errors end with a pointer line, not the cause."""
    from tfc_runtime.crash import summary

    wrapped = ValueError(
        'in user code:\n\n    File "script.py", line 3, in step\n        y = f(x)\n\n'
        "    ValueError: Dimensions must be equal, but are 3 and 4\n\n"
        "Please see https://www.tensorflow.org/guide/function for more"
    )
    assert summary(wrapped) == "ValueError: Dimensions must be equal, but are 3 and 4"
    assert summary(RuntimeError("in user code:\n  frame\n  the last words")) == (
        "RuntimeError: the last words"
    )
