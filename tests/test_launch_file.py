"""launch.json, typed on both sides: what a backend writes is what its watcher reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tfc_jupyter.backends.launch_file import DockerLaunch, LocalLaunch, ReplicaLaunch
from tfc_jupyter.backends.watched import write_launch

_TEXT = st.text(max_size=8)
_ENV = st.dictionaries(st.text(min_size=1, max_size=6), _TEXT, max_size=3)
_REPLICAS = st.lists(
    st.builds(
        ReplicaLaunch,
        name=st.sampled_from(["chief", "worker-0", "ps-0", "evaluator-0"]),
        env=_ENV,
        daemon=st.booleans(),
        gpus=st.lists(st.sampled_from(["0", "1"]), max_size=2).map(tuple),
    ),
    min_size=1,
    max_size=3,
).map(tuple)
_COMMON = {
    "job_id": _TEXT,
    "store": _TEXT,
    "env": _ENV,
    "replicas": _REPLICAS,
    "runtime_args": st.lists(_TEXT, max_size=4).map(tuple),
    "startup_timeout": st.floats(0, 1e4),
    "timeout": st.none() | st.integers(1, 10**6),
    "restarts": st.integers(0, 5),
}


@given(
    st.builds(LocalLaunch, **_COMMON, cwd=_TEXT, python=_TEXT)
    | st.builds(
        DockerLaunch,
        **_COMMON,
        image=_TEXT,
        mounts=st.lists(_TEXT, max_size=2).map(tuple),
        user=st.none() | _TEXT,
    )
)
def test_what_is_written_reads_back_the_same(launch: LocalLaunch | DockerLaunch) -> None:
    text = json.dumps(launch.to_json())
    assert type(launch).from_json(json.loads(text)) == launch


def test_a_watcher_refuses_another_backend_s_launch(tmp_path: Path) -> None:
    """The docker watcher reading a local supervisor's file (or a field renamed on one side)
    fails at once, naming the keys, rather than starting replicas from half of it."""
    local = LocalLaunch(
        job_id="j",
        store="s",
        env={},
        replicas=(ReplicaLaunch("chief", {}),),
        runtime_args=("script.py",),
        cwd="/nb",
    )
    write_launch(tmp_path, local)
    assert LocalLaunch.read(tmp_path) == local
    assert oct((tmp_path / "launch.json").stat().st_mode & 0o777) == "0o600"
    with pytest.raises(ValueError, match=r"unknown keys \['cwd', 'python'\] for DockerLaunch"):
        DockerLaunch.read(tmp_path)
    data = local.to_json()
    del data["job_id"]
    with pytest.raises(ValueError, match="job_id"):
        LocalLaunch.from_json(data)
