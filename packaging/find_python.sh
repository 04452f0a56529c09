#!/usr/bin/env sh
# Prints the path of a Python 3.12+ interpreter, or explains why there is none and exits 1.
# Order: $PYTHON, python3.12/3.13/3.14/python3 on PATH, then pyenv's versions (3.12 first: the most tested).
ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; }
for cand in "${PYTHON:-}" python3.12 python3.13 python3.14 python3; do
  [ -n "$cand" ] || continue
  p=$(command -v "$cand" 2>/dev/null) || continue
  if ok "$p"; then echo "$p"; exit 0; fi
done
root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
for p in $(ls -d "$root"/versions/3.1[2-9]*/bin/python3 2>/dev/null | sort -V); do
  if ok "$p"; then echo "$p"; exit 0; fi
done
echo "ShopFleet needs Python 3.12 or newer, and none was found (looked at \$PYTHON, python3.1x on PATH and pyenv)." >&2
echo "Install Python 3.12+ (python.org, your package manager, or 'pyenv install 3.12') or set PYTHON=/path/to/python3.12." >&2
exit 1
