"""The job flags: parsing, overlaying, and flags -> JobSpec."""

from __future__ import annotations

import argparse

import pytest
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

from tfc_jupyter.config import Settings
from tfc_jupyter.errors import SpecError
from tfc_jupyter.job import catalog, options, prices
from tfc_jupyter.job.spec import BackendName, JobSpec, Strategy


def _spec(line: str, settings: Settings) -> JobSpec:
    return options.to_spec(options.parse_line(line), settings)


def _refused(line: str, settings: Settings) -> str:
    with pytest.raises(SpecError) as info:
        _spec(line, settings)
    text = str(info.value)
    assert "\n" not in text and "Fix:" in text
    return text


def test_empty_line_is_the_defaults(settings: Settings) -> None:
    ns = options.parse_line("")
    assert ns == options.JobOptions() and ns.given == frozenset()
    spec = _spec("", settings)
    assert spec.chief == catalog.lookup("CPU") and spec.worker_count == 0
    assert spec.backend is BackendName.LOCAL and spec.google.region == "us-central1"
    assert spec.resolved_strategy() is Strategy.NONE  # one device: as in Jupyter


def test_every_flag_is_declared_once() -> None:
    names = [f.option for f in options.FIELDS]
    assert len(names) == len(set(names))
    for flag in ("--tpu", "--gpus", "--gpu-type", "--machine", "--workers", "--worker-machine"):
        assert flag in names
    for flag in ("--strategy", "--backend", "--requirements", "--notebook", "--label"):
        assert flag in names
    for flag in ("--service-account", "--region", "--project", "--dry-run"):
        assert flag in names


def test_tpu_flag(settings: Settings) -> None:
    assert _spec("--tpu", settings).chief == catalog.tpu_machine("v3-8")
    v5 = _spec("--tpu v5e-4 --backend vertex", settings)
    assert v5.chief.tpu_topology == "2x2" and v5.resolved_strategy() is Strategy.TPU
    assert "drop --gpus" in _refused("--tpu --gpus 1", settings)
    assert "drop --machine" in _refused("--tpu v2-8 --machine T4_1X", settings)
    assert "drop --workers" in _refused("--tpu --workers 1", settings)


@pytest.mark.parametrize(
    ("line", "machine_type", "accel", "count"),
    [
        ("--gpus 1", "n1-standard-8", "NVIDIA_TESLA_T4", 1),
        ("--gpus 2", "n1-standard-16", "NVIDIA_TESLA_T4", 2),
        ("--gpus 4 --gpu-type v100", "n1-standard-16", "NVIDIA_TESLA_V100", 4),
        ("--gpus 8 --gpu-type H100", "a3-highgpu-8g", "NVIDIA_H100_80GB", 8),
        ("--gpus 2 --gpu-type nvidia-l4", "g2-standard-24", "NVIDIA_L4", 2),
        ("--machine A100_4X", "a2-highgpu-4g", "NVIDIA_TESLA_A100", 4),
        ("--machine A100_4X --gpus 4", "a2-highgpu-4g", "NVIDIA_TESLA_A100", 4),
        ("--machine n1-standard-16 --gpus 1", "n1-standard-16", "NVIDIA_TESLA_T4", 1),
        ("--machine n1-highmem-8 --gpus 2 --gpu-type P4", "n1-highmem-8", "NVIDIA_TESLA_P4", 2),
        ("--machine n1-highmem-32 --gpus 2", "n1-highmem-32", "NVIDIA_TESLA_T4", 2),
    ],
)
def test_gpu_flags(
    settings: Settings, line: str, machine_type: str, accel: str, count: int
) -> None:
    chief = _spec(line, settings).chief
    assert (chief.machine_type, chief.accelerator_type, chief.accelerator_count) == (
        machine_type,
        accel,
        count,
    )


