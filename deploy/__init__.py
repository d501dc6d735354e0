"""The command line, process launchers and service configurations."""
