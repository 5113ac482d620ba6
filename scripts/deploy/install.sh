#!/usr/bin/env bash
# Installs lobbyd as a systemd service on this machine (Debian or any systemd distribution):
#   sudo scripts/deploy/install.sh            # build release, install, enable and start
#
# It builds `target/release/lobbyd` (unless LOBBYD_BIN names an existing binary), installs it to
# /usr/local/bin, the unit to /etc/systemd/system/lobbyd.service (and the template of a
# group of nodes, lobbyd@.service), the flags file to
# /etc/default/lobbyd (kept if it exists: it is yours to edit) and the README to
# /usr/local/share/doc/lobbyd, checks the unit with systemd-analyze when that is available,
# then enables and (re)starts the service.
#
# Environment (all optional):
#   DESTDIR=DIR      install under DIR instead of / (packaging; implies NO_START=1)
#   LOBBYD_BIN=PATH  install this binary instead of building one
#   NO_START=1       install files only; do not touch systemctl
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
destdir="${DESTDIR:-}"
no_start="${NO_START:-}"
if [ -n "$destdir" ]; then no_start=1; fi

if [ -z "$destdir" ] && [ "$(id -u)" -ne 0 ]; then
  echo "install.sh: run as root (sudo), or set DESTDIR to stage the files" >&2
  exit 1
fi

bin="${LOBBYD_BIN:-}"
if [ -z "$bin" ]; then
  echo "building lobbyd (release)..." >&2
  (cd "$repo" && cargo build --release --bin lobbyd --quiet)
  bin="$repo/target/release/lobbyd"
fi
if [ ! -x "$bin" ]; then
  echo "install.sh: $bin is not an executable" >&2
  exit 1
fi
# Refuse a binary that cannot even print its version (wrong architecture, truncated copy).
"$bin" --version >/dev/null

install -d -m 0755 "$destdir/usr/local/bin" "$destdir/etc/systemd/system" \
  "$destdir/etc/default" "$destdir/usr/local/share/doc/lobbyd"
install -m 0755 "$bin" "$destdir/usr/local/bin/lobbyd"
# Debug line tables stay in target/ for profiling; the installed copy needs none (20 MB -> 3 MB).
strip "$destdir/usr/local/bin/lobbyd"
install -m 0644 "$here/lobbyd.service" "$destdir/etc/systemd/system/lobbyd.service"
# The unit template of a group of nodes on this machine, and an example of a node's flags
# (docs/OPERATING.md "More than one process").
install -m 0644 "$here/lobbyd@.service" "$destdir/etc/systemd/system/lobbyd@.service"
install -m 0644 "$here/lobbyd-node.example" "$destdir/usr/local/share/doc/lobbyd/lobbyd-node.example"
install -m 0644 "$repo/README.md" "$destdir/usr/local/share/doc/lobbyd/README.md"
if [ -e "$destdir/etc/default/lobbyd" ]; then
  echo "keeping the existing $destdir/etc/default/lobbyd" >&2
else
  install -m 0644 "$here/lobbyd.default" "$destdir/etc/default/lobbyd"
fi

if [ -z "$destdir" ] && command -v systemd-analyze >/dev/null 2>&1; then
  systemd-analyze verify /etc/systemd/system/lobbyd.service
fi

if [ -n "$no_start" ]; then
  echo "installed under ${destdir:-/}; not started (NO_START or DESTDIR set)" >&2
  exit 0
fi
systemctl daemon-reload
systemctl enable lobbyd.service
systemctl restart lobbyd.service
systemctl --no-pager --lines=5 status lobbyd.service || true
echo "lobbyd is running; logs: journalctl -u lobbyd -f; flags: /etc/default/lobbyd" >&2
