"""The job step: its options, specification and machine catalog, the strategy decision, the
plan, and the Vertex AI request it stands for."""
