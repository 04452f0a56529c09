#!/usr/bin/env sh
# Builds ShopFleet for macOS from packaging/shopfleet.spec: dist/ShopFleet.app (and the
# one-folder dist/shopfleet/), optionally signed, notarized and packed into a .dmg.
#
#   sh packaging/build_macos.sh
#
# Optional, from the environment (never from a file in the repository):
#   SHOPFLEET_CODESIGN_IDENTITY  "Developer ID Application: Your Company (TEAMID)" -> sign
#   SHOPFLEET_ENTITLEMENTS       entitlements plist (default: packaging/macos/entitlements.plist)
#   SHOPFLEET_NOTARY_PROFILE     a notarytool keychain profile (xcrun notarytool
#                                store-credentials ...) -> notarize and staple the .dmg
#   SHOPFLEET_DMG=1              make dist/ShopFleet-<version>.dmg (implied by notarizing)
#   PY                           the Python to build with (default .venv/bin/python)
set -eu
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
if [ ! -x "$PY" ]; then
  echo "no Python at $PY: create the venv first (make setup, or python3.12 -m venv .venv &&" \
       ".venv/bin/pip install -e '.[desktop]')" >&2
  exit 1
fi
"$PY" -c 'import PyInstaller' >/dev/null 2>&1 || "$PY" -m pip install -q "pyinstaller>=6.6"
VERSION=$("$PY" -c 'import core; print(core.__version__)')
export SHOPFLEET_ENTITLEMENTS="${SHOPFLEET_ENTITLEMENTS:-packaging/macos/entitlements.plist}"

"$PY" -m PyInstaller --noconfirm --clean --distpath dist --workpath build/pyinstaller \
  packaging/shopfleet.spec
"$PY" packaging/check_bundle.py dist/shopfleet
APP=dist/ShopFleet.app

if [ -n "${SHOPFLEET_CODESIGN_IDENTITY:-}" ]; then
  echo "signing $APP as $SHOPFLEET_CODESIGN_IDENTITY"
  # Playwright's node binary is an executable inside the bundle: sign it with the hardened
  # runtime and the JIT entitlement it needs, then the app around it (inside-out).
  find "$APP/Contents" -type f \( -name "node" -o -name "*.dylib" -o -name "*.so" \) \
    -exec codesign --force --timestamp --options runtime \
         --entitlements "$SHOPFLEET_ENTITLEMENTS" --sign "$SHOPFLEET_CODESIGN_IDENTITY" {} +
  codesign --force --deep --timestamp --options runtime \
    --entitlements "$SHOPFLEET_ENTITLEMENTS" --sign "$SHOPFLEET_CODESIGN_IDENTITY" "$APP"
  codesign --verify --deep --strict --verbose=2 "$APP"
else
  echo "not signing (set SHOPFLEET_CODESIGN_IDENTITY to sign); Gatekeeper will warn users"
fi

if [ -n "${SHOPFLEET_NOTARY_PROFILE:-}" ] || [ "${SHOPFLEET_DMG:-0}" = "1" ]; then
  DMG="dist/ShopFleet-$VERSION.dmg"
  rm -f "$DMG"
  hdiutil create -volname ShopFleet -srcfolder "$APP" -ov -format UDZO "$DMG"
  if [ -n "${SHOPFLEET_CODESIGN_IDENTITY:-}" ]; then
    codesign --force --timestamp --sign "$SHOPFLEET_CODESIGN_IDENTITY" "$DMG"
  fi
  if [ -n "${SHOPFLEET_NOTARY_PROFILE:-}" ]; then
    [ -n "${SHOPFLEET_CODESIGN_IDENTITY:-}" ] || { echo "notarizing needs a signed app" >&2; exit 1; }
    xcrun notarytool submit "$DMG" --keychain-profile "$SHOPFLEET_NOTARY_PROFILE" --wait
    xcrun stapler staple "$DMG"
    xcrun stapler validate "$DMG"
  fi
  echo "made $DMG"
fi
# The same check CI runs on Linux: one demo task in the installed Chrome/Edge.
if [ "${SELFTEST:-1}" = "1" ]; then
  "$APP/Contents/MacOS/shopfleet" --self-test || {
    echo "the self-test failed (is Google Chrome or Microsoft Edge installed?)" >&2; exit 1; }
fi
echo "built $APP ($(du -sh "$APP" | cut -f1))"
