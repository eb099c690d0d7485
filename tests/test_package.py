"""Build contexts and images: what goes in, what never does, the tag, and builds that are skipped.

The first half needs no Docker. The second half (``slow``) builds real images in the test engine
(``tests/dockerinfra.py``) on the offline TensorFlow parent image, and reads their layers back.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest
from dockerinfra import own_layer_files
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jobutil import plan_for, write_notebook

from tfc_jupyter.backends.vertex.backend import cloud_build
from tfc_jupyter.errors import BackendError, MissingDependency, SpecError
from tfc_jupyter.image import (
    BuildError,
    ImageResult,
    LineProgress,
    Progress,
    ensure_image,
    reporting,
)
from tfc_jupyter.image import context as package
from tfc_jupyter.image import docker as build
from tfc_jupyter.image import names as images
from tfc_jupyter.image.context import SecretInFile
from tfc_jupyter.job import options
from tfc_jupyter.job.google_target import GoogleTarget
from tfc_jupyter.job.spec import ImageSettings, JobSpec
from tfc_jupyter.planner.plan import Plan

BODY = "%%tfc_run {flags}\nprint('rows', len(open('data/train.csv').read().splitlines()))\n"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nPLANTED-{kind}\n-----END RSA PRIVATE KEY-----\n"

# Every kind of secret, by path, with content that carries a marker to look for in images.
SECRETS: dict[str, str] = {
    ".env": "TOKEN=PLANTED-dotenv\n",
    "config/.env.production": "TOKEN=PLANTED-dotenv-prod\n",
    "tls/server.pem": PEM.format(kind="pem"),
    "tls/server.key": "PLANTED-key\n",
    "tls/bundle.p12": "PLANTED-p12\n",
    "id_rsa": PEM.format(kind="id_rsa"),
    "keys/id_ed25519": "PLANTED-ed25519\n",
    ".netrc": "machine x login y password PLANTED-netrc\n",
    ".npmrc": "//registry.npmjs.org/:_authToken=PLANTED-npmrc\n",
    ".pypirc": "[pypi]\npassword = PLANTED-pypirc\n",
    ".git/config": "[remote]\nurl = https://PLANTED-git@x\n",
    ".ssh/config": "Host x # PLANTED-ssh\n",
    ".aws/credentials": "[default]\naws_secret_access_key = PLANTED-aws\n",
    ".config/gcloud/credentials.db": "PLANTED-gcloud\n",
    ".kube/config": "kind: Config\nclusters: []\n# PLANTED-kube\n",
    "cluster.kubeconfig": "kind: Config\nclusters: []\n# PLANTED-kubeconfig\n",
    # detected by content, under innocent names
    "data/owner.json": json.dumps(
        {"type": "service_account", "private_key": "PLANTED-sa", "client_email": "a@b"}
    ),
    "data/adc.json": json.dumps({"type": "authorized_user", "refresh_token": "PLANTED-adc"}),
    "notes/readme.txt": "see below\n" + PEM.format(kind="inline-key"),
    "settings/k8s.yaml": "apiVersion: v1\nkind: Config\nclusters:\n- name: PLANTED-k8s\n",
}


def _project(tmp_path: Path, flags: str = "--backend docker --include data") -> Path:
    """A notebook folder: data the job reads, junk it does not, and every kind of secret."""
    folder = tmp_path / "proj"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "train.csv").write_text("a,b\n1,2\n3,4\n")
    (folder / "data" / "labels.txt").write_text("x\ny\n")
    (folder / "scratch").mkdir()
    (folder / "scratch" / "big.bin").write_bytes(b"\0" * 1000)
    for rel, text in SECRETS.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    os.symlink(folder / "tls" / "server.pem", folder / "data" / "innocent.txt")
    return write_notebook(folder / "train.ipynb", "import os", BODY.format(flags=flags))


def _names(context: package.Context) -> set[str]:
    return {e.arcname for e in context.entries}


def _plain(context: package.Context) -> bytes:
    return context.tar_bytes()


# ------------------------------------------------------------------------------ contents
def test_context_holds_only_what_the_job_needs(tmp_path: Path, tfc_env: Path) -> None:
    nb = _project(tmp_path)
    plan = plan_for(nb, "--include data/train.csv")
    context = plan.context
    assert context is not None
    names = _names(context)
    assert {"code/script.py", "code/script.map.json", "app/data/train.csv"} <= names
    assert "app/data/labels.txt" in names  # the declared folder
    assert {n for n in names if n.startswith("tfc/tfc_runtime/")} >= {
        "tfc/tfc_runtime/__init__.py",
        "tfc/tfc_runtime/__main__.py",
    }
    assert not any("scratch" in n or n.endswith(".ipynb") for n in names)  # not declared
    assert context.declared == 2
    script = next(e for e in context.entries if e.arcname == "code/script.py")
    assert script.data is not None and b"print('rows'" in script.data
    with tarfile.open(fileobj=io.BytesIO(_plain(context))) as tar:
        assert set(tar.getnames()) == names | {"Dockerfile"}
        assert {m.mtime for m in tar.getmembers()} == {package.EPOCH}


def test_requirements_go_in_with_tf_keras_apart(tmp_path: Path, tfc_env: Path) -> None:
    folder = tmp_path / "reqs"
    folder.mkdir()
    nb = write_notebook(
        folder / "r.ipynb",
        "%pip install pandas==2.2.2\n%pip install tf-keras~=2.21.0",
        "%%tfc_run --backend docker\nprint(1)",
    )
    context = plan_for(nb).context
    assert context is not None
    text = {e.arcname: (e.data or b"").decode() for e in context.entries if e.data}
    assert text["tfc/requirements.txt"] == "pandas==2.2.2\n"
    assert text["tfc/requirements-no-deps.txt"] == "tf-keras~=2.21.0\n"
    assert "--no-deps -r /tmp/tfc/requirements-no-deps.txt" in context.dockerfile


def test_include_paths_are_checked(tmp_path: Path, tfc_env: Path) -> None:
    nb = _project(tmp_path, "--backend docker")
    outside = tmp_path / "elsewhere.csv"
    outside.write_text("x")
    with pytest.raises(SpecError, match=r"outside the notebook's folder.*Fix: copy or link"):
        plan_for(nb, f"--include {outside}")
    with pytest.raises(SpecError, match=r"no such file or folder"):
        plan_for(nb, "--include data/missing.csv")


def test_tfcignore_and_junk_are_left_out(tmp_path: Path, tfc_env: Path) -> None:
    nb = _project(tmp_path)
    folder = nb.parent
    (folder / "data" / "cache").mkdir()
    (folder / "data" / "cache" / "x.tmp").write_text("t")
    (folder / "data" / "keep.tmp").write_text("k")
    (folder / "data" / "__pycache__").mkdir()
    (folder / "data" / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"\0")
    (folder / ".tfcignore").write_text("# comment\n*.tmp\n!keep.tmp\ncache/\nlabels.txt\n")
    venv = folder / "data" / "env"
    (venv / "lib").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "lib" / "big.so").write_bytes(b"\0" * 100)
    plan = plan_for(nb)
    assert plan.context is not None
    names = _names(plan.context)
    assert "app/data/keep.tmp" in names and "app/data/train.csv" in names
    assert not any(x in n for n in names for x in ("x.tmp", "labels.txt", "pycache", "env/"))
    left = dict(plan.context.left_out)
    assert left["data/labels.txt"] == ".tfcignore"
    assert left["data/cache/"] == ".tfcignore"
    assert left["data/env/"] == "virtualenv"
    assert any(w.startswith("left out of the image: ") for w in plan.warnings)


def test_no_secret_ever_enters_a_context(tmp_path: Path, tfc_env: Path) -> None:
    nb = _project(tmp_path, "--backend docker --include .")
    for rel in [*SECRETS, "data/innocent.txt"]:  # asked for by name: the plan stops, naming it
        with pytest.raises(SecretInFile) as info:
            plan_for(nb, f"--include {rel}")
        assert f"{rel}" in str(info.value) and "holds a secret" in str(info.value)
    plan = plan_for(nb)  # the whole folder: every secret left out, with the reason
    context = plan.context
    assert context is not None
    blob = _plain(context)
    assert b"PLANTED-" not in blob
    names = _names(context)
    assert "app/data/train.csv" in names and "app/train.ipynb" in names
    left = dict(context.left_out)
    for rel in SECRETS:  # the file, or a folder above it
        parts = rel.split("/")
        found = [left.get("/".join(parts[:i]) + "/") for i in range(1, len(parts))]
        reason = left.get(rel) or next((r for r in found if r), None)
        assert reason is not None and reason.startswith("secret"), (rel, left)
    assert left["data/owner.json"].startswith("secret: Google Cloud credentials (JSON)")
    assert left["notes/readme.txt"].startswith("secret: a private key")
    assert left["data/innocent.txt"].startswith("secret")  # a link to a key is a key
    assert "secret" in " ".join(plan.warnings)
    assert "owner.json" in plan.to_text(script=False)  # the dry run says what it left out


def test_secret_rules() -> None:
    reason = package.secret_reason
    for rel in (".env", "a/.env.local", "x.pem", "k.key", "c.p12", "id_rsa", "id_ecdsa.pub"):
        assert reason(rel) is not None, rel
    for rel in (".git/HEAD", "a/.ssh/known_hosts", ".aws/config", "h/.config/gcloud/x.json"):
        assert reason(rel) is not None, rel
    for rel in (".netrc", ".npmrc", ".pypirc", "kubeconfig", "prod.kubeconfig", ".kube/config"):
        assert reason(rel) is not None, rel
    for rel in ("data.csv", "monkey.txt", "keyboard.py", "environment.yml", ".config/app.json"):
        assert reason(rel) is None, rel


def test_size_limit_names_the_largest_files(
    tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nb = _project(tmp_path)
    with open(nb.parent / "data" / "huge.bin", "wb") as fh:  # sparse: 3 MB on paper
        fh.truncate(3_000_000)
    monkeypatch.setenv("TFC_MAX_CONTEXT_MB", "1")
    with pytest.raises(package.ContextTooLarge) as info:
        plan_for(nb)
    text = str(info.value)
    assert "\n" not in text
    assert "over the 1 MB limit; largest files: data/huge.bin 3 MB" in text
    assert "Fix: leave big files out (.tfcignore or fewer --include)" in text
    plan_for(nb, "--backend local")  # the local backend builds no image: no limit


def test_dockerfile_layers_go_from_stable_to_volatile(tmp_path: Path, tfc_env: Path) -> None:
    nb = _project(tmp_path)
    (nb.parent / "apt.txt").write_text("# system packages\nlibgomp1\n")
    text = "import os\n%pip install pandas==2.2.2\n"
    write_notebook(nb, text, BODY.format(flags="--backend docker --include data"))
    context = plan_for(nb).context
    assert context is not None
    lines = [x for x in context.dockerfile.splitlines() if x and not x.startswith("#")]
    order = [
        "FROM ",  # parent image
        "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "
        "--no-install-recommends libgomp1",  # system packages
        "RUN mkdir -p /tfc-deps",  # requirements (throw-away stage)
        "COPY --from=deps /tfc-deps/ /",  # ... into the image
        "COPY tfc/tfc_runtime /opt/tfc/tfc_runtime",  # runtime
        "COPY app/ /app/",  # declared files
        "COPY code/ /app/",  # the script: the last files
        "RUN python -m tfc_runtime.imports script.py",  # then every import is checked
    ]
    at = [next(i for i, x in enumerate(lines) if x.startswith(o)) for o in order]
    assert at == sorted(at), lines
    assert lines[-2:] == ["COPY code/ /app/", "RUN python -m tfc_runtime.imports script.py"]
    final = lines[lines.index("FROM system") :]
    assert not any("ca.crt" in x or "requirements" in x for x in final)


def test_tag_follows_every_input(tmp_path: Path, tfc_env: Path) -> None:
    nb = _project(tmp_path)
    base = plan_for(nb)
    assert base.context is not None
    tag = base.context.tag
    assert base.image_uri == f"tfc-jupyter/train:{tag}"  # the dry run shows the real tag
    assert plan_for(nb).image_uri == base.image_uri
    os.utime(nb.parent / "data" / "train.csv", (1, 1))  # a touched file is the same content
    assert plan_for(nb).image_uri == base.image_uri

    def tag_of(flags: str = "") -> str:
        context = plan_for(nb, flags).context
        assert context is not None
        return context.tag

    assert tag_of("--parent-image python:3.11") != tag
    assert tag_of("--include scratch") != tag
    (nb.parent / "data" / "train.csv").write_text("a,b\n9,9\n")
    assert tag_of() != tag
    (nb.parent / "apt.txt").write_text("curl\n")
    changed = tag_of()
    write_notebook(nb, "import os\n%pip install six", BODY.format(flags="--backend docker"))
    assert tag_of() != changed
    spec = JobSpec(
        backend="docker",
        google=GoogleTarget(project="my-project"),
        image=ImageSettings(registry="r.io/x"),
    )
    assert images.image_uri(spec, "abc") == "r.io/x/notebook:abc"
    assert images.image_uri(spec.evolve(image=ImageSettings()), "abc") == (
        "us-central1-docker.pkg.dev/my-project/tfc-jupyter/notebook:abc"
    )


def test_include_flag_reaches_the_spec(settings: Any) -> None:
    ns = options.parse_line("--include data --include a.csv")
    spec = options.to_spec(ns, settings)
    assert spec.image.include == ("data", "a.csv")
    assert JobSpec.from_dict(json.loads(json.dumps(spec.to_dict()))).image.include == (
        "data",
        "a.csv",
    )


# ------------------------------------------------------------------------------ no engine
def test_no_engine_says_what_is_missing(
    tmp_path: Path, tfc_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("docker")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    nb = _project(tmp_path)
    with reporting(lambda event: None), pytest.raises(BackendError) as info:
        ensure_image(plan_for(nb), push=False)
    text = str(info.value)
    assert "\n" not in text
    assert f"no Docker engine answers at unix://{tmp_path}/no-engine.sock" in text
    assert "pass --build-bucket to build with Cloud Build" in text
    with reporting(lambda event: None), pytest.raises(BackendError) as info:
        ensure_image(plan_for(nb, "--build-bucket my-bucket"), push=True, remote=cloud_build)
    # With a bucket, Cloud Build builds it (tests/test_cloudbuild.py): here the project is missing.
    assert "with Cloud Build needs a Google Cloud project" in str(info.value)


def test_missing_docker_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "docker", None)
    with pytest.raises(MissingDependency, match=r"pip install 'tfc_jupyter\[docker\]'"):
        build.docker_client()


def test_planning_a_docker_job_imports_no_docker(tmp_path: Path) -> None:
    nb = _project(tmp_path)
    code = (
        "import sys; sys.path.insert(0, 'tests')\n"
        "from jobutil import plan_for\n"
        f"plan_for(__import__('pathlib').Path({str(nb)!r}))\n"
        "print([m for m in sys.modules if m.split('.')[0] == 'docker'])"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=root
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_line_progress() -> None:
    out = io.StringIO()
    show = LineProgress(out)
    show(Progress("build", "step 1/3: FROM x", 1, 3))
    for sent in (0, 5, 10, 50, 100):
        show(Progress("push", f"pushing {sent}", sent, 100))
    assert out.getvalue().splitlines() == [
        "[image] step 1/3: FROM x",
        "[image] pushing 0",
        "[image] pushing 10",
        "[image] pushing 50",
        "[image] pushing 100",
    ]


# ------------------------------------------------------------------------------ real builds
class CountingClient:
    """A docker client that counts builds and pushes (the engine does the real work)."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.builds = 0
        self.pushes = 0
        self.api = _CountingApi(client.api, self)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class _CountingApi:
    def __init__(self, api: Any, owner: CountingClient) -> None:
        self._api, self._owner = api, owner

    def build(self, **kwargs: Any) -> Any:
        self._owner.builds += 1
        return self._api.build(**kwargs)

    def push(self, *args: Any, **kwargs: Any) -> Any:
        self._owner.pushes += 1
        return self._api.push(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._api, name)


