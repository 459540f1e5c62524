#!/usr/bin/env bash
# Debian's Chromium for the browser test (tests/browser), installed when /usr/bin/chromium is
# missing; a no-op when it is there. The test drives this browser through Playwright and never
# downloads a browser of its own. Runs apt-get as root, or through sudo otherwise.
#
# usage: tools/ensure_chromium.sh
set -euo pipefail
chromium=/usr/bin/chromium
[[ -x $chromium ]] && exit 0

if [[ $(id -u) -eq 0 ]]; then sudo=(); elif command -v sudo >/dev/null; then sudo=(sudo); else
    echo "browser test: $chromium is missing and this user cannot install it (not root, no sudo): run 'apt-get install chromium' as root" >&2
    exit 1
fi
echo "browser test: installing Debian's chromium (apt-get)"
if ! { "${sudo[@]}" apt-get update -qq &&
       "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } ||
   [[ ! -x $chromium ]]; then
    echo "browser test: could not install Debian's chromium at $chromium; install it by hand ('apt-get install chromium') and run make test again" >&2
    exit 1
fi
