"""tfc_jupyter."""
