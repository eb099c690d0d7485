"""What comes back from a job: through the border (``border``), the run cell's outputs and
names (``returned``), what it trained and saved (``results``), how it ended in one line
(``outcome``) and who is told (``notify``), its curves (``plot``), what its cell shows while it
runs (``cell``) and TensorBoard on its logs (``tensorboard``).

It stands on the store, the settings, ``job/``, ``notebook/`` and ``image/cloudbuild/`` (a
``gs://`` output place), never on a backend: the processes that record a job's end (the
backends' watchers) read and say the outcome from here.
"""
