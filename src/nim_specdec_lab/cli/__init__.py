"""The lab's subcommands, registered by the launcher's CLI when this package is installed."""
