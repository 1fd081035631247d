#!/usr/bin/env bash
# Headless Chromium and its WebDriver for the viewer's browser test (tests/viewer/test_viewer_browser.py).
# Debian's packages, versions matched to each other; no browser download. Idempotent.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# No recommends (they add systemd, cups helpers, avahi ...); fonts-liberation is the one the
# headless browser uses to lay out text.
apt-get install -y -q --no-install-recommends chromium chromium-driver fonts-liberation
