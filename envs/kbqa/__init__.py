"""Placeholder until the env lands: see its issue."""
