"""Child processes: dying with the parent, killed as a group, and an engine death told in one line. Imports only
errors."""
