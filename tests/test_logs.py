"""The one log reader: whole lines only, bounded reads, every replica followed."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tfc_jupyter.store.logs import (
    LogTail,
    Merger,
    OffsetPastEnd,
    colours_only,
    is_noise,
    label,
    printable,
    read_chunk,
    replicas,
)


def test_whole_lines_only_until_the_job_ends(tmp_path: Path) -> None:
    log = tmp_path / "chief.log"
    log.write_bytes(b"epoch 1\nepoch 2\nhalf a li")
    assert read_chunk(log, 0, final=False) == (b"epoch 1\nepoch 2\n", 25)
    assert read_chunk(log, 16, final=False) == (b"", 25)  # the half line waits
    assert read_chunk(log, 16, final=True) == (b"half a li", 25)
    assert read_chunk(tmp_path / "none.log", 0, final=False) == (b"", 0)
    with pytest.raises(OffsetPastEnd):
        read_chunk(log, 26, final=False)


def test_a_long_line_is_cut_at_a_character_boundary(tmp_path: Path) -> None:
    log = tmp_path / "chief.log"
    log.write_bytes(("é" * 10 + "\n").encode())
    data, _ = read_chunk(log, 0, 5, final=False)
    assert data == "éé".encode()  # 4 bytes: the third é's first byte is not cut off alone


def test_the_tail_follows_every_replica(tmp_path: Path) -> None:
    (tmp_path / "worker-0.log").write_text("w a\n")
    (tmp_path / "chief.log").write_text("c a\nc b")
    (tmp_path / "supervisor.log").write_text("not a replica\n")
    assert replicas(tmp_path) == ["chief", "worker-0"]
    tail = LogTail(tmp_path)
    assert tail.read() == [("chief", "c a"), ("worker-0", "w a")]
    with open(tmp_path / "chief.log", "a") as fh:
        fh.write("\r\nc c")
    assert tail.read() == [("chief", "c b")]
    assert tail.read(final=True) == [("chief", "c c")]
    assert tail.read(final=True) == []


def test_more_than_one_chunk_is_read_in_one_go(tmp_path: Path) -> None:
    lines = [f"line {i:07d}" for i in range(200_000)]  # about 2.6 MB: three chunks
    (tmp_path / "chief.log").write_text("\n".join(lines) + "\n")
    assert [line for _, line in LogTail(tmp_path).read()] == lines


@pytest.mark.parametrize(
    ("line", "noise"),
    [
        (
            "WARNING: All log messages before absl::InitializeLog() is called are written to",
            True,
        ),
        (
            "I0000 00:00:1795467289.817563       1 port.cc:153] oneDNN custom operations are on.",
            True,
        ),
        ("W0000 00:00:1795467291.327088   25448 dataset.cc:997] Input of GeneratorDatasetOp", True),
        ("2024-01-02 10:11:12.123456: I tensorflow/core/util/port.cc:113] oneDNN custom", True),
        ("2024-01-02 10:11:12.123456: W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc", True),
        ("[tfc_runtime] task chief:0 of 2 workers (TF_CONFIG), strategy MultiWorkerMirrored", True),
        ("[tfc_runtime] job failed at cell 2, line 3: ValueError: bad", True),
        ("[tfc_runtime] multi-worker job: TF_USE_LEGACY_KERAS=1, tf.keras is tf-keras", True),
        ("[tfc_runtime] cannot start the job: no TF_CONFIG", False),
        ("[tfc_runtime] !pip install x exited with status 1", False),
        ("[tfc_runtime] connecting to the TPU (deadline 600 s)", False),
        (
            "To enable the following instructions: AVX2 FMA, in other operations, rebuild "
            "TensorFlow with the appropriate compiler flags.",
            True,
        ),
        # what the user should see: their prints, Python warnings, errors, our warnings
        ("Epoch 1/3", False),
        (
            "E0000 00:00:1795467289.817563       1 cuda_dnn.cc:8310] Could not create cudnn handle",
            False,
        ),
        ("WARNING:tensorflow:AutoGraph could not transform <function <lambda>>", False),
        ("[tfc_runtime] warning: 2 GPUs asked for, 0 found", False),
        ("I0000 is my user id", False),
    ],
)
def test_what_is_chatter(line: str, noise: bool) -> None:
    assert is_noise(line) is noise


def test_a_line_every_replica_prints_is_shown_once() -> None:
    merger = Merger(replicas=2, hold_s=1.0)
    assert merger.add("chief", "epoch 1 loss 0.5", 0.0) == []  # waits for the worker
    assert merger.add("chief", "chief only", 0.1) == []
    assert merger.add("worker-0", "epoch 1 loss 0.5", 0.2) == [
        (["chief", "worker-0"], "epoch 1 loss 0.5")
    ]
    assert merger.ready(0.5) == []  # the chief's own line may still be printed by the worker
    assert merger.ready(1.2) == [(["chief"], "chief only")]
    assert merger.add("worker-0", "late", 2.0) == []
    assert merger.ready(2.1, final=True) == [(["worker-0"], "late")]
    assert Merger(replicas=1).add("chief", "at once", 0.0) == [(["chief"], "at once")]
    # Keras' epoch line, each replica with its own clock: alike, shown once (the chief's).
    keras = Merger(replicas=2)
    keras.add("chief", "25/25 - 1s - loss: 1.9832 - 756ms/epoch - 30ms/step", 0.0)
    assert keras.add("worker-0", "25/25 - 1s - loss: 1.9832 - 748ms/epoch - 31ms/step", 0.1) == [
        (["chief", "worker-0"], "25/25 - 1s - loss: 1.9832 - 756ms/epoch - 30ms/step")
    ]
    keras.add("chief", "25/25 - 0s - loss: 0.1682", 0.2)  # another loss is another line
    assert keras.add("worker-0", "25/25 - 0s - loss: 0.1700", 0.3) == []
    assert label(["worker-1", "chief", "worker-0"]) == "chief, worker-0, worker-1"
    assert label(["worker-2", "chief", "worker-0", "worker-1"]) == "chief +3"


def test_a_follower_reads_quickly_at_first_then_less_often() -> None:
    """A launch is watched for its first line: the logs every 10 ms for the first 2 s, then
    every 50 ms; the record every 50 ms, and a long job's every 200 ms (its end wakes the
    follower through the watcher's exit: test_local_backend's nap test)."""
    from tfc_jupyter.jobs import LOG_POLL_S, POLL_S, QUICK_POLL_S, poll_delays

    assert poll_delays(100.0, 100.0) == (LOG_POLL_S, QUICK_POLL_S) == (0.05, 0.01)
    assert poll_delays(100.0, 101.9) == (LOG_POLL_S, QUICK_POLL_S)
    assert poll_delays(100.0, 103.0) == (LOG_POLL_S, LOG_POLL_S)
    assert poll_delays(100.0, 200.0) == (POLL_S, LOG_POLL_S)


@pytest.mark.item("FIFOs and devices are never read; every read is bounded", suite="bad input")
@pytest.mark.timeout(20)
def test_a_fifo_among_a_job_s_files_is_never_waited_on(tmp_path: Path) -> None:
    """Issue 39: a FIFO planted as a replica's log or as the results file hung `run`, `logs`
    and `jobs` (opening a FIFO with no writer waits for one). Only regular files are read."""
    from tfc_jupyter.returns.results import job_results
    from tfc_jupyter.store.logs import unfinished_line

    logs = tmp_path / "logs"
    logs.mkdir()
    os.mkfifo(logs / "chief.log")
    os.mkfifo(tmp_path / "results.jsonl")
    (logs / "worker-0.log").write_text("a line\n")
    assert read_chunk(logs / "chief.log", 0, final=True) == (b"", 0)
    assert unfinished_line(logs / "chief.log", 0) == ("", False)
    assert [line for _, line in LogTail(logs).lines(final=True)] == ["a line"]
    assert job_results(logs, in_logs=True).epochs == []


_ESCAPES = st.sampled_from(
    [
        "\x1b]52;c;SGVsbG8=\x07",  # write the clipboard
        "\x1b]0;title\x1b\\",  # set the title
        "\x1b[2J",  # clear the screen
        "\x1bc",  # reset the terminal
        "\x1b[?1049h",  # the alternate screen
        "\x9b2J",  # an 8-bit CSI
        "\x1b]8;;https://example.com\x07",  # a link
        "\x1b",
        "\x07",
    ]
)
_SGR_CODES = st.sampled_from(["\x1b[31m", "\x1b[0m", "\x1b[1;32m", "\x1b[38;5;208m"])


@pytest.mark.item("terminal escapes and markup in a job stay inert", suite="bad input")
@given(st.lists(_ESCAPES | _SGR_CODES | st.text(max_size=5), max_size=12).map("".join))
def test_no_escape_but_a_colour_reaches_a_terminal(line: str) -> None:
    """Issue 39: a job's OSC 52 (clipboard), screen clear, title and reset reached a terminal
    through `tfc-jupyter logs -f` and pipes through `run` and `logs`."""
    kept = re.sub(r"\x1b\[[0-9;:]*m", "", colours_only(line))  # less the colours it keeps
    assert not re.search(r"[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f]", kept)
    assert "\x1b" not in printable(line)


@pytest.mark.item("terminal escapes and markup in a job stay inert", suite="bad input")
@given(st.lists(_SGR_CODES | st.text(st.characters(categories=["L", "N", "P", "Zs"])), max_size=8))
def test_what_a_job_prints_in_colour_is_kept_as_printed(parts: list[str]) -> None:
    assert colours_only("".join(parts)) == "".join(parts)


@pytest.mark.item("terminal escapes and markup in a job stay inert", suite="bad input")
def test_the_cli_prints_a_job_s_log_without_its_escapes(
    tmp_path: Path, tfc_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tfc_jupyter import cli
    from tfc_jupyter.jobs import job_dict, store_for
    from tfc_jupyter.store.records import JobRecord

    logs = tmp_path / "job" / "logs"
    logs.mkdir(parents=True)
    (logs / "chief.log").write_text("ok \x1b]52;c;SGVsbG8=\x07\x1b[2Jdone\n")
    store = store_for()
    record = store.create(
        JobRecord(
            id="esc-1",
            name="esc",
            backend="local",
            job_dir=str(logs.parent),
            log_dir=str(logs),
            error="boom \x1b]0;pwned\x07",
        )
    )
    assert cli.main(["logs", "esc-1"]) == 0
    assert capsys.readouterr().out == "[chief] ok done\n"
    assert job_dict(record)["error"] == "boom "


class _Sink:
    """A stream that keeps nothing (a pipe read by someone else)."""

    written = 0

    def write(self, text: str) -> int:
        self.written += text.count("\n")
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


@pytest.mark.item(
    "bounds: logs stream, metrics are downsampled, oversize requests get 413", suite="bad input"
)
def test_following_a_big_log_holds_it_in_bounded_memory(tmp_path: Path, tfc_env: Path) -> None:
    """Issue 39: `tfc-jupyter run` and `logs -f` following a job that printed 1 GB reached
    3 GB and were killed: the whole backlog was read into one list. Here 2 replicas x 100,000
    lines (about 8 MB of log) are followed within a few MB."""
    import tracemalloc

    from tfc_jupyter.jobs import Job, store_for
    from tfc_jupyter.store.records import JobRecord, JobState

    logs = tmp_path / "job" / "logs"
    logs.mkdir(parents=True)
    for replica in ("chief", "worker-0"):
        with (logs / f"{replica}.log").open("w") as f:
            for i in range(100_000):
                f.write(f"{replica} line {i:07d} of the job's own output\n")
    store = store_for()
    store.create(
        JobRecord(
            id="big-1",
            name="big",
            backend="local",
            state=JobState.SUCCEEDED,
            job_dir=str(logs.parent),
            log_dir=str(logs),
            spec={"worker_count": 1},
        )
    )
    sink = _Sink()
    tracemalloc.start()
    try:
        Job("big-1", store).follow(out=sink, timeout=120)  # type: ignore[arg-type]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert sink.written >= 200_000
    assert peak < 8 << 20, f"{peak / 2**20:.1f} MiB"


@pytest.mark.item("a finished job's long line is one line", suite="faults")
def test_a_finished_job_s_long_line_is_one_line(tmp_path: Path) -> None:
    """Issue 39: a 10 MB line was printed as 10 lines by `tfc-jupyter logs` (read a 1 MB chunk
    at a time). A finished job's long line comes whole; a live one still comes in pieces (the
    follower shows what there is)."""
    long = "é" * (3 << 20)  # 6 MB of two-byte characters: chunks cut inside none of them
    (tmp_path / "chief.log").write_text(f"first\n{long}\nnext\nlast, unfinished")
    got = [line for _, line in LogTail(tmp_path).lines(final=True)]
    assert got == ["first", long, "next", "last, unfinished"]
    live = [line for _, line in LogTail(tmp_path).lines()]
    assert live[0] == "first" and "".join(live[1:-1]) == long and live[-1] == "next"
