#!/bin/bash
cp "$FIXED" /app/stats.py
