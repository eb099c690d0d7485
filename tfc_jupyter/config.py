"""Defaults for every job, and where each value came from.

Order, first wins: a flag on the magic/CLI; a ``TFC_*`` environment variable; ``ipython_config.py``
(``c.TfcConfig.project = ...``); ``jupyter_server_config.py`` / ``.json`` (the same ``TfcConfig``
section, shared with the server extension); generic Google Cloud variables
(``GOOGLE_CLOUD_PROJECT``, ``GOOGLE_CLOUD_REGION`` ...); the built-in default.
``%tfc_config`` prints the table this module builds.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import SpecError
from .registry import BUILTIN, DEFAULT, backend_settings
from .util.tables import table

if TYPE_CHECKING:
    from traitlets.config import Config


@dataclass(frozen=True)
class Setting:
    """One setting: its built-in default and help, and whether it is a positive number (a time
    or size limit: a traitlets ``Float``) or text (``Unicode``)."""

    default: Any
    help: str
    number: bool = False
    allow_none: bool = False
    zero_is_off: bool = False  # 0 turns the feature off (else a number must be positive)
    flag: bool = False  # on or off (true/false, 1/0, yes/no, on/off)


def _text(default: str | None, help: str) -> Setting:
    return Setting(default, help, allow_none=default is None)


def _number(default: float, help: str) -> Setting:
    return Setting(float(default), help, number=True)


SETTINGS: dict[str, Setting] = {
    "project": _text(None, "Google Cloud project id for Vertex AI jobs."),
    "region": _text("us-central1", "Vertex AI region."),
    "backend": _text(DEFAULT, f"Default backend: {', '.join(BUILTIN)} or an installed one."),
    "machine": _text("CPU", "Default chief machine (catalog name or machine type)."),
    "build_bucket": _text(None, "GCS bucket for Cloud Build and staging."),
    "registry": _text(None, "Image registry (default: Artifact Registry in the region)."),
    "service_account": _text(None, "Service account the job runs as."),
    "base_output_dir": _text(None, "gs:// folder for model, checkpoints and TensorBoard logs."),
    "notify": _text(
        None,
        "Where to say that a job ended, for jobs with no --notify: apprise URLs (json://host/"
        "path, mailto://..., slack://...), separated by spaces.",
    ),
    "home": _text(None, "Folder for job records and job folders (default: Jupyter data dir)."),
    # Limits and patience: seconds unless said otherwise.
    "startup_timeout": _number(
        300,
        "Seconds a job's replicas (or containers) may take to start before the job is "
        "marked failed.",
    ),
    "build_timeout": _number(
        3600, "Seconds an image build or push may take (Docker and Cloud Build)."
    ),
    "max_context_mb": _number(
        500, "Largest build context, in MB: the files packed into a job's image."
    ),
    "cell_lines": _number(
        200,
        "Most log lines a %%tfc_run cell shows: the first half as printed, then the latest "
        "half in a window that scrolls (every line stays in the job's logs).",
    ),
    "return_limit_mb": _number(
        1024,
        "Most megabytes a %%tfc_run cell's job brings back when it ends, read and decompressed: "
        "in all for the names set in the kernel, and in all for the files it wrote next to the "
        "notebook (what is over it stays in the job folder, and a line says so).",
    ),
    "partial_names": Setting(
        True,
        "Whether a %%tfc_run cell whose job failed brings back the names bound before the "
        "failing statement (marked partial, with where it stopped); off: a failed job sets "
        "nothing in the kernel.",
        flag=True,
    ),
    "warm_idle": Setting(
        1800.0,
        "Seconds the warm runtime (TensorFlow imported ahead, for local jobs that import it) "
        "waits for a job before it ends; 0 turns it off (every job imports TensorFlow itself).",
        number=True,
        zero_is_off=True,
    ),
    "return_max_files": _number(
        1000,
        "Most files a %%tfc_run cell's job puts next to the notebook when it ends (the rest "
        "stay in the job folder, and a line says so).",
    ),
}
"""Every setting's default and help; :data:`KEYS` orders them. Plain data, so that reading the
settings (every CLI call, every launch) never imports traitlets: ``TfcConfig``, the traitlets
class ``c.TfcConfig`` configures, is made from it when something asks for it."""


def _make_tfc_config() -> type:
    """The traitlets ``Configurable`` whose traits are :data:`SETTINGS` (``c.TfcConfig.x``)."""
    from traitlets import Bool, Float, Unicode
    from traitlets.config import Configurable

    attrs: dict[str, Any] = {
        "__doc__": "tfc_jupyter settings, configurable from ipython_config.py and "
        "jupyter_server_config.py.",
        "__module__": __name__,
    }
    for key, setting in SETTINGS.items():
        trait: Any
        if setting.number:
            trait = Float(setting.default, help=setting.help)
        elif setting.flag:
            trait = Bool(setting.default, help=setting.help)
        elif setting.allow_none:
            trait = Unicode(setting.default, allow_none=True, help=setting.help)
        else:
            trait = Unicode(setting.default, help=setting.help)
        attrs[key] = trait.tag(config=True)
    return type("TfcConfig", (Configurable,), attrs)


_MADE: dict[str, type] = {}


def __getattr__(name: str) -> Any:
    """``TfcConfig``, made (and traitlets imported) on first use."""
    if name != "TfcConfig":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name not in _MADE:
        _MADE[name] = _make_tfc_config()
    return _MADE[name]


def _declared() -> dict[str, Setting]:
    """The settings the built-in backends declare (:data:`~tfc_jupyter.registry.
    BACKEND_SETTINGS`: Vertex AI's endpoints and patience), by key, in their order."""
    out: dict[str, Setting] = {}
    for backend, declared in backend_settings().items():
        for key, (kind, default, help) in declared.items():
            if key in SETTINGS or key in out:
                raise ValueError(f"the {backend} backend declares setting {key!r}, already known")
            out[key] = (
                _number(float(default or 0), help)
                if kind == "number"
                else _text(None if default is None else str(default), help)
            )
    return out


_BACKENDS = _declared()
SETTINGS.update(_BACKENDS)

KEYS = (
    "project",
    "region",
    "backend",
    "machine",
    "build_bucket",
    "registry",
    "service_account",
    "base_output_dir",
    "notify",
    "home",
    "startup_timeout",
    "build_timeout",
    "max_context_mb",
    "cell_lines",
    "return_limit_mb",
    "return_max_files",
    "partial_names",
    "warm_idle",
    *_BACKENDS,
)
"""Every setting, in the order ``%tfc_config`` shows them (each a ``TfcConfig`` trait): the
portable ones, then those the backends declare."""
# Environment variables, most specific first (every other key: TFC_<KEY>).
ENV = {
    "project": ("TFC_PROJECT", "GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT", "GCLOUD_PROJECT"),
    "region": ("TFC_REGION", "GOOGLE_CLOUD_REGION", "CLOUDSDK_COMPUTE_REGION"),
    "backend": ("TFC_BACKEND",),
    "machine": ("TFC_MACHINE",),
    "build_bucket": ("TFC_BUILD_BUCKET",),
    "registry": ("TFC_REGISTRY",),
    "service_account": ("TFC_SERVICE_ACCOUNT",),
    "base_output_dir": ("TFC_BASE_OUTPUT_DIR",),
    "home": ("TFC_JUPYTER_HOME",),
}
for _key in KEYS:
    ENV.setdefault(_key, (f"TFC_{_key.upper()}",))


@dataclass
class Settings:
    """Effective defaults with their provenance (``sources[key]`` says where each came from)."""

    values: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)

    def get(self, key: str) -> Any:
        """The effective value of one setting."""
        return self.values.get(key)

    def seconds(self, key: str) -> float:
        """A time or size limit, as a number."""
        return float(self.values[key])

    @staticmethod
    def help(key: str) -> str:
        """What a setting is for (its ``c.TfcConfig`` trait's help)."""
        return SETTINGS[key].help

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """``{key: {"value", "source", "env", "help"}}`` for every setting (REST defaults)."""
        return {
            key: {
                "value": self.values.get(key),
                "source": self.sources.get(key, "default"),
                "env": ENV[key][0],
                "help": self.help(key),
            }
            for key in KEYS
        }

    def rows(self) -> list[tuple[str, str, str]]:
        """``(key, value, source)`` for display (the ``notify`` URLs masked)."""
        from .util.masking import shown_all

        rows = [(k, _shown(self.values.get(k)), self.sources[k]) for k in KEYS]
        return [(k, " ".join(shown_all(v.split())) if k == "notify" else v, f) for k, v, f in rows]

    def to_text(self) -> str:
        """An aligned table, as ``%tfc_config`` prints it."""
        rows = [("setting", "value", "from"), *self.rows()]
        return table(rows)


