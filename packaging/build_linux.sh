#!/usr/bin/env sh
# Builds the Linux one-folder app dist/shopfleet/ from packaging/shopfleet.spec.
#
#   sh packaging/build_linux.sh            # build, or reuse dist/shopfleet if nothing changed
#   FORCE=1 sh packaging/build_linux.sh    # always rebuild (CLEAN=1 also drops PyInstaller's cache)
#   PY=/path/to/python sh packaging/build_linux.sh
#
# "Nothing changed" means the same fingerprint of the spec, the entry script, core/, desktop/,
# resources/, pyproject.toml and the installed packages (build/shopfleet.fingerprint).
# Run the result: dist/shopfleet/shopfleet (console), dist/shopfleet/shopfleet --self-test.
set -eu
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
if [ ! -x "$PY" ]; then
  echo "no Python at $PY: run 'make setup' first (or set PY=...)" >&2
  exit 1
fi
if ! "$PY" -c 'import PyInstaller' >/dev/null 2>&1; then
  echo "installing PyInstaller into $(dirname "$(dirname "$PY")")"
  "$PY" -m pip install -q "pyinstaller>=6.6"
fi
mkdir -p build
fp_file=build/shopfleet.fingerprint
fp=$("$PY" packaging/fingerprint.py)
if [ "${FORCE:-0}" != "1" ] && [ -x dist/shopfleet/shopfleet ] && [ -f "$fp_file" ] \
   && [ "$(cat "$fp_file")" = "$fp" ]; then
  echo "dist/shopfleet is up to date (FORCE=1 to rebuild)"
  exit 0
fi
rm -f "$fp_file"
clean=""
[ "${CLEAN:-0}" = "1" ] && clean="--clean"
start=$(date +%s)
"$PY" -m PyInstaller --noconfirm $clean --log-level "${LOG_LEVEL:-WARN}" \
  --distpath dist --workpath build/pyinstaller packaging/shopfleet.spec
# The bundle must carry the Playwright driver but no browser and no test tools.
"$PY" packaging/check_bundle.py dist/shopfleet
echo "$fp" > "$fp_file"
echo "built dist/shopfleet in $(( $(date +%s) - start ))s ($(du -sh dist/shopfleet | cut -f1))"
