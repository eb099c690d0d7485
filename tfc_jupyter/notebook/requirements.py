"""pip install lines and requirements files -> the job's requirements.

``%pip install -q 'foo[bar]>=1' -r reqs.txt -U`` in a notebook is not code to run inside the job:
it is a requirement of the job. This module reads such lines (and requirements files the user
names) into one ordered, de-duplicated list that the backends install in the job's environment.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import RequirementsError
from ..util.files import UnsafeFile, read_regular, real_path

REQUIREMENTS_LIMIT = 1_000_000  # bytes: a requirements file is text, a few KB

# pip install options that change nothing about *what* is installed.
_FLAGS = {
    "-q",
    "--quiet",
    "-qq",
    "-qqq",
    "-v",
    "--verbose",
    "-U",
    "--upgrade",
    "--user",
    "--no-cache-dir",
    "--pre",
    "--force-reinstall",
    "-I",
    "--ignore-installed",
    "--no-warn-script-location",
    "--disable-pip-version-check",
    "--break-system-packages",
    "--no-input",
    "--exists-action",
    "--prefer-binary",
    "--no-build-isolation",
    "--compile",
    "--no-compile",
    "--upgrade-strategy",
    "--progress-bar",
    "--root-user-action",
    "--timeout",
    "--retries",
    "--no-color",
    "--isolated",
    "--require-hashes",
    "--use-pep517",
}
_FLAGS_WITH_VALUE = {
    "--upgrade-strategy",
    "--progress-bar",
    "--root-user-action",
    "--timeout",
    "--retries",
    "--exists-action",
}
# options that belong in a requirements file as they are
_INDEX_OPTIONS = {
    "-i": "--index-url",
    "--index-url": "--index-url",
    "--extra-index-url": "--extra-index-url",
    "-f": "--find-links",
    "--find-links": "--find-links",
    "--trusted-host": "--trusted-host",
}
_TOOLING = {"pip", "setuptools", "wheel"}
# Options of the resolver itself: kept, and given to every pip install of the job's image.
RESOLVER_OPTIONS = ("--use-deprecated", "--use-feature")
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_URL = re.compile(r"^(?:[a-z+]+://|git\+|hg\+|svn\+|bzr\+)", re.I)


NO_DEPS_PREFIX = "--no-deps "  # a requirement the notebook installed with pip --no-deps


def canonical_name(requirement: str) -> str | None:
    """The PEP 503 name of a requirement line (None for options; URLs by ``#egg=`` or
    ``name @ url``)."""
    requirement = requirement.removeprefix(NO_DEPS_PREFIX)
    if " @ " in requirement:
        requirement = requirement.split(" @ ", 1)[0]
    if requirement.startswith("-") or _URL.match(requirement):
        egg = re.search(r"#egg=([A-Za-z0-9._-]+)", requirement)
        return re.sub(r"[-_.]+", "-", egg.group(1)).lower() if egg else None
    match = _NAME.match(requirement)
    return re.sub(r"[-_.]+", "-", match.group(1)).lower() if match else None


def _check_requirement(text: str) -> str:
    from packaging.requirements import InvalidRequirement, Requirement

    if _URL.match(text) or " @ " in text:
        return text
    try:
        Requirement(text)
    except InvalidRequirement as exc:
        raise RequirementsError(
            f"{text!r} is not a valid requirement ({exc})",
            "write it as NAME, NAME==VERSION or NAME[extra]>=VERSION",
        ) from None
    return text


REPLACED_BY_US = {
    "tensorflow-cloud": "the job's runtime answers `import tfc_jupyter as tfc` (tfc.remote() is "
    "True, tfc.run() returns at once), and tensorflow-cloud would pin its own TensorFlow",
}
"""Packages a migrating user's requirements name that the job must not install."""


