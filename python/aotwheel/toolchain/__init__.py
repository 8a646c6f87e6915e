"""Finding the external tools aotwheel drives, and asking them what they can do."""
