"""Policies written in Python (filled in by the policy API)."""

__all__ = []
