"""What the code reads by pattern or folder goes into images (issue 34): ``tf.io.gfile.glob(
'data/*.tfrecord')``, ``os.listdir('data')``, ``image_dataset_from_directory('data/train')``
ship what they match next to the notebook, within the limit and the exclusions; one that
matches nothing is a plan warning naming it, unless an earlier cell writes there."""

from __future__ import annotations

import glob
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jobutil import plan_for, write_notebook

from tfc_jupyter.image import context as package
from tfc_jupyter.notebook import needs

FILES = (
    "data/a.tfrecord",
    "data/b.tfrecord",
    "data/c.tfrecord",
    "data/train.csv",
    "data/test.csv",
    "data/.hidden.csv",
    "data/train/cats/1.png",
    "data/train/dogs/2.png",
    "data/train/top.png",
    "x.csv",
    "nb.ipynb",
)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for rel in FILES:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(f"{rel}\n")
    return tmp_path


def _reads(code: str, base: Path) -> list[needs.PatternRead]:
    return needs.read_patterns(code, base, package.exclusions(base))


def _paths(code: str, base: Path) -> list[str]:
    return [p for read in _reads(code, base) for p in read.paths]


RECORDS = ["data/a.tfrecord", "data/b.tfrecord", "data/c.tfrecord"]
PNGS = ["data/train/cats/1.png", "data/train/dogs/2.png", "data/train/top.png"]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("import glob\nfiles = glob.glob('data/*.tfrecord')", RECORDS),
        ("from glob import glob\nfiles = glob('data/*.csv')", ["data/test.csv", "data/train.csv"]),
        (
            "import glob\nfiles = glob.glob('data/*.csv', include_hidden=True)",
            ["data/.hidden.csv", "data/test.csv", "data/train.csv"],
        ),
        ("import glob\nit = glob.iglob('data/[ab].tfrecord')", RECORDS[:2]),
        ("import glob\nfiles = glob.glob(pathname='data/?.tfrecord')", RECORDS),
        ("import glob\nfiles = glob.glob('data/**/*.png', recursive=True)", PNGS),
        ("import glob\nfiles = glob.glob('data/**/*.png')", ["data/train/top.png"]),
        ("import tensorflow as tf\nfiles = tf.io.gfile.glob('data/*.tfrecord')", RECORDS),
        ("from tensorflow.io import gfile\nfiles = gfile.glob('./data/c.*')", RECORDS[2:]),
        (
            "import tensorflow as tf\n"
            "ds = tf.data.TFRecordDataset(tf.io.gfile.glob('data/*.tfrecord'))",
            RECORDS,
        ),
        ("import tensorflow as tf\nds = tf.data.Dataset.list_files('data/*.tfrecord')", RECORDS),
        (
            "import tensorflow as tf\n"
            "ds = tf.data.Dataset.list_files(['data/a.*', 'x.csv'], shuffle=False)",
            ["data/a.tfrecord", "x.csv"],
        ),
        (
            "import tensorflow as tf\nds = tf.data.experimental.make_csv_dataset("
            "file_pattern='data/t*.csv', batch_size=4)",
            ["data/test.csv", "data/train.csv"],
        ),
        ("import tensorflow as tf\nm = tf.io.matching_files('*.csv')", ["x.csv"]),
        ("from pathlib import Path\nfiles = Path('data').glob('*.tfrecord')", RECORDS),
        ("import pathlib\nfiles = list(pathlib.Path('data').rglob('*.png'))", PNGS),
        (
            "from pathlib import Path\nroot = Path('data') / 'train'\nfiles = root.glob('*/*.png')",
            PNGS[:2],
        ),
        (
            "import os, glob\nDATA = 'data'\nfiles = glob.glob(os.path.join(DATA, '*.tfrecord'))",
            RECORDS,
        ),
        (
            "import glob\nDATA: str = 'data'\nSUFFIX = 'csv'\n"
            "files = glob.glob(f'{DATA}/train.{SUFFIX}')",
            ["data/train.csv"],
        ),
        ("import glob\nfiles = glob.glob('data' + '/*.tfrecord')", RECORDS),
        ("import os\nnames = os.listdir('data/train')", ["data/train"]),
        ("import os\nfor root, dirs, files in os.walk('data'):\n    pass", ["data"]),
        ("import os\nwith os.scandir('data/train') as it:\n    pass", ["data/train"]),
        ("import tensorflow as tf\nnames = tf.io.gfile.listdir('data/train')", ["data/train"]),
        ("import tensorflow as tf\nfor w in tf.io.gfile.walk('data'):\n    pass", ["data"]),
        ("from pathlib import Path\nnames = list(Path('data/train').iterdir())", ["data/train"]),
        (
            "import tensorflow as tf\n"
            "ds = tf.keras.utils.image_dataset_from_directory('data/train', batch_size=2)",
            ["data/train"],
        ),
        (
            "from keras.utils import image_dataset_from_directory\n"
            "ds = image_dataset_from_directory(directory='data/train')",
            ["data/train"],
        ),
        ("gen = datagen.flow_from_directory('data/train', target_size=(8, 8))", ["data/train"]),
        ("gen = datagen.flow_from_dataframe(df, directory='data/train')", ["data/train"]),
        ("import glob\nsplit = input()\nfiles = glob.glob(f'data/{split}/*.png')", ["data"]),
        ("import os\nfiles = [os.path.join('data', f) for f in os.listdir('data')]", ["data"]),
    ],
)
def test_what_a_pattern_or_folder_matches_goes_in(folder: Path, code: str, expected: list) -> None:
    assert sorted(_paths(code, folder)) == sorted(expected)


