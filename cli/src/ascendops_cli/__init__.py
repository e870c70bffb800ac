"""ascendops: commands that drive the collection's playbooks through ansible-runner."""

__version__ = "0.1.0"