@pytest.mark.parametrize(
    ("line", "fix"),
    [
        ("--gpus 3", "1, 2, 4"),
        ("--gpus 8", "1, 2, 4"),
        ("--gpus 1 --gpu-type H200", "a3-ultragpu: 8"),
        ("--machine A100_1X --gpus 2", "drop --gpus"),
        ("--gpu-type T4", "add --gpus N"),
        ("--machine T4_1Y", "did you mean T4_1X?"),
        ("--gpus 1 --gpu-type X200", "use one of"),
        ("--workers 1 --strategy mirrored --gpus 2", "multi_worker_mirrored"),
        ("--strategy mirrored", "--gpus 2"),
        ("--strategy tpu", "--tpu v3-8"),
        ("--label Team=ML --backend vertex", "lowercase"),
        ("--label Team=ML --backend vertex", "use --label team=ml"),
        ("--label team", "key=value"),
        ("--args 'unclosed", "quotes"),
        ("--timeout forever", "90m"),
        ("--backend k8s", "local, docker or vertex"),
        ("--region mars", "us-central1"),
        ("--project 'My Project'", "project id"),
        ("--service-account me@gmail.com", "iam.gserviceaccount.com"),
        ("--worker-machine TPU --workers 1", "drop --workers"),
    ],
)
def test_bad_combinations_name_the_fix(settings: Settings, line: str, fix: str) -> None:
    assert fix in _refused(line, settings)


@pytest.mark.parametrize(
    "line", ["--gpus two", "--workers -1", "--bogus", "--tpu v3-8 extra", "'unclosed", "--gpus"]
)
def test_parse_errors_are_spec_errors(line: str) -> None:
    with pytest.raises(SpecError) as info:
        options.parse_line(line)
    assert "\n" not in str(info.value) and "Fix:" in str(info.value)


def test_workers_and_worker_machine(settings: Settings) -> None:
    spec = _spec("--workers 2 --gpus 1", settings)
    assert spec.worker == spec.chief == catalog.lookup("T4_1X")
    assert spec.resolved_strategy() is Strategy.MULTI_WORKER_MIRRORED
    mixed = _spec("--workers 3 --machine CPU --worker-machine H100_8X", settings)
    assert mixed.chief.name == "CPU" and mixed.worker == catalog.lookup("H100_8X")
    each = [catalog.lookup(m).price_per_hour or 0 for m in ("CPU", "H100_8X")]
    disk = prices.boot_disk_price("pd-ssd", 100) or 0.0  # every replica has its boot disk
    assert mixed.cost_per_hour() == pytest.approx(each[0] + disk + 3 * (each[1] + disk), abs=1e-5)
    gpu_workers = _spec("--workers 1 --gpus 1 --worker-machine n1-standard-16", settings)
    assert gpu_workers.worker is not None
    assert (gpu_workers.worker.machine_type, gpu_workers.worker.gpu_count) == ("n1-standard-16", 1)


def test_everything_else_reaches_the_spec(settings: Settings) -> None:
    spec = _spec(
        "--name 'my run' --label team=ml --label run=3 --args '--epochs 3 --lr=0.1' "
        "--service-account trainer@my-proj-1.iam.gserviceaccount.com --region europe-west4 "
        "--project my-proj-1 --image gcr.io/p/i:1 --parent-image tensorflow/tensorflow:2.15.0 "
        "--cache-from gcr.io/p/i:0 --build-bucket my-bucket --timeout 2h --spot "
        "--base-output-dir gs://bkt/out --tensorboard projects/1/locations/x/tensorboards/2 "
        "--network projects/1/global/networks/n --backend vertex --strategy OneDeviceStrategy",
        settings,
    )
    assert spec.name == "my run"
    assert dict(spec.labels) == {"team": "ml", "run": "3"}
    assert spec.entry_args == ("--epochs", "3", "--lr=0.1")
    assert spec.google.service_account == "trainer@my-proj-1.iam.gserviceaccount.com"
    assert (spec.google.region, spec.google.project, spec.backend) == (
        "europe-west4",
        "my-proj-1",
        BackendName.VERTEX,
    )
    assert spec.image.image == "gcr.io/p/i:1" and spec.image.cache_from == "gcr.io/p/i:0"
    assert spec.image.parent_image == "tensorflow/tensorflow:2.15.0"
    assert spec.image.build_bucket == "my-bucket"
    assert (spec.timeout_s, spec.google.scheduling) == (7200, "spot")
    assert (
        spec.base_output_dir == "gs://bkt/out" and spec.google.network and spec.google.tensorboard
    )
    assert spec.strategy is Strategy.ONE_DEVICE


