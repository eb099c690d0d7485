"""Sweeps: many trials of one notebook, each a job of its own (issue 37).

:mod:`.spec` reads what a sweep tries (``--sweep "lr=loguniform(1e-4,1e-1)"``); :mod:`.targets`
finds the line of the notebook each parameter replaces in a trial; :mod:`.methods` holds the
methods that pick the next values (``--method``), one class each, and their registry.
"""