@dataclass
class Requirements:
    """An ordered set of requirement lines; later lines for the same package win."""

    lines: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, line: str, origin: str = "") -> None:
        """Add one requirement (or index option) line, replacing an earlier one for the name."""
        line = line.strip()
        if not line or line.startswith("#"):
            return
        name = canonical_name(line)
        if name in REPLACED_BY_US:
            self.notes.append(f"{line!r}{origin} left out: {REPLACED_BY_US[name]}")
            return
        if name is not None:
            for i, old in enumerate(self.lines):
                if canonical_name(old) == name:
                    if old != line:
                        self.notes.append(f"{old!r} replaced by {line!r}{origin}")
                    self.lines[i] = line
                    return
        elif line in self.lines:
            return
        self.lines.append(line)

    def add_file(self, path: Path, origin: str = "") -> None:
        """Merge a requirements file (``-r`` lines inside are followed)."""
        path = Path(path)
        real_path(path, "requirements file", "requirements")  # inside the server root (REST)
        try:
            text = read_regular(path, REQUIREMENTS_LIMIT, "requirements file").decode("utf-8")
        except UnsafeFile as exc:
            raise RequirementsError(exc.message, exc.hint) from None
        except OSError as exc:
            raise RequirementsError(
                f"cannot read requirements file {str(path)!r}: {exc.strerror or exc}",
                "check the path (relative paths start at the notebook's folder)",
            ) from None
        except UnicodeDecodeError:
            raise RequirementsError(
                f"requirements file {str(path)!r} is not UTF-8 text",
                "pass a plain-text requirements file",
            ) from None
        for number, raw in enumerate(text.splitlines(), start=1):
            line = raw.split(" #", 1)[0].strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith(("-r ", "--requirement ")):
                self.add_file(path.parent / line.split(None, 1)[1], origin)
            elif line.startswith("-"):
                self.add(line, origin)
            else:
                try:
                    self.add(_check_requirement(line), origin)
                except RequirementsError:  # quote no file content: name the line instead
                    raise RequirementsError(
                        f"line {number} of {path.name} is not a valid requirement",
                        "write it as NAME, NAME==VERSION or NAME[extra]>=VERSION",
                    ) from None

    def names(self) -> set[str]:
        """Canonical names of the packages asked for."""
        return {n for n in map(canonical_name, self.lines) if n}


def parse_pip_args(args: str, base_dir: Path, into: Requirements, origin: str = "") -> str:
    """Read the arguments of ``pip ...`` into ``into``; returns the pip sub-command.

    ``install`` adds requirements; ``list``, ``show``, ``freeze``, ``uninstall``... change nothing
    in the job and are returned so the caller can drop them.

    Raises:
        RequirementsError: an option we cannot honour in a job, with the fix.
    """
    args = strip_shell_comment(args)
    if "{" in args or "$" in args:
        raise RequirementsError(
            f"pip arguments {args.strip()!r} use a Python variable, which is only known when "
            "the notebook runs",
            "write the package names literally, or list them in a file passed with --requirements",
        )
    try:
        words = shlex.split(args)
    except ValueError as exc:
        raise RequirementsError(
            f"cannot read pip arguments {args!r}: {exc}", "check the quotes on the pip line"
        ) from None
    if not words:
        return ""
    command, rest = words[0], words[1:]
    if command != "install":
        return command
    no_deps = "--no-deps" in rest
    i = 0
    while i < len(rest):
        word = rest[i]
        opt, eq, inline = word.partition("=") if word.startswith("--") else (word, "", "")
        value = inline if eq else (rest[i + 1] if i + 1 < len(rest) else None)
        step = 1 if eq else 2
        if opt in ("-r", "--requirement"):
            if value is None:
                raise RequirementsError("pip -r needs a file name", "write -r requirements.txt")
            into.add_file(base_dir / value, origin)
            i += step
        elif opt in _INDEX_OPTIONS:
            if value is None:
                raise RequirementsError(f"pip {opt} needs a value", f"write {opt} URL")
            into.add(f"{_INDEX_OPTIONS[opt]} {value}", origin)
            i += step
        elif opt in ("-e", "--editable"):
            if value is None or not _URL.match(value):
                raise RequirementsError(
                    f"pip install -e {value or ''} installs a local folder, which the job does "
                    "not have",
                    "install from a URL (git+https://...) or add the package to --requirements",
                )
            into.add(value, origin)
            i += step
        elif opt in ("-c", "--constraint", "-t", "--target", "--prefix", "--root", "--src"):
            raise RequirementsError(
                f"pip install {opt} is not supported in a job",
                "put the pins in a requirements file and pass it with --requirements",
            )
        elif opt in _FLAGS or word in _FLAGS:
            i += 1 + (1 if opt in _FLAGS_WITH_VALUE and not eq else 0)
        elif word == "--no-deps":
            i += 1  # each requirement of this line is installed without its dependencies
        elif opt in RESOLVER_OPTIONS:
            if value is None:
                raise RequirementsError(f"pip {opt} needs a value", f"write {opt}=VALUE")
            into.add(f"{opt}={value}", origin)
            i += step
        elif word.startswith("-") and re.fullmatch(r"-[qvU]+", word):
            i += 1
        elif word.startswith("-"):
            raise RequirementsError(
                f"unknown pip install option {word!r}",
                "remove it, or move the install into --requirements",
            )
        elif canonical_name(word) in _TOOLING:
            into.notes.append(f"{word!r} left out: the job's image brings its own pip tooling")
            i += 1
        else:
            requirement = _check_requirement(word)
            into.add(NO_DEPS_PREFIX + requirement if no_deps else requirement, origin)
            i += 1
    return command


