"""The job store: durable job records (``records``, SQLite) and the replica logs a job's folder
holds (``logs``).

It stands on the leaves (``util/``) and ``errors.py`` only, so everything that launches,
watches or reads a job back (the backends' watchers, ``returns/``, ``jobs.py``, the client)
stands on it.
"""
