"""Driving a sweep and reading its trials back: the trials as jobs of this machine, chosen by
Optuna (``trials``), a tuning job a backend runs as one job (``tuned``), the trials as the user
sees them (``trial_table``), a sweep read back from its trial jobs for the JupyterLab sweep tab
(``sweep_jobs``), and TensorFlow Cloud's tuner (``tuner``).

Above the client (a trial is a job it launches); what a sweep is, its parameters and targets,
is ``tfc_jupyter.sweep``, below the planner.
"""