_PIP_SHELL = re.compile(
    r"^\s*(?:sudo\s+(?:-\S+\s+)*)?"
    r"(?:(?:\S*/)?pip(?:3(?:\.\d+)?)?|(?:\S*python[\d.]*|\{sys\.executable\}|\$\S+)\s+-m\s+pip)"
    r"\s+(?P<args>.*)$",
    re.S,
)


def strip_shell_comment(command: str) -> str:
    """``command`` without its shell comment: a ``#`` that starts a word outside quotes, as
    bash reads it (``pkg#egg=x`` and ``'a # b'`` keep theirs)."""
    quote = ""
    for i, ch in enumerate(command):
        if quote:
            if ch == quote:
                quote = ""
            elif ch == "\\" and quote == '"':
                continue
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or command[i - 1].isspace()):
            return command[:i].rstrip()
    return command


def shell_pip_args(command: str) -> str | None:
    """The pip arguments of a shell line that runs pip, else None.

    ``pip install x``, ``pip3 install x``, ``python -m pip install x`` and
    ``{sys.executable} -m pip install x`` are recognised.
    """
    match = _PIP_SHELL.match(strip_shell_comment(command))
    if not match:
        return None
    args = match.group("args")
    try:
        lexer = shlex.shlex(args, posix=True, punctuation_chars=True)
        tokens = list(lexer)
    except ValueError:
        tokens = []
    operators = [t for t in tokens if t and set(t) <= set("();<>|&")]
    if operators and set("".join(operators)) <= set("<>") and "=" in args:
        raise RequirementsError(
            f"in the shell line {command.strip()!r} the shell reads < and > as redirections",
            "quote the requirement ('numpy>=2'), or use %pip install",
        )
    if "`" in args or operators:
        raise RequirementsError(
            f"the shell line {command.strip()!r} mixes pip with other shell commands",
            "put the pip install on a line of its own",
        )
    return args


#: Distributions that each install TensorFlow: any of them satisfies a ``tensorflow``
#: requirement, and asking pip for another would install a second TensorFlow.
TENSORFLOW_DISTRIBUTIONS = (
    "tensorflow",
    "tensorflow-cpu",
    "tensorflow-gpu",
    "tensorflow-intel",
    "tensorflow-macos",
    "tensorflow-aarch64",
    "intel-tensorflow",
    "tf-nightly",
    "tf-nightly-cpu",
    "tf-nightly-gpu",
)


def installed(name: str) -> tuple[str, str] | None:
    """``(distribution, version)`` installed here for project ``name`` (any TensorFlow
    distribution for a TensorFlow one), None when there is none."""
    from importlib import metadata

    key = re.sub(r"[-_.]+", "-", name).lower()
    candidates = TENSORFLOW_DISTRIBUTIONS if key in TENSORFLOW_DISTRIBUTIONS else (key,)
    for dist in candidates:
        try:
            return dist, metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def unsatisfied(lines: list[str]) -> tuple[list[str], list[str]]:
    """``(missing, unchecked)``: requirement lines this environment does not satisfy (with
    ``(have VERSION)`` when the version is wrong), and URLs that name no project to check.

    ``packaging`` (about 10 ms to import) is imported only when there is a line to check: a job
    with no requirements, the usual local launch, never pays it."""
    lines = [x for x in lines if x.removeprefix(NO_DEPS_PREFIX).strip()]
    if not lines:
        return [], []
    from packaging.requirements import InvalidRequirement, Requirement

    missing: list[str] = []
    unchecked: list[str] = []
    for raw in lines:
        line = raw.removeprefix(NO_DEPS_PREFIX).strip()
        if not line or line.startswith("-"):
            continue
        if _URL.match(line):
            name = canonical_name(line)
            if name is None:
                unchecked.append(line)
                continue
            req = Requirement(name)
        else:
            try:
                req = Requirement(line)
            except InvalidRequirement:
                unchecked.append(line)
                continue
            if req.marker is not None and not req.marker.evaluate():
                continue
        found = installed(req.name)
        if found is None:
            missing.append(line)
        elif req.specifier and not req.specifier.contains(found[1], prereleases=True):
            have = found[1] if found[0] == canonical_name(req.name) else f"{found[0]} {found[1]}"
            missing.append(f"{line} (have {have})")
    return missing, unchecked
