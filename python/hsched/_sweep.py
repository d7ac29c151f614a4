"""Sweeps on any executor (filled in by the sweep API)."""

__all__ = []
