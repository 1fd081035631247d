"""Oversight games (docstring written below)."""
