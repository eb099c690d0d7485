"""A fourth backend, defined only here, registered the way a third-party package would do it.

``JobSetBackend`` renders a job as a Kubernetes JobSet manifest: one replicated job per replica
(chief, workers, parameter servers, evaluator), each pod reached at its JobSet DNS name and
given the same ``CLUSTER_SPEC``/``TF_CONFIG`` every other backend gives its replicas. It is found
through a ``tfc_jupyter.backends`` entry point (a dist-info folder on ``sys.path``, read by
``importlib.metadata``), then planned, dry-run and launched through the product's own
commands: no product file knows it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from jobutil import write_notebook

from tfc_jupyter import cli, registry
from tfc_jupyter.backends import Preview
from tfc_jupyter.config import Settings
from tfc_jupyter.errors import BackendError
from tfc_jupyter.job.options import JobOptions, option, target_options
from tfc_jupyter.job.replica import container_args, job_env, replica_env
from tfc_jupyter.job.spec import JobSpec, check_runnable
from tfc_jupyter.planner.plan import Plan
from tfc_jupyter.registry import Traits
from tfc_jupyter.store.records import JobRecord, JobState, JobStore

PORT = 2222
ROOT = Path(__file__).resolve().parents[1]


def _dns(text: str) -> str:
    """A DNS-1123 label from a job name."""
    out = "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")
    return (out or "job")[:40].rstrip("-")


def jobset(plan: Plan, job_id: str = "JOB_ID") -> dict[str, Any]:
    """The JobSet of ``plan``: one replicated job per replica, as the product's protocol says."""
    spec = plan.spec
    name = _dns(spec.name)
    rjobs = [r for r, _ in replica_env(spec, job_id, ["x:0"] * spec.replica_count)]
    hosts = [f"{name}-{r}-0-0.{name}:{PORT}" for r in rjobs]
    common = job_env(spec, job_id, "/tmp/job")
    replicated = []
    for replica, env in replica_env(spec, job_id, hosts):
        variables = {**common, **env}
        container: dict[str, Any] = {
            "name": "tensorflow",
            "image": plan.image_uri,
            "command": ["python", "-m", "tfc_runtime"],
            "args": container_args(spec),
            "env": [{"name": k, "value": v} for k, v in sorted(variables.items())],
            "ports": [{"containerPort": PORT}],
        }
        machine = spec.chief if replica == "chief" else (spec.worker or spec.chief)
        if machine.gpu_count:
            container["resources"] = {"limits": {"nvidia.com/gpu": machine.gpu_count}}
        replicated.append(
            {
                "name": replica,
                "replicas": 1,
                "template": {
                    "spec": {
                        "parallelism": 1,
                        "completions": 1,
                        "backoffLimit": 0,
                        "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
                    }
                },
            }
        )
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": name,
            "namespace": target_options(plan.options, JobSetOptions).namespace,
            "labels": {"tfc-jupyter": "1"},
        },
        "spec": {
            "network": {"enableDNSHostnames": True, "subdomain": name},
            "successPolicy": {"operator": "All", "targetReplicatedJobs": ["chief"]},
            "failurePolicy": {"maxRestarts": 0},
            "replicatedJobs": replicated,
        },
    }


@dataclass(frozen=True)
class JobSetOptions:
    """The JobSet backend's own options: declared here, they are flags of the magic and the
    CLI, ``run()`` keywords and jobs API options, with no change to the product."""

    namespace: str = option(
        "default",
        "Kubernetes namespace the JobSet is created in.",
        metavar="NAMESPACE",
        label="Namespace",
    )


class JobSetBackend:
    """Writes the job's JobSet manifest (what ``kubectl apply -f`` takes) to its folder."""

    name = "jobset"
    options = JobSetOptions
    traits = Traits(label="Kubernetes", runs_image=True, model_place="in its pod, which is gone")

    def __init__(self, store: JobStore) -> None:
        self.store = store

    @classmethod
    def from_settings(cls, store: JobStore, settings: Settings) -> JobSetBackend:
        return cls(store)

    @classmethod
    def preview(cls, plan: Plan) -> Preview:
        manifest = jobset(plan)
        return Preview("Kubernetes JobSet", manifest, yaml.safe_dump(manifest, sort_keys=False))

    def check(self, spec: JobSpec) -> None:
        check_runnable(spec)  # TPUs: its traits have none

    def submit(self, record: JobRecord, plan: Plan) -> None:
        if not plan.spec.image.image:
            raise BackendError("this test cluster builds no images", "pass --image")
        manifest = yaml.safe_dump(jobset(plan, record.id), sort_keys=False)
        (Path(record.job_dir) / "jobset.yaml").write_text(manifest)
        self.store.transition(record.id, JobState.SUCCEEDED)

    def refresh(self, record: JobRecord) -> JobRecord:
        return record

    def cancel(self, record: JobRecord, *, timeout: float = 20.0) -> JobRecord:
        return self.store.transition(record.id, JobState.CANCELLED)


