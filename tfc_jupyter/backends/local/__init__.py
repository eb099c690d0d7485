"""The local backend: replicas as processes on this machine (``backend.py``), run and watched
by a detached supervisor (``supervisor.py``; ``tfc-jupyter run`` starts one ahead of its job,
``backends/spare.py``)."""
