"""aotdemo: a minimal package whose extension carries ahead-of-time Intel GPU code."""

from aotdemo._demo import images

__all__ = ["images"]
