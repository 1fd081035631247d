#!/bin/bash
cd /app && tsc main.ts
