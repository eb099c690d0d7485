"""tfc_runtime."""
