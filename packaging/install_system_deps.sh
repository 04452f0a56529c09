#!/usr/bin/env sh
# Installs the system packages the tests need: Debian's chromium (Playwright's own browser
# download does not work everywhere), xvfb for screenshot tests, redis-server for scale-out tests.
# Only acts as root on Debian/Ubuntu; elsewhere it prints what to install.
need=""
command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || need="$need chromium"
command -v xvfb-run >/dev/null 2>&1 || need="$need xvfb"
command -v redis-server >/dev/null 2>&1 || need="$need redis-server"
# imagemagick's `import` takes a screenshot of the Xvfb screen (`convert` alone may be another tool)
command -v import >/dev/null 2>&1 || need="$need imagemagick"
# Qt's xcb platform plugin (the console under Xvfb or a real X display) needs these, and a CJK
# font so the Chinese console draws characters instead of boxes on a bare Debian.
if command -v dpkg-query >/dev/null 2>&1; then
  for lib in libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-render-util0 \
             libxcb-xkb1 libxkbcommon-x11-0 libxcb-shape0 libegl1 libgl1 libfontconfig1 \
             fonts-wqy-microhei; do
    dpkg-query -W -f='${Status}' "$lib" 2>/dev/null | grep -q "ok installed" || need="$need $lib"
  done
fi
[ -z "$need" ] && exit 0
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing system packages:$need"
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null
else
  echo "NOTE: please install:$need (e.g. 'sudo apt-get install$need'); on Windows/macOS ShopFleet uses the installed Chrome or Edge." >&2
fi
