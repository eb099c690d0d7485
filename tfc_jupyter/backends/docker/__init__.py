"""The docker backend: replicas as containers of the job's image on this machine's engine
(``backend.py``), started and watched by a detached watcher (``watcher.py``)."""
