"""Thin adapters to other agent stacks, one module per library, each importing its library lazily
behind its extra (README, "Other stacks")."""
