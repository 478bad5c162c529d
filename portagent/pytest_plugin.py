"""pytest plugin entry point (suite replay items arrive with the evals work)."""
