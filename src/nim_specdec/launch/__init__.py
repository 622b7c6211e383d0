"""The imperative shell around the core: facts from the machine, resolution, workspace links, logs."""