def _quiet_ensure(plan: Plan, client: Any, *, push: bool = False) -> ImageResult:
    events: list[Progress] = []
    with reporting(events.append):
        result = ensure_image(plan, push=push, client=client)
    assert events and events[-1].phase == "done"
    return result


@pytest.mark.slow
def test_planted_secrets_never_reach_the_image(
    tmp_path: Path, tfc_env: Path, docker_client: Any, tf_parent_image: str
) -> None:
    nb = _project(tmp_path, f"--backend docker --include . --parent-image {tf_parent_image}")
    (nb.parent / "apt.txt").unlink(missing_ok=True)
    write_notebook(
        nb,
        "import os\n%pip install tf-keras~=2.21.0",
        BODY.format(flags=f"--backend docker --include . --parent-image {tf_parent_image}"),
    )
    plan = plan_for(nb)  # the whole folder (secrets asked for by name stop the plan: see above)
    result = _quiet_ensure(plan, docker_client)
    assert result.built and result.uri == plan.image_uri
    files = own_layer_files(docker_client, result.uri, tf_parent_image, (b"PLANTED-",))
    assert "app/data/train.csv" in files.names and "app/script.py" in files.names
    assert files.marked == set()
    names = "\n".join(files.names)
    for rel in SECRETS:
        assert f"app/{rel}" not in files.names
    assert "tfc-ca.crt" not in names and "tfc-requirements" not in names  # the pip stage's
    assert "opt/tfc/tfc_runtime/__main__.py" in files.names