@pytest.mark.parametrize(
    "code",
    [
        "import glob\nfiles = glob.glob('/data/*.csv')",  # absolute: not next to the notebook
        "import glob\nfiles = glob.glob('../*.csv')",  # up and out
        "import tensorflow as tf\nfiles = tf.io.gfile.glob('gs://bucket/data/*.tfrecord')",
        "import glob\nfiles = glob.glob('~/data/*.csv')",
        "import glob\nfiles = glob.glob('*.csv', root_dir='/elsewhere')",
        "import glob\nfiles = glob.glob(pattern_from_somewhere)",
        "import os\nnames = os.listdir()",  # the notebook's folder: never all of it
        "import os\nnames = os.listdir('.')",
        "files = fs.glob('data/*.csv')",  # an unknown object's glob
        "names = '/'.join(['data', 'x'])",
        "import glob\ndef f(path):\n    return glob.glob(path + '/*.csv')\npath = 'data'",
    ],
)
def test_what_is_not_next_to_the_notebook_is_not_taken(folder: Path, code: str) -> None:
    reads = _reads(code, folder)
    assert [p for r in reads for p in r.paths] == []
    assert needs.read_warnings(reads, str) == []


def test_a_wide_pattern_takes_nothing_the_image_never_holds(tmp_path: Path) -> None:
    """``**`` at the notebook's root: never the virtualenv, .git, the notebook's checkpoints,
    caches, tfc_jupyter's own job records or a secret (left out and named, not a stop)."""
    for rel in (
        "data/rows.csv",
        ".venv/pyvenv.cfg",
        ".venv/lib/site.py",
        "venv/pyvenv.cfg",
        ".git/config",
        ".ipynb_checkpoints/nb-checkpoint.ipynb",
        "__pycache__/x.pyc",
        "home/records.db",
        "keys/server.pem",
        "creds.json",
    ):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x\n")
    (tmp_path / "creds.json").write_text('{"type": "service_account", "project_id": "p"}\n')
    code = "import glob\nfiles = glob.glob('**/*', recursive=True, include_hidden=True)"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TFC_JUPYTER_HOME", str(tmp_path / "home"))
        (read,) = _reads(code, tmp_path)
    assert read.paths == ["data", "keys"]  # keys/ is walked into the image: server.pem stays out
    assert read.left_out == [("creds.json", "secret: Google Cloud credentials (JSON) (line 1)")]
    warnings = needs.read_warnings([read], lambda line: f"cell 2, line {line}")
    assert warnings == [
        "the code reads **/* (glob.glob, cell 2, line 2): left out of the image: creds.json "
        "(secret: Google Cloud credentials (JSON) (line 1))"
    ]


def test_a_pattern_over_the_limit_takes_nothing_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "big").mkdir()
    for i in range(3):
        (tmp_path / "big" / f"{i}.bin").write_bytes(b"\0" * 400)
    (read,) = needs.read_patterns("import glob\nx = glob.glob('big/*.bin')", tmp_path, None, 1000)
    assert read.paths == [] and read.over == 1200
    (warning,) = needs.read_warnings([read], lambda line: f"cell 1, line {line}")
    assert warning.startswith(
        "the code reads big/*.bin (glob.glob, cell 1, line 2), which matches 1.2 KB next to the "
        "notebook, over the 1 KB the plan takes into an image unasked: none of it goes in."
    )


def test_a_search_that_goes_on_too_long_stops_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(needs, "SEARCH_ENTRIES", 5)
    for i in range(10):
        (tmp_path / f"{i}.csv").write_text("x\n")
    (read,) = _reads("import glob\nx = glob.glob('*.csv')", tmp_path)
    assert read.capped and read.paths == [f"{i}.csv" for i in range(5)]  # what it found
    assert "stopped looking after 5 entries" in needs.read_warnings([read], str)[0]
    (tmp_path / "sub").mkdir()
    for i in range(10):
        (tmp_path / "sub" / f"{i}.csv").write_text("x\n")
    (read,) = _reads("import glob\nx = glob.glob('s*')", tmp_path)
    assert read.capped and read.paths == []  # a folder it could not measure: nothing


