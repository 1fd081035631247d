#!/bin/bash
test -f /app/main.js && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
