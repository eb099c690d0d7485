"""How the test Cloud Build server runs a build: fetch, steps, push, with Cloud Build's log.

A :class:`BuildRun` moves a build through QUEUED and WORKING to SUCCESS, FAILURE, TIMEOUT or
CANCELLED, writing the log Cloud Build writes (``starting build``, ``FETCHSOURCE``, ``BUILD``,
``Step #N - "id": ...`` lines, ``PUSH``, ``DONE`` or ``ERROR``) to ``gs://LOGS/log-<id>.txt`` as it
goes. ``gcr.io/cloud-builders/docker`` steps run one of two ways:

* **docker** (a docker SDK client was given): ``docker build`` runs for real on the local engine
  (classic builder, host networking: the test engine has no bridge; no pulls: images cannot be
  pulled here), and ``images`` are pushed for real to their registry (the local test registry).
* **validate** (no engine): the Dockerfile is parsed and checked against the context (a ``FROM``
  first, every ``COPY``/``ADD`` source present), each instruction is logged as docker would, but
  nothing runs; ``images`` are recorded in the server's own registry (``/v2/.../manifests``).

Either way, a failure injected with ``GcpServer.fail_next_build(step, message)`` makes the docker
build fail at that Dockerfile step (emulated, with docker's words), and ``stall_next_build()`` keeps
a build WORKING, past its timeout, until it is cancelled.
"""

from __future__ import annotations

import contextlib
import fnmatch
import gzip
import hashlib
import io
import re
import shlex
import tarfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

DOCKER_BUILDER = "gcr.io/cloud-builders/docker"
TERMINAL = {"SUCCESS", "FAILURE", "INTERNAL_ERROR", "TIMEOUT", "CANCELLED", "EXPIRED"}


def now() -> str:
    """RFC 3339, as Cloud Build writes times."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class Injected:
    """A failure or stall for the next build (see the module docstring)."""

    step: int = 0  # Dockerfile step (1-based) at which the docker build fails; 0: none
    message: str = ""
    stall: bool = False


class StepFailed(Exception):
    """A build step ended badly: ``kind`` is Cloud Build's failureInfo type."""

    def __init__(self, kind: str, detail: str, status: str = "FAILURE") -> None:
        super().__init__(detail)
        self.kind, self.detail, self.status = kind, detail, status


def dockerfile_instructions(text: str) -> list[str]:
    """Instructions of a Dockerfile: comments dropped, continued lines joined."""
    out: list[str] = []
    current = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not current and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            current += line[:-1].rstrip() + " "
            continue
        current += line
        if current.strip():
            out.append(current.strip())
        current = ""
    if current.strip():
        out.append(current.strip())
    return out