@pytest.mark.slow
def test_unchanged_image_is_not_rebuilt_and_a_code_change_rebuilds_one_layer(
    tmp_path: Path, tfc_env: Path, docker_client: Any, tf_parent_image: str
) -> None:
    flags = f"--backend docker --include data --parent-image {tf_parent_image}"
    nb = _project(tmp_path, flags)
    counting = CountingClient(docker_client)
    first = _quiet_ensure(plan_for(nb), counting)
    assert first.built and counting.builds == 1
    again = _quiet_ensure(plan_for(nb), counting)
    assert (again.uri, again.built, counting.builds) == (first.uri, False, 1)

    # the same content under another job name: tagged, not built
    other = _quiet_ensure(plan_for(nb, "--name twin"), counting)
    assert other.uri == f"tfc-jupyter/twin:{first.tag}" and not other.built
    assert counting.builds == 1

    write_notebook(nb, "import os", BODY.format(flags=flags).replace("'rows'", "'lines'"))
    changed = _quiet_ensure(plan_for(nb), counting)
    assert changed.built and changed.uri != first.uri and counting.builds == 2
    # the script's layer, and the import check after it (which writes nothing)
    check = "RUN python -m tfc_runtime.imports script.py"
    assert changed.rebuilt == ["COPY code/ /app/", check], changed.steps
    old = docker_client.images.get(first.uri).attrs["RootFS"]["Layers"]
    new = docker_client.images.get(changed.uri).attrs["RootFS"]["Layers"]
    differ = [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
    assert len(old) == len(new) and len(differ) == 1 and differ[0] >= len(old) - 2, differ


@pytest.mark.slow
def test_push_once_then_found_in_the_registry(
    tmp_path: Path,
    tfc_env: Path,
    monkeypatch: pytest.MonkeyPatch,
    docker_client: Any,
    registry: str,
    tf_parent_image: str,
) -> None:
    monkeypatch.setenv("TFC_REGISTRY", f"{registry}/tfc-tests")
    nb = _project(tmp_path, f"--backend vertex --include data --parent-image {tf_parent_image}")
    (nb.parent / "data" / "run.txt").write_text(str(tmp_path))  # content no other test built
    plan = plan_for(nb)
    assert plan.image_uri.startswith(f"{registry}/tfc-tests/train:")
    counting = CountingClient(docker_client)
    first = _quiet_ensure(plan, counting, push=True)
    assert first.built and first.pushed and counting.pushes == 1
    docker_client.images.remove(first.uri)  # gone here; the registry still has it
    again = _quiet_ensure(plan_for(nb), counting, push=True)
    assert (again.built, again.pushed, counting.builds, counting.pushes) == (False, False, 1, 1)
    assert build.in_registry(docker_client, first.uri, None)


@pytest.mark.slow
def test_failed_build_ends_with_the_failing_step(
    tmp_path: Path, tfc_env: Path, docker_client: Any, tf_parent_image: str
) -> None:
    folder = tmp_path / "bad"
    folder.mkdir()
    nb = write_notebook(
        folder / "bad.ipynb",
        '%pip install "tfc-pkg @ file:///nonexistent-dir/tfc-pkg.tar.gz"',
        f"%%tfc_run --backend docker --parent-image {tf_parent_image}\nprint(1)",
    )
    events: list[Progress] = []
    with reporting(events.append), pytest.raises(BuildError) as info:
        ensure_image(plan_for(nb), push=False, client=docker_client)
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith("the image build failed at step ")
    assert "(pip install of the requirements): the command returned a non-zero code: 1" in text
    assert "Fix: a requirement cannot be installed" in text
    log = info.value.log
    assert log[0].startswith("Step ") and "pip install" in log[0]
    assert "nonexistent-dir" in "\n".join(log)
    assert [e.phase for e in events][-1] == "log" and events[-1].message == "\n".join(log)


def test_a_missing_import_fails_the_build_naming_it() -> None:
    """The image's last step names what the job imports and the image lacks: the build error
    is that one line, with the fix, not the step's command."""
    from tfc_jupyter.image.progress import build_error

    log = [
        "Step 12/13 : COPY code/ /app/",
        "Step 13/13 : RUN python -m tfc_runtime.imports script.py",
        "[tfc_runtime] cannot import pandas (helpers.py, line 1): it is not installed in this "
        "image",
    ]
    steps = [("COPY code/ /app/", True), ("RUN python -m tfc_runtime.imports script.py", False)]
    error = build_error(
        "The command '/bin/sh -c python -m ...' returned a non-zero code: 1", steps, log
    )
    assert str(error) == (
        "the image lacks pandas (helpers.py, line 1), which the job imports: the job would die "
        "there. Fix: add %pip install pandas (its package name) to the notebook, or --requirements"
    )


@pytest.mark.item("broken and hostile notebooks get one line", suite="bad input")
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(
        st.text(
            st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=8
        )
        | st.sampled_from(["[", "\\", "foo\\", "[a-", "**/", "!", "a/**/b", "[!]", "\\[x"]),
        max_size=5,
    )
)
def test_any_ignore_file_is_read_or_refused_in_one_line(tmp_path: Path, lines: list[str]) -> None:
    """Issue 39: a `.tfcignore` with a lone `[` or a trailing backslash was a
    GitIgnorePatternError traceback. Any text is read, or refused naming its line."""
    folder = tmp_path / "p"
    folder.mkdir(exist_ok=True)
    (folder / ".tfcignore").write_text("\n".join(lines), encoding="utf-8")
    try:
        package.exclusions(folder)
    except SpecError as exc:
        text = str(exc)
        assert "\n" not in text and re.search(r"\.tfcignore line \d+, .* is not a pattern", text)
