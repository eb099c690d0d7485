"""What comes back from a job: through the border (``border``), the run cell's outputs and
names (``returned``), what it trained and saved (``results``), how it ended in one line
(``outcome``) and who is told (``notify``), its curves (``plot``), what its cell shows while it
runs (``cell``) and TensorBoard on its logs (``tensorboard``).

It stands on the store, the settings, ``job/`` and ``notebook/``, never on a backend: a ``gs://``
output place is read through the store its scheme names (:func:`tfc_jupyter.registry.store_for`),
and the processes that record a job's end (the
backends' watchers) read and say the outcome from here.
"""
