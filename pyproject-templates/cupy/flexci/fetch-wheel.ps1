# FlexCI (Windows): fetch the CuPy wheel that vouch's generated workflows built and signed for
# the commit under test, verify it, and install it with its `all` and `test` extras. The
# Windows twin of fetch-wheel.sh; keep the two parallel.
#
# Call it from .pfnci/windows/test.ps1 after ActivateCUDA/ActivatePython, in place of the
# gh-based download and `pip install "<wheel>[all,test]"`:
#
#   & "$PSScriptRoot\fetch-wheel.ps1" -cuda $cuda
#   & "$PSScriptRoot\fetch-wheel.ps1" -cuda $cuda -PipArgs @("-v")
#
# From the FlexCI job it takes: the pull request (FLEXCI_BRANCH=refs/pull/<N>/...; anything
# else is a push build), the commit (FLEXCI_REFERENCE_COMMIT_ID, else FLEXCI_COMMIT_ID:
# vouch's --from-flexci reads them), the CUDA major (the -cuda parameter, as test.ps1 gets it)
# and the GitHub token (env CUPY_CI_GITHUB_TOKEN: fine-grained, Actions: read and
# Attestations: read on cupy/cupy;
# written to a private file and removed from the environment before anything else runs).
# The wheel is installed by its verified sha256 with --no-deps; its requirements (base, `all`
# and `test`) follow in a second pip call from the package index, which vouch reports but
# does not verify.
Param(
    [Parameter(Mandatory = $true)][String]$cuda,
    [String]$python = "python",
    # More `vouch install` flags, and pip's (passed after `--`).
    [String[]]$VouchArgs = @(),
    [String[]]$PipArgs = @()
)

$ErrorActionPreference = "Stop"

# ---- Pinned. Change only after reviewing the new vouch commit or release. ----------------
# The vouch commit built by VOUCH_INSTALL=source; keep it equal to `[workflows.source] rev`
# in vouch.toml, so FlexCI runs the vouch that built and signed the wheel.
$VouchGitUrl = "https://github.com/vouch-build/vouch"
$VouchGitRev = "31dd652a6b4d6555dab00bba7326b18dae1f2c9e"
# VOUCH_INSTALL=pypi: the release and the sha256 of each of its wheels (win_amd64 among
# them). vouch-build has no release yet, so this route refuses to run until filled.
$VouchPypiVersion = "0.1.0"
$VouchPypiHashes = @()
# ------------------------------------------------------------------------------------------
$Repo = "cupy/cupy"
$Extras = "all,test"
# source (cargo install --locked from $VouchGitRev), pypi (pip --require-hashes into its own
# venv), or preinstalled (a reviewed vouch.exe already on PATH).
$VouchInstall = if ($Env:VOUCH_INSTALL) { $Env:VOUCH_INSTALL } else { "source" }

# The token first: into a file under this user's own %TEMP% (readable by this user and
# administrators only), then out of the environment, so no child process inherits it. It
# reaches vouch only as --token-file, which vouch deletes after reading.
if (-not $Env:CUPY_CI_GITHUB_TOKEN) {
    throw "CUPY_CI_GITHUB_TOKEN must hold the GitHub token (Actions: read and Attestations: read on $Repo)"
}
$tokenFile = New-TemporaryFile
[System.IO.File]::WriteAllText($tokenFile.FullName, $Env:CUPY_CI_GITHUB_TOKEN)
Remove-Item Env:CUPY_CI_GITHUB_TOKEN
Remove-Item Env:GH_TOKEN -ErrorAction SilentlyContinue
Remove-Item Env:GITHUB_TOKEN -ErrorAction SilentlyContinue

