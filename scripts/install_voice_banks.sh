#!/usr/bin/env bash
# Install every voice bank of lalm-fairness-suite that installs offline from Debian (issue 61, item 2):
# espeak-ng, flite, RHVoice (rhvoice), Festival and its English voices (festival), SVOX Pico (pico) and MBROLA with
# the databases of espeak-ng's English and foreign-accented English mb-* voices (mbrola).
#
#   scripts/install_voice_banks.sh            enable contrib + non-free, install what is missing (root or sudo)
#   scripts/install_voice_banks.sh --check    install nothing: exit 0 when every package is installed, else 1
#   scripts/install_voice_banks.sh --start    the same install in the background (log, pid and exit status in
#                                             .voice-banks.{log,pid,status} at the repository root); returns at once
#   scripts/install_voice_banks.sh --wait     waits for that install; its exit status (.ci/run starts it beside
#                                             pip, and the suite's tests wait for it before their first clip)
#
# Idempotent: the apt source is written only when its content differs, apt-get update and install run only when a
# package is missing, so a second run changes nothing and takes about a second. Debian (bookworm and later) only:
# another system exits 4 with one ERROR: line. Exit 0 done, 1 (--check) packages missing, 4 setup error.
set -euo pipefail

SOURCES=/etc/apt/sources.list.d/lalm-fairness-voices.sources
MBROLA_DATABASES="af1 de1 de2 de3 de4 de5 de6 en1 fr1 fr4 gr2 hu1 nl2 pl1 ro1 sw1 sw2 us1 us2 us3"
PACKAGES="espeak-ng flite rhvoice rhvoice-english festival festvox-rablpc16k festvox-don festvox-us-slt-hts
libttspico-utils mbrola $(for db in $MBROLA_DATABASES; do printf 'mbrola-%s ' "$db"; done)"

licence_notice() {
  cat <<'EOF'
Voice bank licences (read them before you publish clips or results made with these voices):
  NON-FREE (Debian non-free: usable, not free software):
    rhvoice, rhvoice-english  RHVoice; voices alan, bdl, clb, slt: LGPL-2.1+ data
    libttspico-utils/-data    SVOX Pico: Apache-2.0, lingware shipped without its sources
    mbrola-<db>               every MBROLA database (us1-us3, en1, de1-de6, fr1, fr4, af1, gr2, hu1, nl2, pl1, ro1,
                              sw1, sw2): with the MBROLA program only, NON-COMMERCIAL and non-military use; may not be
                              sold or be part of a product that is sold
  NON-COMMERCIAL:
    rhvoice evgeniy-eng, lyubov   CC-BY-NC-ND-4.0 (no commercial use, no derivatives)
    mbrola-* databases            as above
  CONTRIB (free, depends on non-free): mbrola (AGPL-3+), festvox-rablpc16k and festvox-don (University of Edinburgh
    free licence, notice kept)
  FREE (main): espeak-ng (GPL-3+), flite (BSD-style), festival, festvox-us-slt-hts (EST-2003, BSD-3-clause)
Each package's terms: /usr/share/doc/<package>/copyright.
EOF
}

fail() {
  echo "ERROR: install_voice_banks.sh: $*" >&2
  exit 4
}

missing_packages() {
  local package missing=""
  for package in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
      missing="$missing $package"
    fi
  done
  echo "${missing# }"
}

BACKGROUND="$(cd "$(dirname "$0")/.." && pwd)/.voice-banks"
# shellcheck source=scripts/lib/background.sh
. "$(dirname "$0")/lib/background.sh"
[ "${1:-}" = "--start" ] && { background_start "$BACKGROUND" "the background voice-bank install" bash "$0"; exit 0; }
[ "${1:-}" = "--wait" ] && background_wait "$BACKGROUND" "the background voice-bank install" 1
command -v dpkg-query >/dev/null || fail "no dpkg-query: this script installs Debian packages"
missing=$(missing_packages)

if [ "${1:-}" = "--check" ]; then
  if [ -n "$missing" ]; then
    echo "install_voice_banks.sh: missing: $missing"
    exit 1
  fi
  echo "install_voice_banks.sh: every voice bank package is installed"
  exit 0
fi
[ $# -eq 0 ] || fail "unknown argument '$1' (give none, --check, --start or --wait)"

licence_notice
if [ -z "$missing" ]; then
  echo "install_voice_banks.sh: every voice bank package is installed; nothing to do"
  exit 0
fi

. /etc/os-release
[ "${ID:-}" = "debian" ] && [ -n "${VERSION_CODENAME:-}" ] ||
  fail "${PRETTY_NAME:-this system} is not Debian: enable your distribution's contrib/non-free (Ubuntu: multiverse) archive and apt-get install $missing"
if [ "$(id -u)" -eq 0 ]; then
  SUDO=""
elif command -v sudo >/dev/null; then
  SUDO="sudo"
else
  fail "run as root (or install sudo): apt-get must install $missing"
fi

wanted="# Added by lalm-fairness's scripts/install_voice_banks.sh: the voice banks' contrib and non-free packages.
Types: deb
URIs: http://deb.debian.org/debian
Suites: $VERSION_CODENAME $VERSION_CODENAME-updates
Components: contrib non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
if [ "$(cat "$SOURCES" 2>/dev/null)" != "$wanted" ]; then
  echo "install_voice_banks.sh: enabling contrib and non-free in $SOURCES"
  printf '%s\n' "$wanted" | $SUDO tee "$SOURCES" >/dev/null
fi
echo "install_voice_banks.sh: installing $missing"
$SUDO apt-get update -qq
# shellcheck disable=SC2086 # the package list is split on purpose
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
left=$(missing_packages)
[ -z "$left" ] || fail "apt-get left these packages uninstalled: $left"
echo "install_voice_banks.sh: every voice bank package is installed"