@pytest.mark.parametrize(
    ("code", "warned"),
    [
        ("import glob\nx = glob.glob('data/*.tfrecord')", "data/*.tfrecord (glob.glob, line 2)"),
        ("import os\nx = os.listdir('images')", "images (os.listdir, line 2)"),
        (
            "import tensorflow as tf\nx = tf.keras.utils.image_dataset_from_directory('im/tr')",
            "im/tr (tf.keras.utils.image_dataset_from_directory, line 2)",
        ),
        (  # the write comes after the read: it does not make the files in time
            "import glob, tensorflow as tf\nx = glob.glob('data/*.tfrecord')\n"
            "w = tf.io.TFRecordWriter('data/a.tfrecord')",
            "data/*.tfrecord (glob.glob, line 2)",
        ),
        (  # written elsewhere
            "import glob\nopen('out/a.csv', 'w').write('x')\nx = glob.glob('data/*.csv')",
            "data/*.csv (glob.glob, line 3)",
        ),
        ("import glob\nopen('data/a.csv').read()\nx = glob.glob('data/*.csv')", "data/*.csv"),
    ],
)
def test_a_read_that_matches_nothing_is_a_warning(tmp_path: Path, code: str, warned: str) -> None:
    (warning,) = needs.read_warnings(_reads(code, tmp_path), lambda line: f"line {line}")
    assert warning.startswith(f"the code reads {warned}")
    assert "next to the notebook" in warning and "Fix:" in warning and "\n" not in warning


@pytest.mark.parametrize(
    "write",
    [
        "import tensorflow as tf\nfor i in range(2):\n"
        "    with tf.io.TFRecordWriter(f'data/{i}.tfrecord') as w:\n        w.write(b'x')",
        "import os\nos.makedirs('data', exist_ok=True)",
        "import os\nDATA = 'data'\nos.makedirs(os.path.join(DATA, 'train'))",
        "with open('data/a.tfrecord', 'wb') as f:\n    f.write(b'x')",
        "import io\nwith io.open('data/a.tfrecord', mode='w') as f:\n    pass",
        "from pathlib import Path\nPath('data').mkdir()",
        "from pathlib import Path\nPath('data/a.tfrecord').write_bytes(b'x')",
        "from pathlib import Path\nwith Path('data/a.tfrecord').open('wb') as f:\n    pass",
        "df.to_csv('data/rows.csv')",
        "import numpy as np\nnp.save('data/x.npy', x)",
        "import zipfile\nzipfile.ZipFile('d.zip').extractall('.')",
        "import shutil\nshutil.unpack_archive('d.zip', 'data')",
        "import tensorflow as tf\n"
        "tf.keras.utils.get_file('d.zip', 'https://x/d.zip', cache_dir='.', cache_subdir='data')",
    ],
)
def test_no_warning_when_an_earlier_cell_writes_there(tmp_path: Path, write: str) -> None:
    code = f"{write}\nimport glob\nfiles = glob.glob('data/*.tfrecord')\n"
    (read,) = _reads(code, tmp_path)
    assert read.written, write
    assert needs.read_warnings([read], str) == []


def test_built_paths_name_their_folder(folder: Path) -> None:
    """An f-string or a joined path whose literal part is a folder next to the notebook ships
    that folder; a path the code writes to does not."""
    (folder / "out").mkdir()
    (folder / "out" / "old.csv").write_text("x\n")
    code = (
        "import os, pandas as pd\n"
        "for i in range(3):\n"
        "    df = pd.read_csv(f'data/part_{i}.csv')\n"
        "    df.to_csv(f'out/part_{i}.csv')\n"
        "ROOT = 'data'\n"
        "rows = open(os.path.join(ROOT, 'train.csv')).read()\n"
        "x = open(f'{ROOT}_{i}.csv')\n"  # 'data_0.csv': not in a folder
    )
    assert needs.data_paths(code, folder) == ["data"]
    assert needs.data_paths("import os\np = os.path.join('x' + '.csv')", folder) == ["x.csv"]