def _section(config: Config | Mapping[str, Any] | None) -> dict[str, Any]:
    if config is None or "TfcConfig" not in config:
        return {}
    section = config["TfcConfig"]
    return {k: section[k] for k in KEYS if k in section}


def server_config() -> tuple[dict[str, Any], dict[str, str]]:
    """The ``TfcConfig`` section of the jupyter_server config files (later files win).

    Returns the merged values and, for each key, the file it came from.
    """
    from jupyter_core.paths import jupyter_config_path

    merged: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for folder in reversed(jupyter_config_path()):
        for name in ("jupyter_server_config.json", "jupyter_server_config.py"):
            if not (Path(folder) / name).is_file():
                continue
            # traitlets' loaders (imported only when there is a file to read)
            from traitlets.config.loader import JSONFileConfigLoader, PyFileConfigLoader

            loader = JSONFileConfigLoader if name.endswith(".json") else PyFileConfigLoader
            try:
                section = _section(loader(name, path=folder).load_config())
            except Exception:  # a broken server config is the server's problem, not ours
                continue
            merged.update(section)
            origins.update(dict.fromkeys(section, str(Path(folder) / name)))
    return merged, origins


def load_settings(
    ipython_config: Config | None = None,
    environ: Mapping[str, str] | None = None,
    include_server: bool = True,
) -> Settings:
    """Collect the effective defaults.

    Args:
        ipython_config: the shell's config (``shell.config``), when running in IPython.
        environ: environment to read (default ``os.environ``).
        include_server: also read jupyter_server config files.
    """
    env = os.environ if environ is None else environ
    ipy = _section(ipython_config)
    server, server_origins = server_config() if include_server else ({}, {})
    settings = Settings()
    for key in KEYS:
        layers: list[tuple[str, Any]] = []
        specific = [v for v in ENV[key] if v.startswith("TFC_")]
        generic = [v for v in ENV[key] if not v.startswith("TFC_")]
        layers += [(f"env {v}", env.get(v)) for v in specific]
        layers.append((f"ipython_config (c.TfcConfig.{key})", ipy.get(key)))
        origin = server_origins.get(key, "jupyter_server_config")
        layers.append((f"{origin} (c.TfcConfig.{key})", server.get(key)))
        layers += [(f"env {v}", env.get(v)) for v in generic]
        for source, value in layers:
            if value not in (None, ""):
                settings.values[key] = _typed(key, value, source)
                settings.sources[key] = source
                break
        else:
            settings.values[key] = SETTINGS[key].default
            settings.sources[key] = "default"
    return settings


