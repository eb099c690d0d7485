"""The leaves: small helpers that stand on nothing of the product but its errors.

Safe file reads and owner-only writes (``files``), waiting on a process (``pidfds``), free
loopback ports (``ports``), the secret scanner (``secretscan``), aligned text tables
(``tables``) and the masked form of a ``--notify`` URL (``masking``). Nothing here imports a
folder of the product: every other part may stand on them.
"""