def test_settings_fill_what_flags_leave_out(tfc_env: object) -> None:
    settings = Settings(
        values={
            "machine": "T4_1X",
            "backend": "vertex",
            "region": "europe-west4",
            "project": "cfg-proj-1",
            "service_account": "sa-name@cfg-proj-1.iam.gserviceaccount.com",
            "build_bucket": "cfg-bucket",
            "registry": "europe-docker.pkg.dev/cfg-proj-1/images",
            "base_output_dir": "gs://cfg/out",
        }
    )
    spec = _spec("", settings)
    assert spec.chief.name == "T4_1X" and spec.backend is BackendName.VERTEX
    assert (spec.google.region, spec.google.project) == ("europe-west4", "cfg-proj-1")
    assert spec.image.build_bucket == "cfg-bucket" and spec.image.registry
    assert spec.google.service_account and spec.base_output_dir == "gs://cfg/out"
    overridden = _spec("--gpus 2 --region us-east1 --backend local", settings)
    assert overridden.chief.accelerator_count == 2 and overridden.google.region == "us-east1"
    assert overridden.backend is BackendName.LOCAL
    tpu_default = _spec("", Settings(values={"machine": "TPU"}))
    assert tpu_default.chief.is_tpu


def test_given_options_go_over_a_cells_line() -> None:
    base = options.parse_line("--gpus 2 --label a=1 --workers 1")
    given = options.JobOptions.from_words(["--gpus", "1", "--label", "b=2"])
    assert given.given == {"gpus", "label"} and given.label == ("b=2",)
    merged = given.over(base)
    assert merged.gpus == 1 and merged.workers == 1
    assert merged.label == ("a=1", "b=2")
    assert base.gpus == 2 and base.label == ("a=1",)  # base left alone
    assert merged.given == {"gpus", "label", "workers"}


LINES = [
    "",
    "--tpu",
    "--tpu v5e-4 --backend vertex --label a=1 --label b=2",
    "--workers 2 --gpus 1 --args '--epochs 3 --name \"x y\"' --no-wait --spot",
    "--requirements 'my reqs.txt' --timeout 2h --region europe-west4",
    "--workers 1 --ps 1 --evaluator",
    "--workers 1 --evaluator n1-standard-4 --include data --include 'a b.csv'",
]


@pytest.mark.parametrize("line", LINES)
def test_every_way_in_gives_the_same_options(line: str) -> None:
    """A line, its words, its JSON and Python keywords are the same options; each renders
    back to a line that reads into them again."""
    import shlex

    opts = options.parse_line(line)
    assert options.JobOptions.from_words(shlex.split(line)) == opts
    # --no-wait is not a request's option (the server never waits): set it back by keyword
    assert options.JobOptions.from_json(opts.to_json()).replace(wait=opts.wait) == opts
    assert options.JobOptions.of(**opts.to_json(), wait=opts.wait) == opts
    assert options.parse_line(opts.to_line().removeprefix("%%tfc_run")) == opts


@pytest.mark.parametrize(
    ("raw", "field", "says"),
    [
        ({"workers": -1}, "workers", "expected 0 or more"),
        ({"workers": True}, "workers", "must be a string or a number"),
        ({"workers": "two"}, "workers", "expected a whole number"),
        ({"spot": "yes"}, "spot", "must be true or false"),
        ({"label": [{"a": 1}]}, "label", "must be a list of strings"),
        ({"wrkers": 1}, "wrkers", "unknown option 'wrkers'"),
        ({"notebook": "x.ipynb"}, "notebook", "unknown option"),  # the request names it
        ({"machine": ["CPU"]}, "machine", "must be a string or a number"),
    ],
)
def test_json_options_are_checked_one_by_one(raw: dict[str, object], field: str, says: str) -> None:
    with pytest.raises(SpecError) as info:
        options.JobOptions.from_json(raw)
    assert info.value.field == field and says in str(info.value), str(info.value)


def test_json_takes_true_for_a_flag_without_value_and_numbers_for_text() -> None:
    opts = options.JobOptions.from_json({"tpu": True, "evaluator": True, "name": 7, "gpus": "2"})
    assert (opts.tpu, opts.evaluator, opts.name, opts.gpus) == ("v3-8", "", "7", 2)
    assert options.JobOptions.from_json({"label": "a=1"}).label == ("a=1",)
    assert options.JobOptions.from_json(None) == options.JobOptions()
    with pytest.raises(SpecError, match="must be a JSON object"):
        options.JobOptions.from_json([1])