def _shown(value: Any) -> str:
    """A value as ``%tfc_config`` shows it (``300``, not ``300.0``)."""
    if value is None:
        return ""
    return f"{value:g}" if isinstance(value, float) else str(value)


def _typed(key: str, value: Any, source: str) -> Any:
    """A value from the environment or a config file, as its trait's type; a bad one is a
    one-line error naming where it came from and the fix."""
    setting = SETTINGS[key]
    if setting.flag:
        return _flag(key, value, source)
    if not setting.number:
        return value
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = -1.0
    if number < 0 or (number == 0 and not setting.zero_is_off):
        kind = "a number, 0 or more" if setting.zero_is_off else "a positive number"
        raise SpecError(
            f"setting {key} = {value!r} (from {source}) is not {kind}",
            f"set it to a number such as {setting.default:g}, or unset it",
            field=key,
        )
    return number


_ON = ("1", "true", "yes", "on")
_OFF = ("0", "false", "no", "off")


def _flag(key: str, value: Any, source: str) -> bool:
    """An on/off setting's value (a bool, or one of the words for one)."""
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in _ON or word in _OFF:
        return word in _ON
    raise SpecError(
        f"setting {key} = {value!r} (from {source}) is neither on nor off",
        "set it to true or false, or unset it",
        field=key,
    )


def current_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """This process's settings: with the running IPython shell's ``c.TfcConfig`` when there is
    one (IPython is never imported for it); ``environ`` as :func:`load_settings`."""
    config = None
    ipython = sys.modules.get("IPython")
    if ipython is not None:
        config = getattr(ipython.get_ipython(), "config", None)
    return load_settings(config, environ)
