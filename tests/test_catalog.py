"""The machine catalog: tfc.run's names, today's Vertex machines, impossible shapes."""

from __future__ import annotations

import pytest

from tfc_jupyter.errors import SpecError
from tfc_jupyter.job import catalog, prices
from tfc_jupyter.job.catalog import Machine, gpu_machine, lookup, normalize_gpu_type, tpu_machine

# tfc.run's COMMON_MACHINE_CONFIGS (reference/vertex_and_tfc_facts.md):
# name -> (machine type, vCPUs, GB, accelerator enum, count)
TFC_RUN_NAMES = {
    "CPU": ("n1-standard-4", 4, 15, None, 0),
    "P4_1X": ("n1-standard-8", 8, 30, "NVIDIA_TESLA_P4", 1),
    "P4_4X": ("n1-standard-16", 16, 60, "NVIDIA_TESLA_P4", 4),
    "V100_1X": ("n1-standard-8", 8, 30, "NVIDIA_TESLA_V100", 1),
    "V100_4X": ("n1-standard-16", 16, 60, "NVIDIA_TESLA_V100", 4),
    "V100_8X": ("n1-standard-32", 32, 120, "NVIDIA_TESLA_V100", 8),
    "T4_1X": ("n1-standard-8", 8, 30, "NVIDIA_TESLA_T4", 1),
    "T4_4X": ("n1-standard-16", 16, 60, "NVIDIA_TESLA_T4", 4),
}

# Today's Vertex AI machines (A2, A2 ultra, G2, A3): name -> (machine type, enum, count)
MODERN_GPUS = {
    "A100_1X": ("a2-highgpu-1g", "NVIDIA_TESLA_A100", 1),
    "A100_2X": ("a2-highgpu-2g", "NVIDIA_TESLA_A100", 2),
    "A100_4X": ("a2-highgpu-4g", "NVIDIA_TESLA_A100", 4),
    "A100_8X": ("a2-highgpu-8g", "NVIDIA_TESLA_A100", 8),
    "A100_80GB_1X": ("a2-ultragpu-1g", "NVIDIA_A100_80GB", 1),
    "A100_80GB_8X": ("a2-ultragpu-8g", "NVIDIA_A100_80GB", 8),
    "L4_1X": ("g2-standard-8", "NVIDIA_L4", 1),
    "L4_8X": ("g2-standard-96", "NVIDIA_L4", 8),
    "H100_1X": ("a3-highgpu-1g", "NVIDIA_H100_80GB", 1),
    "H100_2X": ("a3-highgpu-2g", "NVIDIA_H100_80GB", 2),
    "H100_4X": ("a3-highgpu-4g", "NVIDIA_H100_80GB", 4),
    "H100_8X": ("a3-highgpu-8g", "NVIDIA_H100_80GB", 8),
    "H100_MEGA_8X": ("a3-megagpu-8g", "NVIDIA_H100_MEGA_80GB", 8),
    "H200_8X": ("a3-ultragpu-8g", "NVIDIA_H200_141GB", 8),
    "B200_8X": ("a4-highgpu-8g", "NVIDIA_B200", 8),
}
# The machine types no price was read for, on demand (tfc_jupyter.job.prices, see
# tests/test_prices.py): A3 Mega, A3 Ultra (H200), A4 (B200), and A3 High with 1, 2 or 4 GPUs
# (sold only as Spot or flex-start). Every other row has a price.
UNPRICED = {"a3-megagpu-8g", "a3-ultragpu-8g", "a4-highgpu-8g"} | {
    f"a3-highgpu-{n}g" for n in (1, 2, 4)
}

# TPU name -> (machine type, accelerator enum, count, topology)
TPUS = {
    "v2-8": ("cloud-tpu", "TPU_V2", 8, None),
    "v3-8": ("cloud-tpu", "TPU_V3", 8, None),
    "v5e-1": ("ct5lp-hightpu-1t", None, 0, "1x1"),
    "v5e-4": ("ct5lp-hightpu-4t", None, 0, "2x2"),
    "v5e-8": ("ct5lp-hightpu-8t", None, 0, "2x4"),
}


@pytest.mark.parametrize("name", sorted(TFC_RUN_NAMES))
def test_every_tfc_run_name_exists_with_its_shape(name: str) -> None:
    machine_type, vcpus, memory, accel, count = TFC_RUN_NAMES[name]
    for spelling in (name, name.lower()):
        m = lookup(spelling)
        assert (m.machine_type, m.vcpus, m.memory_gb) == (machine_type, vcpus, memory)
        assert (m.accelerator_type, m.accelerator_count, m.gpu_count) == (accel, count, count)
        assert not m.is_tpu


