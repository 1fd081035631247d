"""Built-in task suites as data: ``<env>/<split>.jsonl`` plus a manifest per env (package data)."""
