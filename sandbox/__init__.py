"""Sandboxes for code-executing environments (installed as ``agentgym.sandbox``).

The Sandbox protocol and its docker and bubblewrap backends arrive with the software-engineering
environment; nothing in the core depends on this package.
"""
