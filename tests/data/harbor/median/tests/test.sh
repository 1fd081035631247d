#!/bin/bash
cd /app
python3 -m pytest -rA -p no:cacheprovider /tests/test_median.py > "$REPORT" 2>&1
status=$?
passed=$(grep -c PASSED "$REPORT" || true)
if [ "$status" -eq 0 ]; then reward=1; else reward=0; fi
printf '{"reward": %s, "passed": %s}\n' "$reward" "$passed" > /logs/verifier/reward.json