# Names with spaces and non-ASCII letters, never a pattern's own characters, a dot first, or a
# name the image leaves out (caches, secrets by name).
_NAME = st.text(
    alphabet=st.characters(
        whitelist_categories=("Lu", "Ll", "Nd"),
        whitelist_characters=" -_é中ß",
        max_codepoint=0x9FFF,
    ),
    min_size=1,
    max_size=12,
).filter(
    lambda s: (
        s.strip() == s
        and all(package.secret_reason(p) is None for p in (s, f"{s}/x", f"{s}.tfrecord"))
        and s not in ("node_modules", "__pycache__")
    )
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    folder=_NAME,
    stems=st.sets(_NAME, min_size=1, max_size=4),
    others=st.sets(_NAME, max_size=3),
    form=st.sampled_from(["gfile", "glob", "join", "fstring", "path"]),
)
def test_generated_names_are_matched_as_the_call_would(
    folder: str, stems: set[str], others: set[str], form: str
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / folder).mkdir()
        for stem in stems:
            (base / folder / f"{stem}.tfrecord").write_text("r\n")
        for other in others:
            (base / folder / f"{other}.csv").write_text("c\n")
        pattern = f"{folder}/*.tfrecord"
        code = {
            "gfile": f"import tensorflow as tf\nfiles = tf.io.gfile.glob({pattern!r})",
            "glob": f"import glob\nfiles = glob.glob({pattern!r})",
            "join": f"import os, glob\nD = {folder!r}\n"
            "files = glob.glob(os.path.join(D, '*.tfrecord'))",
            "fstring": f"import glob\nD = {folder!r}\nfiles = glob.glob(f'{{D}}/*.tfrecord')",
            "path": f"from pathlib import Path\nfiles = Path({folder!r}).glob('*.tfrecord')",
        }[form]
        (read,) = _reads(code, base)
        expected = sorted(f"{folder}/{s}.tfrecord" for s in stems)
        assert sorted(read.paths) == expected
        assert read.pattern == pattern
        found = glob.glob(pattern, root_dir=base)
        assert sorted(found) == expected  # what Python's glob finds in the same folder


def test_a_docker_plan_ships_what_the_run_cell_globs(folder: Path) -> None:
    """The files a run cell globs go into the docker image's context with a note; a pattern that
    matches nothing is a warning naming the cell and line."""
    nb = write_notebook(
        folder / "nb.ipynb",
        "import glob\nimport tensorflow as tf",
        "%%tfc_run --backend docker --dry-run\n"
        "files = tf.io.gfile.glob('data/*.tfrecord')\n"
        "more = glob.glob('prepared/*.npy')\n"
        "print(len(files), len(more))",
    )
    plan = plan_for(nb)
    assert plan.context is not None
    names = {e.arcname for e in plan.context.entries}
    assert {f"app/{r}" for r in RECORDS} <= names
    assert "app/data/train.csv" not in names  # only what the pattern matches
    assert plan.context.to_dict()["auto_included"] == RECORDS
    assert any(n.endswith("go into the image: " + ", ".join(RECORDS)) for n in plan.script.notes)
    (warning,) = [w for w in plan.warnings if "prepared" in w]
    assert warning.startswith(
        "the code reads prepared/*.npy (glob.glob, cell 2, line 3), which matches nothing next "
        "to the notebook"
    )


def test_a_plan_names_many_matched_files_in_one_short_line(tmp_path: Path) -> None:
    (tmp_path / "shards").mkdir()
    for i in range(40):
        (tmp_path / "shards" / f"{i:02d}.tfrecord").write_text("r\n")
    nb = write_notebook(
        tmp_path / "nb.ipynb",
        "%%tfc_run --backend docker --dry-run\n"
        "import tensorflow as tf\nfiles = tf.io.gfile.glob('shards/*.tfrecord')",
    )
    plan = plan_for(nb)
    assert plan.context is not None and len(plan.context.auto) == 40
    (note,) = [n for n in plan.script.notes if "go into the image" in n]
    assert note.endswith("shards/11.tfrecord and 28 more")


def test_a_local_plan_looks_for_no_patterns(tmp_path: Path) -> None:
    nb = write_notebook(
        tmp_path / "nb.ipynb",
        "%%tfc_run --dry-run\nimport glob\nfiles = glob.glob('nothing/*.csv')",
    )
    assert not any("nothing/*.csv" in w for w in plan_for(nb).warnings)


def test_an_earlier_cell_that_writes_there_is_no_warning(tmp_path: Path) -> None:
    nb = write_notebook(
        tmp_path / "nb.ipynb",
        "import os\nimport tensorflow as tf\nos.makedirs('data', exist_ok=True)\n"
        "for i in range(2):\n"
        "    with tf.io.TFRecordWriter(f'data/{i}.tfrecord') as w:\n"
        "        w.write(b'x')",
        "%%tfc_run --backend docker --dry-run\n"
        "files = tf.io.gfile.glob('data/*.tfrecord')\n"
        "print(len(files))",
    )
    plan = plan_for(nb)
    assert not any("data/*.tfrecord" in w for w in plan.warnings), plan.warnings