@pytest.mark.parametrize(
    ("name", "ended"),
    [
        ("K80_1X", "2024-05-01"),
        ("K80_4X", "2024-05-01"),
        ("K80_8X", "2024-05-01"),
        ("k80_1x", "2024-05-01"),
        ("P100_1X", "2026-09-15"),  # ran as a legacy GPU after its end of support (issue 35)
        ("P100_4X", "2026-09-15"),
        ("p100_2x", "2026-09-15"),
    ],
)
def test_tfc_runs_retired_names_are_refused_with_what_to_use(name: str, ended: str) -> None:
    """K80 and P100 reached end of support: tfc.run's names say so, with the date and the fix."""
    gpu = name[:4].upper().rstrip("_")
    with pytest.raises(SpecError) as info:
        lookup(name)
    text = str(info.value)
    assert f"{gpu} GPUs reached end of support on Google Cloud on {ended}" in text
    assert "Fix: use --gpu-type T4" in text and info.value.field == "gpu_type"
    assert "\n" not in text
    with pytest.raises(SpecError, match="end of support"):
        gpu_machine(f"nvidia-tesla-{gpu.lower()}", 1)
    with pytest.raises(SpecError, match="end of support"):
        gpu_machine(gpu, 1, "n1-highmem-8")


def test_legacy_gpus_run_when_named_and_are_not_offered() -> None:
    assert lookup("P4_1X").accelerator_type == "NVIDIA_TESLA_P4"
    assert gpu_machine("P4", 2).accelerator_count == 2
    listed = {m.accelerator_type for m in catalog.catalog_rows()}
    assert not {"NVIDIA_TESLA_P4", "NVIDIA_TESLA_P100", "NVIDIA_TESLA_K80"} & listed
    with_legacy = {m.accelerator_type for m in catalog.catalog_rows(legacy=True)}
    assert "NVIDIA_TESLA_P4" in with_legacy and "NVIDIA_TESLA_P100" not in with_legacy
    assert catalog.OFFERED_GPU_TYPES == (
        "V100", "T4", "A100", "A100_80GB", "L4", "H100", "H100_MEGA", "H200", "B200",
        "RTX_PRO_6000",
    )  # fmt: skip
    # An impossible count suggests only GPUs that are offered.
    with pytest.raises(SpecError) as info:
        gpu_machine("T4", 8)
    assert "K80" not in str(info.value) and "P4" not in str(info.value)


def test_tfc_run_tpu_name_is_a_v3_8_host() -> None:
    m = lookup("TPU")
    assert m.name == "TPU"
    assert (m.machine_type, m.accelerator_type, m.accelerator_count) == ("cloud-tpu", "TPU_V3", 8)
    assert m.is_tpu and m.gpu_count == 0 and m.tpu_chips == 8


@pytest.mark.parametrize("name", sorted(MODERN_GPUS))
def test_modern_gpu_machines(name: str) -> None:
    machine_type, accel, count = MODERN_GPUS[name]
    m = lookup(name)
    assert (m.machine_type, m.accelerator_type, m.accelerator_count) == (machine_type, accel, count)
    assert m.gpu_count == count
    # the raw machine type names the same machine, its GPUs built in
    raw = lookup(machine_type)
    assert (raw.accelerator_type, raw.accelerator_count) == (accel, count)


@pytest.mark.parametrize("tpu", sorted(TPUS))
def test_tpu_hosts(tpu: str) -> None:
    machine_type, accel, count, topology = TPUS[tpu]
    m = tpu_machine(tpu)
    assert (m.machine_type, m.accelerator_type, m.accelerator_count) == (machine_type, accel, count)
    assert m.tpu_topology == topology
    assert m.is_tpu and m.gpu_count == 0
    if topology:
        a, b = map(int, topology.split("x"))
        assert m.tpu_chips == a * b == int(tpu.rsplit("-", 1)[1])
    # the preset name and other spellings reach the same host
    assert lookup(m.name) == m
    assert lookup("tpu-" + tpu) == m
    assert tpu_machine(tpu.upper().replace("-", "_")) == m


def test_v5litepod_and_topology_spellings_are_v5e() -> None:
    assert tpu_machine("v5litepod-4") == tpu_machine("v5e-4")
    assert tpu_machine("v5e-2x2") == tpu_machine("v5e-4")
    assert tpu_machine("v5e-2x4") == tpu_machine("v5e-8") == lookup("TPU_V5E_2X4")
    assert tpu_machine("v5e-1x1") == tpu_machine("v5e-1")


