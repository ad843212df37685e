#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Installs the OTLP receiver the export tests send to: @elastic/mockotlpserver (Apache-2.0,
# it decodes OTLP against the protocol's protobuf definitions) from the npm registry, at a
# pinned version, into a cache folder outside the repository (IOSPAN_NPM_CACHE, default
# /var/cache/iospan/npm). Idempotent and silent when it is there. Node.js and npm come
# from Debian when the machine has none.
set -euo pipefail

VERSION=0.10.0
DIR=${IOSPAN_NPM_CACHE:-/var/cache/iospan/npm}
PKG=$DIR/node_modules/@elastic/mockotlpserver/package.json

if [[ -f $PKG ]] && grep -q "\"version\": \"$VERSION\"" "$PKG"; then
	exit 0
fi
if [[ $(id -u) -ne 0 ]] && ! mkdir -p "$DIR" 2>/dev/null; then
	# Not a build dependency: the OTLP tests say they need it (a failure under CI=true).
	echo "setup-otlp-receiver: $DIR is not writable; run it as root to install the OTLP receiver the tests use" >&2
	exit 0
fi
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
	if [[ $(id -u) -ne 0 ]]; then
		echo "setup-otlp-receiver: needs node and npm; run it as root to install Debian's" >&2
		exit 0
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm
fi
mkdir -p "$DIR"
echo "setup-otlp-receiver: installing @elastic/mockotlpserver@$VERSION into $DIR"
npm install --silent --no-audit --no-fund --prefix "$DIR" "@elastic/mockotlpserver@$VERSION"
