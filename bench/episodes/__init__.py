"""pi-Bench episodes: task files on disk, the bundled episode set."""
