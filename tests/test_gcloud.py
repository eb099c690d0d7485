"""Google's refusals name the flag to change: a field Vertex AI rejects, as our flag."""

from __future__ import annotations

import pytest

from tfc_jupyter.backends.vertex.google import gcloud


@pytest.mark.parametrize(
    ("field", "flag"),
    [
        ("job_spec.psc_interface_config.network_attachment", "--psc-network-attachment"),
        ("job_spec.network", "--network"),
        ("job_spec.worker_pool_specs[0].machine_spec.reservation_affinity", "--reservation"),
        ("job_spec.worker_pool_specs[0].machine_spec.accelerator_count", "--machine / --gpus"),
        ("job_spec.persistent_resource_id", "--persistent-resource"),
        ("job_spec.worker_pool_specs[1].disk_spec.boot_disk_size_gb", "--boot-disk-size"),
        ("job_spec.worker_pool_specs[0].container_spec.env[3].value", "--env"),
        ("job_spec.worker_pool_specs[0].container_spec.image_uri", "--image"),
        ("display_name", "--name"),
    ],
)
def test_a_refused_field_names_its_flag(field: str, flag: str) -> None:
    said = gcloud._flag_for(field)
    assert said.startswith(" (") and flag in said, (field, said)


def test_a_field_with_no_flag_names_none() -> None:
    assert gcloud._flag_for("job_spec.enable_dashboard_access_x") == ""
