"""Scenarios, runs and analyses (filled in by the run API)."""

__all__ = []
