#!/bin/bash
# Runs from the working directory (/app) and writes the reward.
if python3 -m pytest -rA -p no:cacheprovider /tests/test_outputs.py; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
