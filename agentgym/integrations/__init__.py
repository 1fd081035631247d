"""Thin adapters to other agent stacks, one module per library, each importing its library lazily
behind its extra, so a base install imports none of them (README, "Other stacks")."""
