"""``import tfc_jupyter as tfc`` in an image without tfc_jupyter (docker, Vertex AI): the shim.

The job runs ``python -S`` here, so neither tfc_jupyter nor TensorFlow is importable, as in an
image built for the job: TensorFlow Cloud's calls answer as they did inside a tfc.run job.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

RUNTIME = Path(__file__).resolve().parents[2] / "runtime"

SCRIPT = """\
import sys
import tfc_jupyter as tfc
print("remote", tfc.remote())
print("run", tfc.run(chief_config=tfc.COMMON_MACHINE_CONFIGS["T4_1X"], worker_count=2,
                     docker_config=tfc.DockerConfig(image_build_bucket="b")))
cfg = tfc.MachineConfig(8, 30, tfc.AcceleratorType.NVIDIA_TESLA_T4, accelerator_count=2)
print("config", cfg.cpu_cores, cfg.accelerator_type, cfg.accelerator_count)
print("tpu", tfc.is_tpu_config(tfc.COMMON_MACHINE_CONFIGS["TPU"]))
print("argv", sys.argv[1:])
print("hp", tfc.hp("lr", 0.5), "tuner", tfc.run_cloudtuner(num_jobs=2))
"""


def test_tfc_calls_answer_in_an_image_without_tfc_jupyter(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    proc = subprocess.run(
        [sys.executable, "-S", "-m", "tfc_runtime", "--strategy", "none", str(script), "--x"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,  # not the repository's root, where tfc_jupyter/ is a folder
        env={"PYTHONPATH": str(RUNTIME), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1:] == [
        "remote True",
        "run None",
        "config 8 NVIDIA_TESLA_T4 2",
        "tpu True",
        "argv ['--x']",
        "hp 0.5 tuner None",
    ]


def test_the_real_package_wins_where_it_is_installed(tmp_path: Path) -> None:
    """The local backend runs in the kernel's environment: its tfc_jupyter is the real one."""
    script = tmp_path / "script.py"
    script.write_text("import tfc_jupyter as tfc\nprint(tfc.__file__ is not None, tfc.remote())\n")
    proc = subprocess.run(
        [sys.executable, "-m", "tfc_runtime", "--strategy", "none", str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={"PYTHONPATH": str(RUNTIME), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "True True"


def test_ipython_display_answers_in_an_image_without_ipython(tmp_path: Path) -> None:
    """``from IPython.display import display, HTML`` in a job whose image has no IPython: a
    display prints what a plain-text front end shows, clear_output does nothing."""
    script = tmp_path / "script.py"
    script.write_text(
        "from IPython.display import HTML, clear_output, display\n"
        "import IPython\n"
        "display(HTML('<b>bold</b>'), 'text')\n"
        "clear_output(wait=True)\n"
        "print('shell', IPython.get_ipython())\n"
    )
    proc = subprocess.run(
        [sys.executable, "-S", "-m", "tfc_runtime", "--strategy", "none", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={"PYTHONPATH": str(RUNTIME), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1:] == [
        "<IPython.core.display.HTML object>",
        "text",
        "shell None",
    ]


_PNG = (  # a 1x1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="
)
_IMAGES = {
    "file": "Image(filename=sys.argv[1])",
    "path": "Image(sys.argv[1])",
    "bytes": "Image(data=open(sys.argv[1], 'rb').read())",
    "jpeg": "Image(data=b'\\xff\\xd8\\xff\\xe0 jpeg', format='jpg')",
    "url": "Image(url='https://example.com/a.png')",
}


def test_an_image_shows_as_jupyter_shows_it_in_an_image_without_ipython(tmp_path: Path) -> None:
    """``display(Image(...))`` in a job whose image has no IPython (docker): the bundle the run
    cell sends back is the one IPython makes (it was only ``<IPython.core.display.Image
    object>``)."""
    import base64
    import json

    from IPython.core.formatters import DisplayFormatter
    from IPython.display import Image

    png = tmp_path / "a.png"
    png.write_bytes(base64.b64decode(_PNG))
    code = (
        "import json, sys\n"
        "from tfc_runtime import ipython_shim, runcell\n"
        "ipython_shim.install()\n"
        "from IPython.display import Image\n"
        f"cases = {{k: eval(v) for k, v in {_IMAGES!r}.items()}}\n"
        "print(json.dumps({k: runcell.bundle(v)[0] for k, v in cases.items()}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-S", "-c", code, str(png)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={"PYTHONPATH": str(RUNTIME), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    argv = [str(png)]
    formatter = DisplayFormatter()
    for name, made in _IMAGES.items():
        expected = formatter.format(eval(made, {"Image": Image, "sys": _Argv(argv)}))[0]
        assert got[name] == expected, name


class _Argv:
    def __init__(self, argv: list[str]) -> None:
        self.argv = ["-c", *argv]
