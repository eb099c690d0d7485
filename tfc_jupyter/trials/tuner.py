"""``tfc.CloudTuner`` and ``tfc.CloudOracle``: TensorFlow Cloud's tuner, over Keras Tuner.

The classes live in the job's runtime (:mod:`tfc_runtime.cloudtuner`), so that code using them
runs the same in the kernel, in a local job and in an image without this package. Importing
this module imports Keras Tuner.
"""

from __future__ import annotations

from tfc_runtime import cloudtuner

CloudTuner = cloudtuner.CloudTuner
CloudOracle = cloudtuner.CloudOracle

__all__ = ["CloudOracle", "CloudTuner"]
