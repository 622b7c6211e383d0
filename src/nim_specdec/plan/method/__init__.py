"""The speculative method and its config, decided from the target (its config.json, its built-in entry), the
speculative_config layers and the release's snapshot: which model is served and how, which method runs and why,
the config checked against that release's schema and cross-field rules, and the draft it names."""