class BuildRun:
    """One build (see the module docstring). ``resource`` is the ``Build`` as the API shows it.

    Args:
        resource: the accepted build, with id, status QUEUED, times.
        read_object: ``(bucket, name, generation) -> bytes | None`` from the server's storage.
        write_log: ``(text) -> None``: replace the log object with ``text``.
        docker: a docker SDK client (docker mode) or None (validate mode).
        images: the server's own registry (validate mode): ``repository path:tag -> digest``.
    """

    def __init__(
        self,
        resource: dict[str, Any],
        *,
        read_object: Callable[[str, str, str | None], bytes | None],
        write_log: Callable[[str], None] | None,
        docker: Any,
        images: dict[str, str],
        injected: Injected | None,
        queue_delay: float,
        log_interval: float,
    ) -> None:
        self.resource = resource
        self.read_object, self.write_log = read_object, write_log
        self.docker, self.images, self.injected = docker, images, injected or Injected()
        self.queue_delay, self.log_interval = queue_delay, log_interval
        self.cancel_requested = threading.Event()
        self.lock = threading.Lock()
        self.lines: list[str] = []
        self.tagged: set[str] = set()
        self.thread: threading.Thread | None = None
        self._flushed = 0.0
        self.mode = "docker" if docker is not None else "validate"

    # -- the API's view ---------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """A copy of the build resource."""
        import copy

        with self.lock:
            return copy.deepcopy(self.resource)

    def status(self) -> str:
        """The build's status now."""
        with self.lock:
            return str(self.resource["status"])

    def log_text(self) -> str:
        """The whole log so far."""
        with self.lock:
            return "".join(f"{line}\n" for line in self.lines)

    def start(self) -> None:
        """Run in a daemon thread."""
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _set(self, **fields: Any) -> None:
        with self.lock:
            self.resource.update(fields)

    def log(self, line: str, *, flush: bool = False) -> None:
        """Append a log line; the log object is rewritten every ``log_interval`` seconds."""
        with self.lock:
            self.lines.append(line)
        if flush or time.monotonic() - self._flushed >= self.log_interval:
            self.flush()

    def flush(self) -> None:
        """Write the log object now."""
        self._flushed = time.monotonic()
        if self.write_log is not None:
            self.write_log(self.log_text())

    # -- the run ----------------------------------------------------------------------------
    def _run(self) -> None:
        build_id = self.resource["id"]
        deadline = time.monotonic() + float(self.resource["timeout"].rstrip("s"))
        time.sleep(self.queue_delay)
        if self.cancel_requested.is_set():
            self._end("CANCELLED", "Build was cancelled")
            return
        self._set(status="WORKING", startTime=now())
        self.log(f'starting build "{build_id}"')
        how = (
            "steps run with the local Docker engine; images pushed to their registry"
            if self.mode == "docker"
            else "no Docker engine: the Dockerfile is validated against the context, not run"
        )
        self.log(f"(tests/gcp_server.py: {how})")
        self.log("")
        try:
            files, tar = self._fetch()
            self.log("BUILD")
            for n, step in enumerate(self.resource["steps"]):
                self._step(n, step, files, tar, deadline)
            if self.resource.get("images"):
                self.log("PUSH")
                results = [self._push(uri) for uri in self.resource["images"]]
                with self.lock:
                    self.resource.setdefault("results", {})["images"] = results
            self.log("DONE", flush=True)
            self._end("SUCCESS", "")
        except StepFailed as exc:
            self.log("ERROR")
            self.log(f"ERROR: {exc.detail}", flush=True)
            info = {"type": exc.kind, "detail": exc.detail}
            self._end(exc.status, exc.detail, info)
        except Exception as exc:  # the engine failed us: Cloud Build says INTERNAL_ERROR
            self.log(f"ERROR: {type(exc).__name__}: {exc}", flush=True)
            self._end("INTERNAL_ERROR", f"{type(exc).__name__}: {exc}")

    def _end(self, status: str, detail: str, info: dict[str, str] | None = None) -> None:
        fields: dict[str, Any] = {"status": status, "finishTime": now()}
        if detail:
            fields["statusDetail"] = detail
        if info:
            fields["failureInfo"] = info
        self._set(**fields)
        self.flush()

    def _fetch(self) -> tuple[dict[str, bytes], bytes]:
        """The source tarball: files by name, and the uncompressed tar."""
        self.log("FETCHSOURCE")
        src = self.resource["source"]["storageSource"]
        gen = src.get("generation")
        where = f"gs://{src['bucket']}/{src['object']}" + (f"#{gen}" if gen else "")
        self.log(f"Fetching storage object: {where}")
        data = self.read_object(src["bucket"], src["object"], gen)
        if data is None:
            raise StepFailed("FETCH_SOURCE_FAILED", f"storage.objects.get: {where}: not found")
        try:
            tar = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
            files: dict[str, bytes] = {}
            with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
                for member in archive.getmembers():
                    if member.isfile():
                        fh = archive.extractfile(member)
                        assert fh is not None
                        files[member.name.removeprefix("./")] = fh.read()
        except (OSError, tarfile.TarError, EOFError) as exc:
            raise StepFailed(
                "FETCH_SOURCE_FAILED", f"{where} is not a tar archive: {exc}"
            ) from None
        self.log(f"Copying {where}...")
        self.log(f"Operation completed over 1 objects/{len(data)} B.")
        return files, tar

    def _step(
        self, n: int, step: dict[str, Any], files: dict[str, bytes], tar: bytes, deadline: float
    ) -> None:
        label = f'Step #{n} - "{step["id"]}"' if step.get("id") else f"Step #{n}"
        starting = label.replace("Step #", "Starting Step #", 1)
        self._step_status(n, "WORKING")
        self.log(starting)

        def out(text: str) -> None:
            for line in text.splitlines() or [""]:
                self.log(f"{label}: {line}")

        out(f"Already have image (with digest): {step['name']}")
        ok, detail = False, ""
        try:
            if step["name"] != DOCKER_BUILDER:
                detail = f"the test server runs only {DOCKER_BUILDER} steps, not {step['name']}"
                out(detail)
            else:
                args = list(step.get("args", []))
                if args[:1] == ["build"]:
                    ok = self._docker_build(args, files, tar, out, deadline)
                elif args[:1] == ["pull"] and len(args) == 2:
                    ok = self._docker_pull(args[1], out)
                else:
                    out(f"the test server runs `docker build` and `docker pull` only: {args}")
        finally:
            if self.cancel_requested.is_set():
                self._step_status(n, "CANCELLED")
                raise StepFailed("CANCELLED", "Build was cancelled", "CANCELLED")
            if time.monotonic() > deadline:
                self._step_status(n, "TIMEOUT")
                raise StepFailed("TIMEOUT", "Build ran past its timeout", "TIMEOUT")
        self._step_status(n, "SUCCESS" if ok else "FAILURE")
        self.log(starting.replace("Starting", "Finished", 1))
        if not ok and not step.get("allowFailure"):
            raise StepFailed(
                "USER_BUILD_STEP",
                detail
                or f'build step {n} "{step["name"]}" failed: step exited with non-zero status: 1',
            )

    def _step_status(self, n: int, status: str) -> None:
        with self.lock:
            step = self.resource["steps"][n]
            step["status"] = status
            timing = step.setdefault("timing", {})
            timing.setdefault("startTime", now())
            if status != "WORKING":
                timing["endTime"] = now()

    # -- docker -----------------------------------------------------------------------------
    def _docker_build(
        self,
        args: list[str],
        files: dict[str, bytes],
        tar: bytes,
        out: Callable[[str], None],
        deadline: float,
    ) -> bool:
        tags, labels, cache_from, path = [], {}, [], None
        i = 1
        while i < len(args):
            arg = args[i]
            if arg in ("-t", "--tag", "--label", "--cache-from", "--network") and i + 1 < len(args):
                value = args[i + 1]
                if arg in ("-t", "--tag"):
                    tags.append(value)
                elif arg == "--label":
                    key, _, val = value.partition("=")
                    labels[key] = val
                elif arg == "--cache-from":
                    cache_from.append(value)
                i += 2
            elif arg.startswith("-"):
                out(f"unknown flag: {arg}")
                return False
            else:
                path, i = arg, i + 1
        if path != ".":
            out(f'"docker build" requires exactly 1 argument (the test server builds "."): {path}')
            return False
        if self.injected.step or self.injected.stall or self.docker is None:
            ok = self._validate(files, tags, out, deadline)
        else:
            ok = self._real_build(tar, tags, labels, cache_from, out)
        if ok:
            self.tagged.update(tags)
        return ok

    def _real_build(
        self,
        tar: bytes,
        tags: list[str],
        labels: dict[str, str],
        cache_from: list[str],
        out: Callable[[str], None],
    ) -> bool:
        stream = self.docker.api.build(
            fileobj=io.BytesIO(tar),
            custom_context=True,
            tag=tags[0] if tags else None,
            labels=labels or None,
            cache_from=cache_from or None,
            network_mode="host",
            pull=False,
            rm=True,
            forcerm=True,
            decode=True,
        )
        for chunk in stream:
            if "error" in chunk:
                out(chunk.get("errorDetail", {}).get("message") or chunk["error"])
                return False
            text = chunk.get("stream", "")
            if text.strip():
                out(text.rstrip("\n"))
            if self.cancel_requested.is_set():
                return False
        for extra in tags[1:]:
            repository, _, tag = extra.rpartition(":")
            self.docker.api.tag(tags[0], repository, tag)
        return True

    def _validate(
        self, files: dict[str, bytes], tags: list[str], out: Callable[[str], None], deadline: float
    ) -> bool:
        if "Dockerfile" not in files:
            out(
                "unable to prepare context: unable to evaluate symlinks in Dockerfile path: "
                "lstat /workspace/Dockerfile: no such file or directory"
            )
            return False
        instructions = dockerfile_instructions(files["Dockerfile"].decode())
        first = next((x for x in instructions if not x.upper().startswith("ARG ")), "")
        if not first.upper().startswith("FROM "):
            out("Error response from daemon: no build stage in current context")
            return False
        out(f"Sending build context to Docker daemon  {sum(map(len, files.values()))}B")
        total = len(instructions)
        for k, instruction in enumerate(instructions, 1):
            out(f"Step {k}/{total} : {instruction}")
            if self.injected.stall:
                while not self.cancel_requested.is_set():  # ignores the timeout: a stuck build
                    time.sleep(0.05)
                return False
            if k == self.injected.step:
                out(self.injected.message or "failure injected by the test")
                if instruction.upper().startswith("RUN "):
                    out(f"The command '/bin/sh -c {instruction[4:]}' returned a non-zero code: 1")
                return False
            problem = _copy_problem(instruction, files)
            if problem:
                out(problem)
                return False
            out(" ---> validated (not run)")
            if self.cancel_requested.is_set() or time.monotonic() > deadline:
                return False
        digest = hashlib.sha256(b"".join(sorted(files.values()))).hexdigest()
        out(f"Successfully built {digest[:12]}")
        for tag in tags:
            out(f"Successfully tagged {tag}")
        return True

    def _docker_pull(self, image: str, out: Callable[[str], None]) -> bool:
        """No pulls here: an image the engine has is "up to date"; any other fails."""
        if self.docker is not None:
            with contextlib.suppress(Exception):
                self.docker.images.get(image)
                out(f"Status: Image is up to date for {image}")
                return True
        out(f"Error response from daemon: manifest for {image} not found: manifest unknown")
        return False

    def _push(self, uri: str) -> dict[str, str]:
        self.log(f"Pushing {uri}")
        if uri not in self.tagged:
            raise StepFailed(
                "PUSH_FAILED",
                f"failed to find one or more images after execution of build steps: ['{uri}']",
            )
        if self.docker is None or self.injected.step:
            repository, _, tag = uri.partition("/")[2].rpartition(":")
            digest = "sha256:" + hashlib.sha256(uri.encode()).hexdigest()
            self.images[f"{repository}:{tag}"] = digest
            self.log("(validated only: recorded in the test server's registry, not pushed)")
            return {"name": uri, "digest": digest}
        repository, _, tag = uri.rpartition(":")
        digest = ""
        for chunk in self.docker.api.push(repository, tag=tag, stream=True, decode=True):
            if "error" in chunk:
                self.log(chunk["error"])
                raise StepFailed("PUSH_FAILED", f"failed to push {uri}: {chunk['error']}")
            digest = (chunk.get("aux") or {}).get("Digest", digest)
            if chunk.get("status") and not chunk.get("progressDetail"):
                self.log(f"{chunk.get('id', '')}: {chunk['status']}".lstrip(": "))
        self.log(f"{tag}: digest: {digest}")
        return {"name": uri, "digest": digest}


def _copy_problem(instruction: str, files: dict[str, bytes]) -> str:
    """docker's complaint when a COPY/ADD source is not in the context (else empty)."""
    words = shlex.split(instruction)
    if not words or words[0].upper() not in ("COPY", "ADD"):
        return ""
    args = [w for w in words[1:] if not w.startswith("--")]
    if any(w.startswith("--from") for w in words[1:]) or len(args) < 2:
        return ""
    for source in args[:-1]:
        src = source.removeprefix("./").rstrip("/")
        found = any(
            name == src or name.startswith(src + "/") or fnmatch.fnmatch(name, src)
            for name in files
        )
        if not found and src not in ("", "."):
            return (
                f"{words[0].upper()} failed: file not found in build context or excluded by "
                f".dockerignore: stat {src}: file does not exist"
            )
    return ""


def parse_gs(uri: str) -> tuple[str, str]:
    """``gs://bucket/some/prefix`` -> ``("bucket", "some/prefix")``."""
    m = re.fullmatch(r"gs://([^/]+)/?(.*)", uri)
    if not m:
        raise ValueError(uri)
    return m.group(1), m.group(2).strip("/")
