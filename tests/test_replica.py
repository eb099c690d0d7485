"""A job's replicas: how a count the user gives reaches each replica's ``TF_CONFIG``.

The walk is read from the typed contracts, not written down: the option the flag sets
(:class:`JobOptions`), the :class:`JobSpec` field that changes with it, the :class:`Pool` whose
replicas change, the ``TF_CONFIG`` task type whose addresses change, and Vertex AI's pool.
"""

from __future__ import annotations

import dataclasses
import itertools
import json

import pytest
from tfc_runtime.protocol import POOL_ROLES, ROLES, cluster_env

from tfc_jupyter.backends.vertex.request import worker_pools
from tfc_jupyter.config import Settings
from tfc_jupyter.job import options
from tfc_jupyter.job.replica import counts, replica_env
from tfc_jupyter.job.spec import JobSpec


def _spec(line: str, settings: Settings) -> JobSpec:
    return options.to_spec(options.parse_line(line), settings, estimator=True)


def _changed(a: object, b: object) -> set[str]:
    """The fields of two dataclasses (or named tuples) that differ."""
    if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b):
        pairs = [(f.name, getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)]
    else:
        pairs = [(k, v, getattr(b, k)) for k, v in a._asdict().items()]  # type: ignore[attr-defined]
    return {name for name, x, y in pairs if x != y}


def _tf_config_sizes(spec: JobSpec) -> dict[str, int]:
    """Each ``TF_CONFIG`` task type with its number of addresses, as the chief sees them."""
    addresses = [f"127.0.0.1:{5000 + i}" for i in range(spec.replica_count)]
    env = dict(replica_env(spec, "job-1", addresses))["chief"]
    return {task: len(a) for task, a in json.loads(env["TF_CONFIG"])["cluster"].items()}


@pytest.mark.parametrize(("flag", "few", "more"), [("--workers", 1, 3), ("--ps", 1, 2)])
def test_a_replica_count_is_renamed_at_most_twice_on_its_way_to_tf_config(
    settings: Settings, flag: str, few: int, more: int
) -> None:
    """``--workers`` -> ``workers`` -> ``worker_count`` -> pool ``worker`` -> ``TF_CONFIG``'s
    ``worker`` (and Vertex AI's ``workerpool1`` through the one pool table): two renames."""
    base = "--workers 1 " if flag == "--ps" else ""
    line_a, line_b = f"{base}{flag} {few}", f"{base}{flag} {more}"
    walk: list[str] = []

    # the option the flag sets
    (field,) = [f for f in options.FIELDS if f.option == flag]
    walk.append(field.name)
    opts_a, opts_b = options.parse_line(line_a), options.parse_line(line_b)
    assert _changed(opts_a, opts_b) == {field.name}

    # the JobSpec field it becomes
    spec_a, spec_b = _spec(line_a, settings), _spec(line_b, settings)
    (spec_field,) = _changed(spec_a, spec_b)
    walk.append(spec_field)

    # the pool whose replicas it counts: its role is the name TF_CONFIG gives the tasks
    (role,) = [a.role for a, b in zip(spec_a.pools(), spec_b.pools(), strict=True) if a != b]
    assert {role: more} == {r: n for r, n in counts(spec_b).items() if counts(spec_a)[r] != n}
    walk.append(role)

    # TF_CONFIG, in every replica a backend starts
    sizes_a, sizes_b = _tf_config_sizes(spec_a), _tf_config_sizes(spec_b)
    (task,) = [t for t in sizes_b if sizes_a[t] != sizes_b[t]]
    assert sizes_b[task] == more
    walk.append(task)

    renames = sum(1 for a, b in itertools.pairwise(walk) if a != b)
    assert renames <= 2, walk

    # Vertex AI's pool: its position is the role's in the one table both sides read
    pools = worker_pools(spec_b, "IMAGE")
    index = ROLES.index(task)
    assert POOL_ROLES[f"workerpool{index}"] == task
    assert int(pools[index]["replicaCount"]) == more  # int64: a string in JSON


def test_cluster_env_names_pools_and_tasks_from_the_role_counts() -> None:
    """``CLUSTER_SPEC`` names Vertex AI's pools, ``TF_CONFIG`` the roles; an unused pool before
    a used one takes no address; an unknown role is refused."""
    env = dict(cluster_env({"chief": 1, "ps": 1, "evaluator": 1}, ["a:1", "b:2", "c:3"], "j"))
    cluster = json.loads(env["chief"]["CLUSTER_SPEC"])["cluster"]
    assert cluster == {"workerpool0": ["a:1"], "workerpool2": ["b:2"], "workerpool3": ["c:3"]}
    tf_config = json.loads(env["ps-0"]["TF_CONFIG"])
    assert tf_config["cluster"] == {"chief": ["a:1"], "ps": ["b:2"]}
    assert tf_config["task"] == {"type": "ps", "index": 0, "trial": ""}
    with pytest.raises(ValueError, match="no replica role 'workers'"):
        cluster_env({"chief": 1, "workers": 2}, ["a:1", "b:2", "c:3"], "j")
