"""The planner: a captured notebook and options become a validated, explained, immutable Plan.

It sits above :mod:`tfc_jupyter.job` (what a job is: spec, machines, routes, prices),
:mod:`tfc_jupyter.notebook` (capture and conversion) and :mod:`tfc_jupyter.image` (what goes into
the job's image), and none of them imports it: the layout test holds that.

* :mod:`.plan`: :func:`~.plan.make_plan` and :class:`~.plan.Plan`.
* :mod:`.prelaunch`: what the plan knows will fail before anything is built or launched.
"""
