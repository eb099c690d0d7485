"""Vertex AI's training machine list: the machine types a custom job may name, with their
vCPUs and memory. The catalog (:mod:`.catalog`) and the prices (:mod:`.prices`) both read it;
it imports nothing, so neither imports the other for it."""

from __future__ import annotations

# Vertex AI's training machine list (vertex_rules.TRAINING_COMPUTE_URL, read 2026-11-26): the
# machine types a custom job may name, and nothing else (n2-standard-2/-96/-128 and the like are
# Compute Engine types Vertex AI does not train on). The test server takes this same list.
# machine type -> (vCPUs, memory GB, an earlier unverified price: not used, see prices.py)
MACHINE_TYPES: dict[str, tuple[int, float, float | None]] = {
    "n1-standard-4": (4, 15, 0.2185),
    "n1-standard-8": (8, 30, 0.4370),
    "n1-standard-16": (16, 60, 0.8741),
    "n1-standard-32": (32, 120, 1.7481),
    "n1-standard-64": (64, 240, 3.4963),
    "n1-standard-96": (96, 360, 5.2444),
    "n1-highmem-8": (8, 52, 0.5442),
    "n1-highmem-16": (16, 104, 1.0885),
    "n1-highcpu-16": (16, 14.4, 0.6528),
    "n1-highcpu-32": (32, 28.8, 1.3057),
    "e2-standard-4": (4, 16, 0.1541),
    "e2-standard-8": (8, 32, 0.3082),
    "e2-standard-16": (16, 64, 0.6165),
    "a2-highgpu-1g": (12, 85, 0.8513),
    "a2-highgpu-2g": (24, 170, 1.7025),
    "a2-highgpu-4g": (48, 340, 3.4050),
    "a2-highgpu-8g": (96, 680, 6.8101),
    "a2-ultragpu-1g": (12, 170, 1.2750),
    "a2-ultragpu-2g": (24, 340, 2.5500),
    "a2-ultragpu-4g": (48, 680, 5.1000),
    "a2-ultragpu-8g": (96, 1360, 10.2000),
    # The rest of Vertex AI's training list (vertex_rules.TRAINING_COMPUTE_URL, read
    # 2026-11-26): no list price verified here (None: "price not listed").
    **{f"n1-highmem-{n}": (n, 6.5 * n, None) for n in (2, 4, 32, 64, 96)},
    "n1-highcpu-64": (64, 57.6, None),
    "n1-highcpu-96": (96, 86.4, None),
    "e2-standard-32": (32, 128, None),
    **{f"e2-highmem-{n}": (n, 8 * n, None) for n in (2, 4, 8, 16)},
    **{f"e2-highcpu-{n}": (n, n, None) for n in (16, 32)},
    **{f"n2-standard-{n}": (n, 4 * n, None) for n in (4, 8, 16, 32, 48, 64, 80)},
    **{f"n2-highmem-{n}": (n, 8 * n, None) for n in (2, 4, 8, 16, 32, 48, 64, 80)},
    **{f"n2-highcpu-{n}": (n, n, None) for n in (16, 32, 48, 64, 80)},
    **{f"n4-standard-{n}": (n, 4 * n, None) for n in (2, 4, 8, 16, 32, 48, 64, 80)},
    **{f"n4-highmem-{n}": (n, 8 * n, None) for n in (2, 4, 8, 16, 32, 48, 64, 80)},
    **{f"n4-highcpu-{n}": (n, 2 * n, None) for n in (2, 4, 8, 16, 32, 48, 64, 80)},
    **{f"c2-standard-{n}": (n, 4 * n, None) for n in (4, 8, 16, 30, 60)},
    "m1-ultramem-40": (40, 961, None),
    "m1-ultramem-80": (80, 1922, None),
    "m1-ultramem-160": (160, 3844, None),
    "m1-megamem-96": (96, 1433.6, None),
    "a2-megagpu-16g": (96, 1360, None),
    "g2-standard-4": (4, 16, None),
    "g2-standard-12": (12, 48, None),
    "g2-standard-16": (16, 64, None),
    "g2-standard-32": (32, 128, None),
    **{f"g4-standard-{48 * n}": (48 * n, 180 * n, None) for n in (1, 2, 4, 8)},
    "a4x-highgpu-4g": (140, 884, None),  # ARM (GB200): listed by Vertex AI, refused here
    "g2-standard-8": (8, 32, 0.3485),
    "g2-standard-24": (24, 96, 0.9978),
    "g2-standard-48": (48, 192, 1.9956),
    "g2-standard-96": (96, 384, 3.9913),
    "a3-highgpu-1g": (26, 234, None),
    "a3-highgpu-2g": (52, 468, None),
    "a3-highgpu-4g": (104, 936, None),
    "a3-highgpu-8g": (208, 1872, 28.9000),
    "a3-megagpu-8g": (208, 1872, None),
    "a3-ultragpu-8g": (224, 2952, None),
    "a4-highgpu-8g": (224, 3968, None),
    "cloud-tpu": (96, 340, 0.0),
    "ct5lp-hightpu-1t": (24, 48, 1.3800),
    "ct5lp-hightpu-4t": (112, 192, 5.5200),
    "ct5lp-hightpu-8t": (224, 384, 11.0400),
}
