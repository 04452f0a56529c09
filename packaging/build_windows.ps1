# Builds ShopFleet for Windows from packaging\shopfleet.spec: dist\shopfleet\ with
# shopfleet.exe (the console, no terminal window) and shopfleet-cli.exe (same program with a
# console: shopfleet-cli --self-test, doctor, worker), optionally signed.
#
#   powershell -ExecutionPolicy Bypass -File packaging\build_windows.ps1
#
# Optional, from the environment (never from a file in the repository):
#   SHOPFLEET_SIGN_CERT       path to a .pfx code-signing certificate      } sign with
#   SHOPFLEET_SIGN_PASSWORD   its password                                  } signtool
#   SHOPFLEET_SIGN_THUMBPRINT instead of a .pfx: a certificate in the Windows store (or an
#                             EV token) by SHA-1 thumbprint
#   SHOPFLEET_TIMESTAMP_URL   RFC 3161 timestamp server (default http://timestamp.digicert.com)
#   PY                        the Python to build with (default .venv\Scripts\python.exe)
#   SELFTEST=0                skip running the self-test after the build
$ErrorActionPreference = "Stop"
Set-Location (Join-Path $PSScriptRoot "..")

$py = if ($env:PY) { $env:PY } else { ".venv\Scripts\python.exe" }
if (-not (Test-Path $py)) {
    throw "no Python at $py: py -3.12 -m venv .venv; .venv\Scripts\pip install -e .[desktop]"
}
& $py -c "import PyInstaller" 2>$null
if ($LASTEXITCODE -ne 0) { & $py -m pip install -q "pyinstaller>=6.6" }

& $py -m PyInstaller --noconfirm --clean --distpath dist --workpath build\pyinstaller `
    packaging\shopfleet.spec
if ($LASTEXITCODE -ne 0) { throw "PyInstaller failed" }
& $py packaging\check_bundle.py dist\shopfleet
if ($LASTEXITCODE -ne 0) { throw "the bundle check failed" }

$exes = @("dist\shopfleet\shopfleet.exe", "dist\shopfleet\shopfleet-cli.exe")
$ts = if ($env:SHOPFLEET_TIMESTAMP_URL) { $env:SHOPFLEET_TIMESTAMP_URL } else { "http://timestamp.digicert.com" }
if ($env:SHOPFLEET_SIGN_CERT -or $env:SHOPFLEET_SIGN_THUMBPRINT) {
    $signtool = (Get-Command signtool.exe -ErrorAction SilentlyContinue).Source
    if (-not $signtool) {
        $signtool = Get-ChildItem "${env:ProgramFiles(x86)}\Windows Kits\10\bin\*\x64\signtool.exe" |
            Sort-Object FullName -Descending | Select-Object -First 1 -ExpandProperty FullName
    }
    if (-not $signtool) { throw "signtool.exe not found: install the Windows SDK" }
    # Sign the two executables and Playwright's node.exe (it is what antivirus looks at most).
    $targets = $exes + @("dist\shopfleet\_internal\playwright\driver\node.exe")
    if ($env:SHOPFLEET_SIGN_CERT) {
        $who = @("/f", $env:SHOPFLEET_SIGN_CERT, "/p", $env:SHOPFLEET_SIGN_PASSWORD)
    } else {
        $who = @("/sha1", $env:SHOPFLEET_SIGN_THUMBPRINT)
    }
    & $signtool sign /fd SHA256 /tr $ts /td SHA256 @who @targets
    if ($LASTEXITCODE -ne 0) { throw "signtool failed" }
    & $signtool verify /pa @exes
    if ($LASTEXITCODE -ne 0) { throw "signature verification failed" }
} else {
    Write-Host "not signing (set SHOPFLEET_SIGN_CERT or SHOPFLEET_SIGN_THUMBPRINT); SmartScreen will warn users"
}

if ($env:SELFTEST -ne "0") {
    & dist\shopfleet\shopfleet-cli.exe --self-test
    if ($LASTEXITCODE -ne 0) { throw "the self-test failed (is Chrome or Edge installed?)" }
}
$size = (Get-ChildItem dist\shopfleet -Recurse | Measure-Object Length -Sum).Sum / 1MB
Write-Host ("built dist\shopfleet ({0:N0} MB)" -f $size)
