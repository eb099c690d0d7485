"""JobSpec: strategy resolution, every validation rule with its fix, round trips."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfc_jupyter.errors import SpecError
from tfc_jupyter.job import prices
from tfc_jupyter.job.catalog import lookup, tpu_machine
from tfc_jupyter.job.google_target import GoogleTarget
from tfc_jupyter.job.spec import (
    MAX_LABEL_TEXT,
    MAX_LABELS,
    BackendName,
    Decisions,
    ImageSettings,
    JobSpec,
    Strategy,
    check_runnable,
    google_label,
    parse_duration,
    parse_env,
    parse_labels,
)

CPU, T4, T4_4 = lookup("CPU"), lookup("T4_1X"), lookup("T4_4X")
V3 = tpu_machine("v3-8")


def _refused(**fields: Any) -> SpecError:
    google = {k: fields.pop(k) for k in list(fields) if k in GoogleTarget.__dataclass_fields__}
    with pytest.raises(SpecError) as info:
        JobSpec(**fields, google=GoogleTarget(**google))
    text = str(info.value)
    assert "\n" not in text and "Fix:" in text, text
    return info.value


# ---------------------------------------------------------------- strategy "auto"
@pytest.mark.parametrize(
    ("chief", "workers", "expected"),
    [
        (CPU, 1, Strategy.MULTI_WORKER_MIRRORED),
        (T4, 3, Strategy.MULTI_WORKER_MIRRORED),
        (T4_4, 2, Strategy.MULTI_WORKER_MIRRORED),
        (V3, 0, Strategy.TPU),
        (tpu_machine("v5e-4"), 0, Strategy.TPU),
        (lookup("T4_2X"), 0, Strategy.MIRRORED),
        (lookup("A100_8X"), 0, Strategy.MIRRORED),
        (T4, 0, Strategy.NONE),  # one device: TensorFlow's own placement, as in Jupyter
        (CPU, 0, Strategy.NONE),
    ],
)
def test_auto_follows_tfc_run_rules(chief: object, workers: int, expected: Strategy) -> None:
    spec = JobSpec(chief=chief, worker_count=workers)  # type: ignore[arg-type]
    assert spec.strategy is Strategy.AUTO
    assert spec.resolved_strategy() is expected
    assert spec.to_dict()["resolved_strategy"] == expected.value


def test_explicit_strategy_is_kept() -> None:
    spec = JobSpec(chief=T4_4, strategy="one_device")  # type: ignore[arg-type]
    assert spec.resolved_strategy() is Strategy.ONE_DEVICE
    assert JobSpec(strategy="none").resolved_strategy() is Strategy.NONE  # type: ignore[arg-type]


def test_workers_default_to_the_chief_machine() -> None:
    spec = JobSpec(chief=T4, worker_count=2)
    assert spec.worker == T4
    assert spec.replica_count == 3
    # Every replica counts, with its own boot disk (100 GB of pd-ssd by default).
    h100, disk = lookup("H100_8X"), prices.boot_disk_price("pd-ssd", 100) or 0.0
    assert spec.cost_per_hour() == pytest.approx(3 * ((T4.price_per_hour or 0) + disk), abs=1e-5)
    # A replica with no price read makes the whole job's price unknown, never too low.
    assert JobSpec(chief=CPU, worker=lookup("H200_8X"), worker_count=1).cost_per_hour() is None
    mixed = JobSpec(chief=CPU, worker=h100, worker_count=2)
    assert mixed.cost_per_hour() == pytest.approx(
        (CPU.price_per_hour or 0) + disk + 2 * ((h100.price_per_hour or 0) + disk), abs=1e-5
    )


# ---------------------------------------------------------------- validation rules
def test_tpu_with_workers_is_refused() -> None:
    err = _refused(chief=V3, worker_count=1)
    assert "drop --workers" in str(err)
    assert err.field == "worker_count"


def test_tpu_workers_are_refused() -> None:
    err = _refused(chief=CPU, worker=V3, worker_count=1)
    assert "--tpu" in str(err) and err.field == "worker"


def test_tpu_with_a_gpu_strategy_is_refused() -> None:
    err = _refused(chief=V3, strategy=Strategy.MIRRORED)
    assert "--strategy tpu" in str(err)


def test_tpu_strategy_without_a_tpu_is_refused() -> None:
    err = _refused(chief=T4, strategy=Strategy.TPU)
    assert "--tpu v3-8" in str(err)


@pytest.mark.parametrize("strategy", [Strategy.ONE_DEVICE, Strategy.MIRRORED])
def test_workers_need_a_multi_worker_strategy(strategy: Strategy) -> None:
    err = _refused(chief=T4_4, worker_count=2, strategy=strategy)
    assert "--strategy multi_worker_mirrored" in str(err)
    assert "drop --workers" in str(err)
    assert JobSpec(chief=T4_4, worker_count=2, strategy=Strategy.MULTI_WORKER_MIRRORED)


@pytest.mark.parametrize("chief", [CPU, T4])
def test_mirrored_with_one_device_is_refused(chief: object) -> None:
    err = _refused(chief=chief, strategy=Strategy.MIRRORED)
    assert "--gpus 2" in str(err) and "one_device" in str(err)
    assert JobSpec(chief=lookup("T4_2X"), strategy=Strategy.MIRRORED)


def test_labels_at_most_64() -> None:
    ok = JobSpec(labels=tuple((f"k{i}", "v") for i in range(MAX_LABELS)))
    assert len(ok.labels) == MAX_LABELS
    err = _refused(labels=tuple((f"k{i}", "v") for i in range(MAX_LABELS + 1)))
    assert "at most 64" in str(err) and err.field == "labels"


VERTEX = BackendName.VERTEX


@pytest.mark.parametrize(
    "key",
    ["Team", "1team", "team!", "t" * 64, "Équipe"],  # (équipe is allowed: Google's rule)
)
def test_bad_label_keys_on_google_cloud(key: str) -> None:
    err = _refused(labels=((key, "v"),), backend=VERTEX)
    assert "lowercase letter" in str(err) and "63" in str(err) and "Google Cloud" in str(err)


def test_reserved_label_keys_on_google_cloud() -> None:
    err = _refused(labels=(("goog-x", "v"),), backend=VERTEX)
    assert "goog" in str(err) and err.fixes[0].value == "l-goog-x=v"


@pytest.mark.parametrize("value", ["ML", "a b", "x" * 64, "v.1"])
def test_bad_label_values_on_google_cloud(value: str) -> None:
    err = _refused(labels=(("team", value),), backend=VERTEX)
    assert "63" in str(err) and "lowercase" in str(err)


def test_good_labels_at_the_limits() -> None:
    labels = (("k" * 63, "v" * 63), ("empty", ""), ("a-b_c", "0-9_z"))
    for backend in (BackendName.LOCAL, VERTEX):
        spec = JobSpec(labels=labels, backend=backend)
        assert dict(spec.labels)["k" * 63] == "v" * 63


def test_a_local_job_takes_labels_of_any_printable_text() -> None:
    labels = (("lr", "0.01"), ("Team", "ML"), ("note", "first try, 3 layers"), ("1st", "Ü"))
    for backend in (BackendName.LOCAL, BackendName.DOCKER):
        assert dict(JobSpec(labels=labels, backend=backend).labels)["lr"] == "0.01"


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("", "x", "has no key"),
        ("k" * (MAX_LABEL_TEXT + 1), "x", f"{MAX_LABEL_TEXT + 1} characters"),
        ("run", "v" * (MAX_LABEL_TEXT + 1), f"{MAX_LABEL_TEXT + 1} characters"),
        ("run", "a\nb", "holds '\\n'"),
        ("ru\u202en", "x", "holds '\\u202e'"),
    ],
)
def test_a_local_label_is_refused_only_by_the_products_rules(
    key: str, value: str, words: str
) -> None:
    err = _refused(labels=((key, value),))
    assert words in str(err) and err.field == "labels"


def test_google_cloud_labels_are_offered_converted() -> None:
    err = _refused(labels=(("lr", "0.01"), ("Team", "ML"), ("ok", "yes")), backend=VERTEX)
    assert str(err).startswith("label key 'Team' is not allowed on Google Cloud")
    (fix,) = err.fixes
    assert (fix.action, fix.option, fix.value) == ("set", "label", "lr=0_01 ok=yes team=ml")
    assert fix.in_flags() == "use --label lr=0_01 --label ok=yes --label team=ml"
    assert (
        "--label" not in err.ui_text() and "set Labels to lr=0_01 ok=yes team=ml" in err.ui_text()
    )
    fixed = JobSpec(labels=parse_labels(fix.value.split()), backend=VERTEX)
    assert dict(fixed.labels) == {"lr": "0_01", "ok": "yes", "team": "ml"}


def test_google_cloud_labels_whose_keys_would_become_one_are_left_to_the_user() -> None:
    err = _refused(labels=(("Team", "a"), ("team", "b")), backend=VERTEX)
    assert err.fixes == () and "rename the labels" in str(err)


_PRINTABLE = st.text(
    st.characters(blacklist_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")), max_size=80
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(_PRINTABLE.filter(bool), _PRINTABLE, min_size=1, max_size=5))
def test_any_printable_labels_run_here_and_convert_for_google_cloud(
    labels: dict[str, str],
) -> None:
    pairs = tuple(sorted(labels.items()))
    assert dict(JobSpec(labels=pairs).labels) == labels
    try:
        JobSpec(labels=pairs, backend=VERTEX)
        return  # Google's rules already held
    except SpecError as exc:
        err = exc
    assert err.field == "labels" and "Google Cloud" in str(err)
    if not err.fixes:  # two keys became one
        keys = [google_label(k, key=True) for k in labels]
        assert len(set(keys)) < len(keys)
        return
    (fix,) = err.fixes
    assert fix.value is not None
    converted = JobSpec(labels=parse_labels(fix.value.split()), backend=VERTEX)
    assert len(converted.labels) == len(labels)


@pytest.mark.parametrize(
    "account",
    [
        "trainer@my-project.iam.gserviceaccount.com",
        "123456789012-compute@developer.gserviceaccount.com",
        "my-project@appspot.gserviceaccount.com",
    ],
)
def test_good_service_accounts(account: str) -> None:
    assert JobSpec(google=GoogleTarget(service_account=account)).google.service_account == account


@pytest.mark.parametrize(
    "account", ["someone@gmail.com", "trainer", "trainer@my-project.iam.gserviceaccount"]
)
def test_bad_service_accounts(account: str) -> None:
    err = _refused(service_account=account)
    assert "NAME@PROJECT.iam.gserviceaccount.com" in str(err)
    assert err.field == "service_account"


@pytest.mark.parametrize(
    "region", ["us-central1", "europe-west4", "northamerica-northeast1", "asia-southeast1"]
)
def test_good_regions(region: str) -> None:
    assert JobSpec(google=GoogleTarget(region=region)).google.region == region


@pytest.mark.parametrize("region", ["US-CENTRAL1", "uscentral1", "us-central", "us central1", ""])
def test_bad_regions(region: str) -> None:
    err = _refused(region=region)
    assert "us-central1" in str(err) and err.field == "region"


@pytest.mark.parametrize("project", ["my-project-123", "example.com:my-project"])
def test_good_projects(project: str) -> None:
    assert JobSpec(google=GoogleTarget(project=project)).google.project == project


@pytest.mark.parametrize("project", ["My Project", "abc", "1project", "project-"])
def test_bad_projects(project: str) -> None:
    err = _refused(project=project)
    assert "project id" in str(err) and err.field == "project"


def test_other_fields() -> None:
    assert "0 to 256" in str(_refused(worker_count=257))
    assert "0 to 256" in str(_refused(worker_count=-1))
    assert "spot" in str(_refused(scheduling="cheap"))
    assert _refused(name="").field == "name"
    assert _refused(name="x" * 129).field == "name"
    assert "30 days" in str(_refused(timeout_s=31 * 86400))


def test_strings_are_accepted_for_enums() -> None:
    spec = JobSpec(strategy="MultiWorkerMirroredStrategy", backend="Vertex", worker_count=1)  # type: ignore[arg-type]
    assert spec.strategy is Strategy.MULTI_WORKER_MIRRORED and spec.backend is BackendName.VERTEX
    with pytest.raises(SpecError, match="local, docker or vertex"):
        JobSpec(backend="kubernetes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "strategy"),
    [
        ("MirroredStrategy", Strategy.MIRRORED),
        ("OneDeviceStrategy", Strategy.ONE_DEVICE),
        ("TPUStrategy", Strategy.TPU),
        ("mwms", Strategy.MULTI_WORKER_MIRRORED),
        ("multi-worker-mirrored", Strategy.MULTI_WORKER_MIRRORED),
        ("auto", Strategy.AUTO),
    ],
)
def test_strategy_names(text: str, strategy: Strategy) -> None:
    assert Strategy.parse(text) is strategy


def test_unknown_strategy_lists_the_names() -> None:
    with pytest.raises(SpecError) as info:
        Strategy.parse("parameter_server")
    assert all(s.value in str(info.value) for s in Strategy)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90m", 5400), ("2h", 7200), ("1d", 86400), ("3600", 3600), (" 1.5h ", 5400), (120, 120)],
)
def test_durations(text: str | int, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["soon", "0", "-5m", "31d", "2 weeks"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_duration(text)
    assert info.value.field == "timeout" and "Fix:" in str(info.value)


def test_parse_labels() -> None:
    assert parse_labels(["run=2", "team = ml"]) == (("run", "2"), ("team", "ml"))
    assert parse_labels({"b": "1", "a": "2"}) == (("a", "2"), ("b", "1"))
    with pytest.raises(SpecError, match="key=value"):
        parse_labels(["team"])


# ---------------------------------------------------------------- round trip, frozen
ROUND_TRIP = [
    JobSpec(),
    JobSpec(
        chief=V3,
        backend=BackendName.VERTEX,
        google=GoogleTarget(project="my-project-1"),
        timeout_s=3600,
    ),
    JobSpec(
        name="resnet run.2",
        chief=lookup("A100_1X"),
        worker=lookup("T4_4X"),
        worker_count=3,
        strategy=Strategy.MULTI_WORKER_MIRRORED,
        backend="docker",  # type: ignore[arg-type]
        image=ImageSettings(
            parent_image="tensorflow/tensorflow:2.15.0-gpu", build_bucket="my-builds"
        ),
        requirements=("numpy>=1.26", "tf-keras"),
        entry_args=("--epochs", "3"),
        labels=(("team", "ml"), ("run", "7")),
        google=GoogleTarget(
            service_account="trainer@my-project-1.iam.gserviceaccount.com",
            region="europe-west4",
            scheduling="spot",
        ),
        base_output_dir="gs://bucket/out",
    ),
]


@pytest.mark.parametrize("spec", ROUND_TRIP)
def test_dict_round_trip(spec: JobSpec) -> None:
    data = json.loads(json.dumps(spec.to_dict()))
    assert JobSpec.from_dict(data) == spec
    assert JobSpec.from_dict({**data, "unknown_key": 1}) == spec


def test_a_record_of_the_flat_spec_reads_into_its_parts() -> None:
    """A job record written before the spec had parts kept Vertex AI's settings and planning's
    decisions among its other keys: `tfc-jupyter jobs`, the sidebar and a Vertex AI watcher
    still read such records (each part from its old keys)."""
    made = JobSpec(
        chief=T4_4,
        worker_count=1,
        backend=BackendName.VERTEX,
        google=GoogleTarget(project="my-project-1", region="europe-west4", scheduling="spot"),
        decided=Decisions(strategy="multi_worker_mirrored", route="image", legacy_keras=True),
    )
    nested = made.to_dict()
    flat = {k: v for k, v in nested.items() if k not in ("google", "decided")}
    flat.update(nested["google"])
    flat.update({k: v for k, v in nested["decided"].items() if k != "strategy"})
    flat["decided_strategy"] = nested["decided"]["strategy"]
    assert JobSpec.from_dict(json.loads(json.dumps(flat))) == made
    assert GoogleTarget.of_spec(flat) == made.google == GoogleTarget.of_spec(nested)
    assert Decisions.of_spec(flat) == made.decided == Decisions.of_spec(nested)


def test_the_spec_s_parts_are_typed_and_checked_apart() -> None:
    """What the user asked, what only Vertex AI reads and what planning decided are three
    typed parts; each is checked as it is made, and changed only through its own part."""
    spec = JobSpec()
    assert {f.name for f in dataclasses.fields(spec)} >= {"google", "decided"}
    assert not {f.name for f in dataclasses.fields(spec)} & {
        *GoogleTarget.__dataclass_fields__,
        *(k for k in Decisions.__dataclass_fields__ if k != "strategy"),
    }
    assert spec.on_google(region="asia-east1").google.region == "asia-east1"
    assert spec.decide(route="package").decided.route == "package"
    with pytest.raises(ValueError):
        spec.decide(strategy="fastest")  # a strategy the runtime does not know


def test_from_dict_validates() -> None:
    data = JobSpec(chief=V3).to_dict()
    data["worker_count"] = 2
    with pytest.raises(SpecError, match="drop --workers"):
        JobSpec.from_dict(data)


def test_frozen_and_evolve_validates() -> None:
    spec = JobSpec(chief=T4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.worker_count = 3  # type: ignore[misc]
    more = spec.evolve(worker_count=2)
    assert (spec.worker_count, more.worker_count) == (0, 2)
    with pytest.raises(SpecError):
        spec.on_google(region="nowhere")
    assert hash(spec) == hash(JobSpec(chief=T4))


def test_labels_are_sorted_and_deduplicated() -> None:
    spec = JobSpec(labels=(("b", "1"), ("a", "2"), ("b", "3")))
    assert spec.labels == (("a", "2"), ("b", "3"))


def test_check_runnable_refuses_tpu_on_this_machine() -> None:
    for backend in (BackendName.LOCAL, BackendName.DOCKER):
        with pytest.raises(SpecError, match="--backend vertex"):
            check_runnable(JobSpec(chief=V3, backend=backend))
    check_runnable(JobSpec(chief=V3, backend=BackendName.VERTEX))
    check_runnable(JobSpec(chief=T4, worker_count=1))


@pytest.mark.parametrize(
    ("env", "words"),
    [
        ({"1BAD": "x"}, "not a variable name"),
        ({"A-B": "x"}, "not a variable name"),
        ({"TF_CONFIG": "{}"}, "set by the job itself"),
        ({"TFC_JOB_DIR": "/tmp"}, "set by the job itself"),
        ({"AIP_MODEL_DIR": "gs://b"}, "set by the job itself"),
        ({"CLUSTER_SPEC": "{}"}, "set by the job itself"),
        ({"HF_TOKEN": "x"}, "looks like a secret"),
        ({"DB_PASSWORD": "x"}, "looks like a secret"),
        ({"OPENAI_API_KEY": "x"}, "looks like a secret"),
        ({"MY_SECRET": "x"}, "looks like a secret"),
        ({"BASIC_AUTH": "x"}, "looks like a secret"),
        ({"NOTE": "x\0y"}, "NUL"),
        ({"NOTE": "x" * 40000}, "40000 characters"),
        ({f"V{i}": "1" for i in range(101)}, "101 --env variables"),
    ],
)
def test_env_is_checked_as_the_job_would_need(env: dict[str, str], words: str) -> None:
    with pytest.raises(SpecError) as info:
        JobSpec(env=tuple(env.items()))
    assert words in str(info.value) and info.value.field == "env"


def test_env_round_trips_and_keeps_values_as_given() -> None:
    spec = JobSpec(env=parse_env(["MODE=fast", "GREETING= hi = there ", "AUTHOR=ada"]))
    assert dict(spec.env) == {"MODE": "fast", "GREETING": " hi = there ", "AUTHOR": "ada"}
    assert JobSpec.from_dict(json.loads(json.dumps(spec.to_dict()))).env == spec.env
    with pytest.raises(SpecError, match="has no '='"):
        parse_env(["MODE"])