try {
    # The Python the wheel is for: X.Y, with `t` for a free-threaded build.
    $pyVer = (& $python -c "import sys, sysconfig; print('%d.%d%s' % (sys.version_info[0], sys.version_info[1], 't' if sysconfig.get_config_var('Py_GIL_DISABLED') else ''))").Trim()
    if ($LASTEXITCODE -ne 0) { throw "$python could not tell its version" }

    $cudaMajor = $cuda.Split(".")[0]
    if ($cudaMajor -notmatch '^[0-9]+$') { throw "CUDA major '$cudaMajor' (from -cuda '$cuda') is not a number" }

    # The pull request as CuPy's _flexci.ps1 reads it.
    if ("$Env:FLEXCI_BRANCH" -match '^refs/pull/([1-9][0-9]*)/') {
        $buildEvent = @("--event", "pull_request", "--pr", $Matches[1])
    } else {
        $buildEvent = @("--event", "push")
    }

    switch ($VouchInstall) {
        "source" {
            if (-not (Get-Command cargo -ErrorAction SilentlyContinue)) {
                throw "VOUCH_INSTALL=source needs cargo (a Rust toolchain) on PATH"
            }
            if ($VouchGitRev -notmatch '^[0-9a-f]{40}$') { throw "VouchGitRev '$VouchGitRev' is not a full commit" }
            # One directory per commit: a later job on the same machine reuses the build.
            $root = Join-Path $Env:LOCALAPPDATA "vouch-bin\$VouchGitRev"
            if (-not (Test-Path (Join-Path $root "bin\vouch.exe"))) {
                & cargo install --locked --git $VouchGitUrl --rev $VouchGitRev --root $root vouch
                if ($LASTEXITCODE -ne 0) { throw "cargo install of vouch $VouchGitRev failed" }
            }
            $Env:PATH = "$(Join-Path $root 'bin');$Env:PATH"
        }
        "pypi" {
            if ($VouchPypiHashes.Count -eq 0) {
                throw "VOUCH_INSTALL=pypi: no wheel hashes are pinned for vouch-build $VouchPypiVersion (no release yet); use VOUCH_INSTALL=source"
            }
            $venv = Join-Path $Env:TEMP "vouch-venv-$VouchPypiVersion"
            $req = Join-Path $Env:TEMP "vouch-requirements.txt"
            $line = "vouch-build==$VouchPypiVersion" + (($VouchPypiHashes | ForEach-Object { " --hash=$_" }) -join "")
            Set-Content -Path $req -Value $line
            & $python -m venv $venv
            if ($LASTEXITCODE -ne 0) { throw "creating the venv for vouch failed" }
            & (Join-Path $venv "Scripts\python.exe") -m pip install --quiet --no-deps --require-hashes -r $req
            if ($LASTEXITCODE -ne 0) { throw "pip install of vouch-build $VouchPypiVersion failed" }
            $Env:PATH = "$(Join-Path $venv 'Scripts');$Env:PATH"
        }
        "preinstalled" {
            if (-not (Get-Command vouch -ErrorAction SilentlyContinue)) {
                throw "VOUCH_INSTALL=preinstalled, but there is no vouch on PATH"
            }
        }
        default { throw "VOUCH_INSTALL='$VouchInstall': expected source, pypi or preinstalled" }
    }
    & vouch --version
    if ($LASTEXITCODE -ne 0) { throw "vouch does not run" }

    $cmd = @("install", "--from-flexci", "--repo", $Repo) + $buildEvent + @(
        "--dist", "cupy-cuda${cudaMajor}x", "--python-version", $pyVer, "--platform", "win-64",
        "--python", $python, "--extras", $Extras, "--token-file", $tokenFile.FullName,
        "--github-attestations", $Repo
    ) + $VouchArgs
    if ($PipArgs.Count -gt 0) { $cmd += @("--") + $PipArgs }
    Write-Host "+ vouch $($cmd -join ' ')"
    & vouch @cmd
    $status = $LASTEXITCODE
} finally {
    Remove-Item $tokenFile.FullName -ErrorAction SilentlyContinue
}
if ($status -ne 0) { throw "vouch install failed with exit status $status (see vouch's exit-code table)" }