@pytest.mark.parametrize(
    ("tpu", "words", "fix"),
    [
        ("v6e-8", "TensorFlow has no v6e build", "--tpu v5e-8"),
        ("v5p-8", "not v5p", "--tpu v5e-8"),
        ("v4-8", "not v4", "--tpu v5e-8"),
        ("v5e-16", "several TPU hosts", "--tpu v5e-8"),
        ("v5e-4x4", "several TPU hosts", "--tpu v5e-8"),
        ("v5litepod-32", "several TPU hosts", "--tpu v5e-8"),
        ("v3-32", "several TPU hosts", "--tpu v3-8"),
        ("v2-512", "several TPU hosts", "--tpu v2-8"),
        ("v5e-3", "unknown TPU type", "v5e-2x2"),
        ("v9", "unknown TPU type", "v5e-8"),
    ],
)
def test_tpus_vertex_does_not_offer_here_say_why(tpu: str, words: str, fix: str) -> None:
    with pytest.raises(SpecError) as info:
        tpu_machine(tpu)
    text = str(info.value)
    assert words in text and fix in text.split("Fix:", 1)[1] and info.value.field == "tpu", text


def test_every_accelerator_is_a_vertex_enum() -> None:
    from google.cloud.aiplatform_v1.types import AcceleratorType

    for m in catalog.catalog_rows():
        if m.accelerator_type:
            assert m.accelerator_type in AcceleratorType.__members__, m


def test_every_row_knows_its_size_and_a_price_or_says_it_has_none() -> None:
    for m in catalog.catalog_rows():
        assert m.machine_type in catalog.MACHINE_TYPES
        assert m.vcpus > 0 and m.memory_gb > 0, m
        if m.machine_type in UNPRICED:
            assert m.price_per_hour is None, m
        else:
            assert m.price_per_hour is not None and m.price_per_hour > 0, m
        assert m.describe().startswith(m.machine_type)
    assert catalog.price_text(None) == "price not listed"
    assert catalog.price_text(12.5) == "$12.50/h"
    # a sum is unknown as soon as a counted part is, and a part counted 0 times does not count
    assert catalog.total_price((1.0, 1), (None, 2)) is None
    assert catalog.total_price((1.0, 1), (None, 0)) == 1.0
    assert catalog.total_price((1.5, 2), (0.25, 4)) == 4.0


@pytest.mark.parametrize(
    ("spelling", "short"),
    [
        ("nvidia-h100-mega-80gb", "H100_MEGA"),
        ("NVIDIA_H100_MEGA_80GB", "H100_MEGA"),
        ("h100-mega", "H100_MEGA"),
        ("nvidia-h200-141gb", "H200"),
        ("H200", "H200"),
        ("NVIDIA_B200", "B200"),
        ("nvidia-h100-80gb", "H100"),
    ],
)
def test_new_gpu_spellings(spelling: str, short: str) -> None:
    """Compute Engine's names (nvidia-h200-141gb) and Vertex AI's enums both reach the GPU."""
    assert normalize_gpu_type(spelling) == short


@pytest.mark.parametrize("name", ["GB200_4X", "a4x-highgpu-4g", "gb200"])
def test_gb200_on_arm_is_refused_with_what_to_use(name: str) -> None:
    with pytest.raises(SpecError) as info:
        lookup(name) if name != "gb200" else gpu_machine(name, 4)
    text = str(info.value)
    assert "ARM" in text and "Fix: use --gpu-type B200" in text and "\n" not in text


def test_legacy_gpus_carry_their_dates() -> None:
    note = catalog.legacy_note(lookup("P4_1X"))
    assert note is not None
    assert "2016 Pascal GPU" in note and "since 2018" in note
    assert f"no end-of-support date announced as of {catalog.LEGACY_CHECKED}" in note
    assert (
        catalog.legacy_note(lookup("T4_1X")) is None and catalog.legacy_note(lookup("CPU")) is None
    )


@pytest.mark.parametrize(
    ("name", "scheduling", "reservation", "words"),
    [
        ("H100_1X", "standard", None, "only as Spot or flex-start"),
        ("H100_4X", "standard", None, "only as Spot or flex-start"),
        ("H200_8X", "standard", None, "recommends reserved capacity"),
        ("B200_8X", "standard", None, "recommends reserved capacity"),
        ("H100_1X", "spot", None, None),
        ("H200_8X", "flex_start", None, None),
        ("B200_8X", "standard", "any", None),
        ("H100_8X", "standard", None, None),
        ("T4_1X", "standard", None, None),
    ],
)
def test_capacity_notes(name: str, scheduling: str, reservation: str | None, words: str) -> None:
    note = catalog.capacity_note(lookup(name), scheduling=scheduling, reservation=reservation)
    assert (note is None) if words is None else (note is not None and words in note), note


