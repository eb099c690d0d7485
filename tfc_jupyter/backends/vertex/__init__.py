"""The Vertex AI backend: a CustomJob (or a HyperparameterTuningJob for a sweep) created from the
plan (``backend.py``), its exact request (``request.py``), the clients and settings (``api.py``),
and a detached watcher (``watcher.py``) that follows its state and its logs (``logs.py``)."""