# The parts of the JobSet CRD (jobset.x-k8s.io/v1alpha2) and the core/v1 Pod spec a manifest uses.
_DNS_LABEL = {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "maxLength": 63}
_CONTAINER = {
    "type": "object",
    "required": ["name", "image"],
    "properties": {
        "name": _DNS_LABEL,
        "image": {"type": "string", "minLength": 1},
        "command": {"type": "array", "items": {"type": "string"}},
        "args": {"type": "array", "items": {"type": "string"}},
        "env": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name"],
                "properties": {"name": {"type": "string"}, "value": {"type": "string"}},
                "additionalProperties": False,
            },
        },
        "ports": {
            "type": "array",
            "items": {"type": "object", "required": ["containerPort"]},
        },
        "resources": {"type": "object"},
    },
    "additionalProperties": False,
}
JOBSET_SCHEMA = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "jobset.x-k8s.io/v1alpha2"},
        "kind": {"const": "JobSet"},
        "metadata": {
            "type": "object",
            "required": ["name"],
            "properties": {"name": _DNS_LABEL, "labels": {"type": "object"}},
        },
        "spec": {
            "type": "object",
            "required": ["replicatedJobs"],
            "properties": {
                "network": {"type": "object"},
                "successPolicy": {
                    "type": "object",
                    "properties": {"operator": {"enum": ["All", "Any"]}},
                },
                "failurePolicy": {"type": "object"},
                "replicatedJobs": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["name", "template"],
                        "properties": {
                            "name": _DNS_LABEL,
                            "replicas": {"type": "integer", "minimum": 0},
                            "template": {
                                "type": "object",
                                "required": ["spec"],
                                "properties": {
                                    "spec": {
                                        "type": "object",
                                        "required": ["template"],
                                        "properties": {
                                            "template": {
                                                "type": "object",
                                                "required": ["spec"],
                                                "properties": {
                                                    "spec": {
                                                        "type": "object",
                                                        "required": ["containers"],
                                                        "properties": {
                                                            "restartPolicy": {
                                                                "enum": ["Never", "OnFailure"]
                                                            },
                                                            "containers": {
                                                                "type": "array",
                                                                "minItems": 1,
                                                                "items": _CONTAINER,
                                                            },
                                                        },
                                                    }
                                                },
                                            }
                                        },
                                    }
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}


@pytest.fixture
def jobset_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A dist-info folder on ``sys.path`` whose entry point names this module's backend."""
    site = tmp_path / "site"
    info = site / "tfc_jupyter_jobset-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: tfc-jupyter-jobset\nVersion: 0.1\n"
    )
    (info / "entry_points.txt").write_text(
        f"[{registry.GROUP}]\njobset = {__name__}:JobSetBackend\n"
    )
    monkeypatch.syspath_prepend(str(site))
    return "jobset"


@pytest.fixture
def ps_notebook(tmp_path: Path) -> Path:
    """A parameter-server notebook: chief, workers, parameter servers and an evaluator."""
    code = (
        "import tensorflow as tf\n"
        "resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()\n"
        "strategy = tf.distribute.experimental.ParameterServerStrategy(resolver)\n"
        "print('trained')\n"
    )
    return write_notebook(tmp_path / "Parameter Server.ipynb", code)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_an_installed_backend_is_known_by_name(jobset_installed: str) -> None:
    assert jobset_installed in registry.names()
    assert registry.load(jobset_installed) is JobSetBackend
    assert registry.traits(jobset_installed).label == "Kubernetes"
    assert registry.BackendName.parse("JobSet") == "jobset"


def test_without_its_package_the_name_is_refused_with_the_known_ones(tfc_env: Path) -> None:
    with pytest.raises(Exception, match=r"unknown backend 'jobset'.*local, docker or vertex"):
        registry.BackendName.parse("jobset")


def test_a_notebook_plans_and_dry_runs_through_it(
    jobset_installed: str,
    ps_notebook: Path,
    tfc_env: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    flags = ["--backend", "jobset", "--workers", "2", "--ps", "1", "--evaluator"]
    code, out, err = _cli(capsys, "plan", str(ps_notebook), *flags, "--json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["spec"]["backend"] == "jobset" and plan["request_title"] == "Kubernetes JobSet"
    assert plan["refused"] is None
    manifest = plan["request"]
    jsonschema.validate(manifest, JOBSET_SCHEMA)

    # The dry run prints the manifest as YAML, and that YAML is the same manifest.
    code, text, err = _cli(capsys, "plan", str(ps_notebook), *flags)
    assert code == 0, err
    shown = text.split("--- Kubernetes JobSet ---\n", 1)[1]
    assert yaml.safe_load(shown) == manifest

    # Every role, each replica with the TF_CONFIG the local backend would give it at its address.
    replicas = {r["name"]: r for r in manifest["spec"]["replicatedJobs"]}
    assert list(replicas) == ["chief", "worker-0", "worker-1", "ps-0", "evaluator-0"]
    name = manifest["metadata"]["name"]
    assert name == "parameter-server"
    envs = {
        r: {
            e["name"]: e["value"]
            for e in replicas[r]["template"]["spec"]["template"]["spec"]["containers"][0]["env"]
        }
        for r in replicas
    }
    from tfc_jupyter.backends.local.backend import cluster_env

    spec = JobSpec.from_dict(plan["spec"])
    local = dict(cluster_env(spec, "JOB_ID", list(range(5000, 5005))))
    for replica, env in envs.items():
        ours, theirs = json.loads(env["TF_CONFIG"]), json.loads(local[replica]["TF_CONFIG"])
        assert ours["task"] == theirs["task"] and ours["job"] == theirs["job"]
        assert {k: len(v) for k, v in ours["cluster"].items()} == {
            k: len(v) for k, v in theirs["cluster"].items()
        }
        assert set(ours["cluster"]) == {"chief", "worker", "ps"}  # the evaluator trains nothing
        assert env["CLUSTER_SPEC"]
    tf_config = json.loads(envs["worker-1"]["TF_CONFIG"])
    assert tf_config["cluster"]["worker"][1] == f"{name}-worker-1-0-0.{name}:{PORT}"
    assert tf_config["task"] == {"type": "worker", "index": 1, "trial": ""}
    args = replicas["chief"]["template"]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[:2] == ["--strategy", plan["strategy"]] and "--serve" in args


def test_it_launches_and_lists_through_the_product(
    jobset_installed: str,
    ps_notebook: Path,
    tfc_env: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    image = "registry.example/tf:2.17"
    code, out, err = _cli(
        capsys,
        "run",
        str(ps_notebook),
        "--backend",
        "jobset",
        "--workers",
        "1",
        "--image",
        image,
        "--namespace",
        "team-a",
    )
    assert code == 0, err
    code, out, err = _cli(capsys, "jobs", "--json")
    assert code == 0, err
    (job,) = json.loads(out)
    assert job["backend"] == "jobset" and job["state"] == "succeeded"
    assert job["billed"] is False
    # The jobs API's schema takes its name (the TypeScript Backend type is generated from it).
    api = yaml.safe_load((ROOT / "tfc_jupyter" / "server" / "openapi.yaml").read_text())
    schemas = api["components"]["schemas"]
    assert schemas["Job"]["properties"]["backend"] == {"$ref": "#/components/schemas/BackendName"}
    jsonschema.validate(job["backend"], schemas["BackendName"])
    manifest = yaml.safe_load((Path(job["job_dir"]) / "jobset.yaml").read_text())
    jsonschema.validate(manifest, JOBSET_SCHEMA)
    containers = [
        r["template"]["spec"]["template"]["spec"]["containers"][0]
        for r in manifest["spec"]["replicatedJobs"]
    ]
    assert {c["image"] for c in containers} == {image}
    assert manifest["metadata"]["namespace"] == "team-a"  # its own flag, launched
    assert job["id"] in json.dumps(manifest)


def test_the_product_refuses_what_its_traits_say_it_cannot_do(
    jobset_installed: str, ps_notebook: Path, tfc_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["plan", str(ps_notebook), "--backend", "jobset"]
    code, out, err = _cli(capsys, *argv, "--web-access")
    assert code != 0
    assert "--web-access is a Vertex AI setting; on the jobset backend it would mean" in err
    assert "use --backend vertex" in err
    code, out, err = _cli(capsys, *argv, "--tpu", "v3-8", "--json")
    assert code == 0, err  # a dry run shows the plan, and what launching it would say
    refused = json.loads(out)["refused"]
    assert refused["message"] == "the jobset backend cannot run TPU jobs"
    assert "use --backend vertex" in refused["hint"]
    # A sweep: its trials are jobs this machine drives, or a tuning job of a backend that tunes.
    swept = write_notebook(ps_notebook.with_name("swept.ipynb"), "lr = 0.1\nprint(lr)")
    sweep = ["--sweep", "lr=[0.1,0.2]", "--metric", "loss"]
    code, out, err = _cli(capsys, "run", str(swept), "--backend", "jobset", *sweep)
    assert code != 0 and "launching a sweep on Kubernetes is not supported" in err, err
    assert "--backend local" in err
    code, out, err = _cli(capsys, "plan", str(swept), "--backend", "jobset", *sweep, "--dry-run")
    assert code == 0, err  # its dry run shows it


def test_a_backend_s_own_flag_works_on_every_edge(
    jobset_installed: str,
    ps_notebook: Path,
    tfc_env: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--namespace`` is declared only above (``JobSetOptions``): the CLI, the magic's line,
    ``run()``, the jobs API and the help all take it, and another backend refuses it."""
    from tfc_jupyter.run_api import job_options
    from tfc_jupyter.server.service import JobService

    nb = str(ps_notebook)
    flags = ["--backend", "jobset", "--image", "registry.example/tf:2.17"]
    code, out, err = _cli(
        capsys, "plan", str(ps_notebook), *flags, "--namespace", "team-a", "--json"
    )
    assert code == 0, err
    assert json.loads(out)["request"]["metadata"]["namespace"] == "team-a"
    code, out, err = _cli(capsys, "plan", str(ps_notebook), *flags, "--json")
    assert json.loads(out)["request"]["metadata"]["namespace"] == "default"

    line = JobOptions.from_line("--backend jobset --namespace team-a --workers 1")
    assert line.target == (("namespace", "team-a"),)
    assert JobOptions.from_line(line.to_line().removeprefix("%%tfc_run")) == line
    assert JobOptions.from_json(line.to_json()) == line
    assert job_options(entry_point=nb, backend="jobset", namespace="team-a").target == (
        ("namespace", "team-a"),
    )
    cell = JobOptions.from_line("--namespace team-a")
    assert JobOptions.from_line("--namespace team-b").over(cell).target == (
        ("namespace", "team-b"),
    )
    assert "--namespace NAMESPACE" in options_help() and "(jobset backend)" in options_help()
    # %%tfc_run? too: IPython asks the magic's getdoc, which reads the installed backends then.
    from IPython.core.oinspect import getdoc

    from tfc_jupyter.magics import TfcMagics

    shown = " ".join(str(getdoc(TfcMagics(None).tfc_run)).split())
    assert "flags of one backend:" in shown and "--namespace NAMESPACE" in shown, shown
    assert "--workers N" in shown  # the portable flags stay

    # The panel and the form: a field of its own (it has a label), in its backend's section.
    from tfc_jupyter.config import load_settings
    from tfc_jupyter.panel.model import Choices
    from tfc_jupyter.planner.fields import fields_json

    (field,) = [f for f in fields_json() if f["name"] == "namespace"]
    assert (field["label"], field["group"], field["control"], field["default"]) == (
        "Namespace",
        "Kubernetes",
        "text",
        "default",
    )
    from tfc_jupyter.words import ui_words  # a fix naming the flag, in the form's words

    assert ui_words("pass --namespace NAME") == "set Namespace"
    served = JobService(ps_notebook.parent).defaults()["fields"]
    assert [f for f in served if f["name"] == "namespace"] == [field]
    settings = load_settings(include_server=False)
    choices = Choices.from_options(line, settings)
    assert choices.namespace == "team-a" and choices.workers == 1
    picked = choices.replaced(namespace="team-c").apply(JobOptions(), settings)
    assert picked.target == (("namespace", "team-c"),)
    assert "--namespace team-c" in picked.to_line()

    status, body = JobService(ps_notebook.parent).create(
        {
            "path": ps_notebook.name,
            "options": {"backend": "jobset", "namespace": "team-a", "dry_run": True},
        }
    )
    assert status == 200, body
    assert body["plan"]["request"]["metadata"]["namespace"] == "team-a"
    from tfc_jupyter.server.handlers import openapi_document  # the served schema has it

    document = yaml.safe_load(openapi_document())
    options = document["components"]["schemas"]["CreateJob"]["properties"]["options"]
    assert "(jobset backend)" in options["properties"]["namespace"]["description"]

    code, out, err = _cli(capsys, "plan", str(ps_notebook), "--namespace", "team-a")
    assert code != 0
    assert "--namespace is a Kubernetes setting; on the local backend it would mean nothing" in err
    assert "drop --namespace, or use --backend jobset" in err


def options_help() -> str:
    """The job flags' help, installed backends' included, on one line."""
    from tfc_jupyter.job import options

    return " ".join(options.parser(installed=True).format_help().split())
