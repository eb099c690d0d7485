"""Google Cloud access that Vertex AI and Cloud Build share: credentials, errors that say what
to do, retries (``gcloud``), and what a Google refusal means (``quota``).

Not under ``backends/vertex/``: the image package's Cloud Build client (``image/cloudbuild/``)
and Docker engine (``image/docker.py``, its registry logins) stand on it too, and ``backends/``
stands on ``image/``; nothing outside ``backends/`` imports a backend's module. Importing it
imports no Google library.
"""