def test_no_gpus_is_one_value() -> None:
    assert options.parse_line("--gpus 0") == options.JobOptions()
    assert options.JobOptions.from_json({"gpus": 0}).to_line() == "%%tfc_run"


def test_python_keywords_are_checked_too() -> None:
    assert options.JobOptions.of(workers=2, wait=False).to_line() == (
        "%%tfc_run --workers 2 --no-wait"
    )
    with pytest.raises(SpecError, match="unknown option 'gpu'"):
        options.JobOptions.of(gpu=1)


def test_cli_parser_gets_every_flag() -> None:
    parser = argparse.ArgumentParser()
    options.add_to_parser(parser)
    ns = parser.parse_args(["--workers", "2", "--dry-run", "--spot"])
    assert (ns.workers, ns.dry_run, ns.spot) == (2, True, True)


def test_each_label_is_declared_once_in_the_option_table() -> None:
    """An option's label (and what leaving it out is) is declared on its field and nowhere
    else: the panel and the form read it there, and the UI's words for a fix are taught it by
    the option table (``words.py`` holds no copy)."""
    from tfc_jupyter import words
    from tfc_jupyter.planner.fields import form_fields

    declared = {f.option: f.flag.label for f in options.FIELDS if f.flag.label}
    assert declared.items() <= words.LABELS.items()  # (installed backends' labels beside)
    neutral = {
        f.option: f"set {f.flag.label} to {f.flag.neutral}"
        for f in options.FIELDS
        if f.flag.label and f.flag.neutral
    }
    assert neutral.items() <= words.DROPPED.items()
    assert words.ui_words("drop --workers, or pass --project PROJECT_ID") == (
        "set Workers to 0, or set Project"
    )
    by_name = {f.name: f.flag.label for f in options.FIELDS if f.flag.label}
    assert {f.name: f.label for f in form_fields()} == by_name  # the panel's and form's
    assert len(set(declared.values())) == len(declared)  # no two controls share a label


_SEED = options.OptionField("seed", "count", None, options.Flag(help="A seed.", label="Seed"))
"""An optional count as the table makes one from ``seed: int | None = option(None, ...)``."""


@examples(max_examples=300, deadline=None)
@given(text=st.text(max_size=12))
def test_an_optional_count_reads_any_text_as_unset_a_count_or_a_refusal(text: str) -> None:
    """Issue 47: an optional count's text (an empty box, what is typed in it) is unset when
    blank, a count when it is digits, and otherwise refused in one line naming it, with its
    fixes as data; never another exception."""
    try:
        value = _SEED.coerce(text)
    except SpecError as exc:
        assert exc.field == "seed" and "\n" not in str(exc) and text.strip()
        assert [f.action for f in exc.fixes] == ["set", "drop"] and "--seed" in str(exc)
        return
    if not text.strip():
        assert value is None
    else:
        assert isinstance(value, int) and value >= 0 and value == int(text)


@examples(max_examples=100, deadline=None)
@given(n=st.integers(0, 10**9), pad=st.sampled_from(["", " ", "\t", "  \n"]))
def test_an_optional_count_takes_numbers_and_their_digits(n: int, pad: str) -> None:
    assert _SEED.coerce(n) == _SEED.coerce(f"{pad}{n}{pad}") == _SEED.coerce(float(n)) == n


def test_only_counts_with_no_value_by_default_are_optional() -> None:
    """The table's own counts keep their reading: a 0 default (workers, trials ...) is not
    optional, nor is ``--gpus`` (a list to pick from, "none" is 0), and their ``""`` is
    still refused; Vertex AI's ``--boot-disk-size`` (no default) is, and ``""`` unsets it."""
    fields = {f.name: f for f in options.all_fields()}
    assert [n for n, f in fields.items() if f.optional] == ["boot_disk_size"]
    for name in ("workers", "trials", "parallel", "ps", "gpus"):
        with pytest.raises(SpecError, match="expected a whole number"):
            options.JobOptions.from_json({name: ""})
    unset = options.JobOptions.from_json({"boot_disk_size": ""})
    assert unset.target == (("boot_disk_size", None),) and unset.to_line() == "%%tfc_run"