def test_price_counts_the_gpus() -> None:
    # a3-highgpu-8g: 208 vCPUs and 1,872 GB at the A3 rows, and 8 x the H100 row
    h100 = lookup("H100_8X")
    core, ram = prices.FAMILIES["a3-highgpu"]
    gpu = prices.ACCELERATORS["NVIDIA_H100_80GB"]
    assert core.standard and ram.standard and gpu.standard
    assert h100.price_per_hour == pytest.approx(
        208 * core.standard + 1872 * ram.standard + 8 * gpu.standard, abs=1e-5
    )
    assert 0 < (lookup("CPU").price_per_hour or 0) < (h100.price_per_hour or 0)


@pytest.mark.parametrize(
    ("gpu", "count", "allowed"),
    [
        ("T4", 8, "1, 2, 4"),
        ("H200", 4, "8"),
        ("T4", 3, "1, 2, 4"),
        ("V100", 3, "1, 2, 4, 8"),
        ("H100", 3, "1, 2, 4, 8"),
    ],
)
def test_impossible_gpu_counts_name_the_allowed_ones(gpu: str, count: int, allowed: str) -> None:
    with pytest.raises(SpecError) as info:
        gpu_machine(gpu, count)
    text = str(info.value)
    assert f"{count} x {gpu}" in text
    assert allowed in text
    assert "Fix:" in text and "\n" not in text
    assert info.value.field == "gpus"
    # the error does not blame a machine type the user never named
    assert " on " not in info.value.message


def test_impossible_count_as_a_preset_name_says_why() -> None:
    with pytest.raises(SpecError) as info:
        lookup("T4_8X")
    assert "1, 2, 4" in str(info.value)


def test_gpu_counts_between_the_presets_are_machines() -> None:
    m = lookup("V100_2X")
    assert (m.machine_type, m.accelerator_count) == ("n1-standard-16", 2)


def test_gpu_on_a_machine_type_of_another_family() -> None:
    with pytest.raises(SpecError) as info:
        gpu_machine("T4", 1, "e2-standard-4")
    assert "e2-standard-4" in str(info.value)
    with pytest.raises(SpecError, match="comes with 1 x A100"):
        gpu_machine("A100", 2, "a2-highgpu-1g")
    explicit = gpu_machine("T4", 1, "n1-standard-16")
    assert explicit.machine_type == "n1-standard-16" and explicit.accelerator_count == 1


@pytest.mark.parametrize(
    ("typo", "suggestion"),
    [("T4_1", "T4_1X"), ("V10_4X", "V100_4X"), ("n1-standrd-8", "n1-standard-8"), ("CPUU", "CPU")],
)
def test_unknown_names_suggest_the_closest(typo: str, suggestion: str) -> None:
    with pytest.raises(SpecError) as info:
        lookup(typo)
    assert f"did you mean {suggestion}?" in str(info.value)
    assert info.value.field == "machine"


def test_unknown_name_without_a_close_match_still_names_the_fix() -> None:
    with pytest.raises(SpecError) as info:
        lookup("quantum-computer-9000")
    assert "did you mean" not in str(info.value)
    assert "%tfc_machines" in str(info.value)


def test_tpu_host_types_are_asked_for_with_tpu() -> None:
    for raw in ("cloud-tpu", "ct5lp-hightpu-4t"):
        with pytest.raises(SpecError, match="--tpu"):
            lookup(raw)
    with pytest.raises(SpecError, match="v2-8, v3-8"):
        tpu_machine("v7-8")


@pytest.mark.parametrize(
    ("text", "short"),
    [
        ("t4", "T4"),
        ("nvidia-tesla-t4", "T4"),
        ("NVIDIA_TESLA_V100", "V100"),
        ("a100-80gb", "A100_80GB"),
        ("NVIDIA_A100_80GB", "A100_80GB"),
        ("nvidia_h100_80gb", "H100"),
        ("l4", "L4"),
    ],
)
def test_gpu_type_spellings(text: str, short: str) -> None:
    assert normalize_gpu_type(text) == short


def test_unknown_gpu_type_suggests() -> None:
    with pytest.raises(SpecError, match="did you mean V100"):
        normalize_gpu_type("V1000")


def test_machine_dict_round_trip() -> None:
    for m in catalog.catalog_rows():
        assert Machine.from_dict(m.to_dict()) == m
