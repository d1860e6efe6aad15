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
#
# Before vouch runs, the checkout (VOUCH_CHECKOUT, default: this script's repository root,
# with its .git) is checked against the commit the job names, and against
# VOUCH_DISPATCHED_COMMIT (the commit vouch's dispatch vouched for) when FlexCI passes it on.
# vouch itself is installed into a directory of this job's own, never reused from a cache
# another job's pull-request code could have written.
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
$VouchGitRev = "9719cfbe428cfb87765ccbf1d563f1813293c499"
# VOUCH_INSTALL=pypi: the release and the sha256 of each of its wheels (win_amd64 among
# them). vouch-build has no release yet, so this route refuses to run until filled.
$VouchPypiVersion = "0.1.0"
$VouchPypiHashes = @()
# VOUCH_INSTALL=preinstalled: the sha256 of the reviewed vouch.exe baked into the image. Empty
# trusts whatever `vouch` PATH finds; set it (here, or in the FlexCI project's environment)
# wherever a directory on PATH outlives a job.
$VouchPreinstalledSha256 = "$Env:VOUCH_PREINSTALLED_SHA256"
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

# This job's own directory: vouch is installed and run from here, nowhere another job wrote.
$jobDir = Join-Path ([System.IO.Path]::GetTempPath()) ("vouch-job-" + [System.Guid]::NewGuid().ToString("N"))
New-Item -ItemType Directory -Path $jobDir | Out-Null

try {
    # The commit under test: what the job names, and what the checkout is (the vouched head
    # for a pull request, not FlexCI's refs/pull/<N>/merge). Keep in step
    # with fetch-wheel.sh and check-checkout.sh.
    $jobCommit = if ($Env:FLEXCI_REFERENCE_COMMIT_ID) { $Env:FLEXCI_REFERENCE_COMMIT_ID } else { "$Env:FLEXCI_COMMIT_ID" }
    if ($jobCommit -cnotmatch '^[0-9a-f]{40}$') {
        throw "neither FLEXCI_REFERENCE_COMMIT_ID nor FLEXCI_COMMIT_ID names a full commit ('$jobCommit')"
    }
    $checkout = if ($Env:VOUCH_CHECKOUT) { $Env:VOUCH_CHECKOUT } else { (Resolve-Path (Join-Path $PSScriptRoot "..\..")).Path }
    # git's own complaint is not an error record to stop on: its status decides.
    $savedPreference = $ErrorActionPreference
    $ErrorActionPreference = "Continue"
    $parents = (& git -C $checkout rev-list --parents -n 1 HEAD 2>$null)
    $gitStatus = $LASTEXITCODE
    $ErrorActionPreference = $savedPreference
    if ($gitStatus -ne 0 -or -not $parents) {
        throw "$checkout is not a git checkout, so it cannot be checked against $jobCommit; keep its .git (config.pbtxt: checkout_strategy { include_dot_git: true })"
    }
    $parents = "$parents".Trim().Split(" ")
    # The checkout itself, never a parent of it: a pull request's wheel is built from the
    # vouched head, so tests from refs/pull/<N>/merge (the head merged with wherever the base
    # is now) would be another commit's. The head must be checked out first.
    $checkoutCommit = $parents[0]
    if ("$Env:FLEXCI_BRANCH" -match '^refs/pull/' -and $checkoutCommit -cne $jobCommit -and $parents.Count -eq 3 -and $parents[2] -ceq $jobCommit) {
        throw "the checkout $checkout is $checkoutCommit, a merge of the head $jobCommit into its base, but the wheel is built from the head itself: check the head out first, or the tests would be another commit's than the wheel's"
    }
    if ($checkoutCommit -cne $jobCommit) {
        throw "the checkout $checkout is at $checkoutCommit, not at the commit the job names, ${jobCommit}: the tests would not be the vouched code's"
    }
    if ($Env:VOUCH_DISPATCHED_COMMIT -and $Env:VOUCH_DISPATCHED_COMMIT -cne $jobCommit) {
        throw "the checkout is at $jobCommit, but the dispatch vouched for ${Env:VOUCH_DISPATCHED_COMMIT}: the pull request moved after it was vouched for"
    }

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

    # Every route ends with vouch.exe in $jobDir, and runs that copy: a binary anywhere a
    # job's pull-request code can write (a cache shared between jobs) could be a trojan an
    # earlier job left there, which would then "verify" anything for every later job.
    $vouchExe = Join-Path $jobDir "vouch.exe"
    switch ($VouchInstall) {
        "source" {
            if (-not (Get-Command cargo -ErrorAction SilentlyContinue)) {
                throw "VOUCH_INSTALL=source needs cargo (a Rust toolchain) on PATH"
            }
            if ($VouchGitRev -notmatch '^[0-9a-f]{40}$') { throw "VouchGitRev '$VouchGitRev' is not a full commit" }
            # Built for this job alone, with a private CARGO_HOME: cargo checks crates against
            # Cargo.lock as it downloads them, but reuses extracted sources and reads config
            # from CARGO_HOME unchecked.
            foreach ($v in @("RUSTC", "RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER", "RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_BUILD_RUSTC_WRAPPER", "CARGO_TARGET_DIR")) {
                Remove-Item "Env:$v" -ErrorAction SilentlyContinue
            }
            $savedCargoHome = $Env:CARGO_HOME
            $Env:CARGO_HOME = Join-Path $jobDir "cargo-home"
            try {
                & cargo install --locked --git $VouchGitUrl --rev $VouchGitRev --root (Join-Path $jobDir "vouch-root") --target-dir (Join-Path $jobDir "vouch-target") vouch
                if ($LASTEXITCODE -ne 0) { throw "cargo install of vouch $VouchGitRev failed" }
            } finally {
                $Env:CARGO_HOME = $savedCargoHome
            }
            Copy-Item (Join-Path $jobDir "vouch-root\bin\vouch.exe") $vouchExe
        }
        "pypi" {
            if ($VouchPypiHashes.Count -eq 0) {
                throw "VOUCH_INSTALL=pypi: no wheel hashes are pinned for vouch-build $VouchPypiVersion (no release yet); use VOUCH_INSTALL=source"
            }
            $venv = Join-Path $jobDir "vouch-venv"
            $req = Join-Path $jobDir "vouch-requirements.txt"
            $line = "vouch-build==$VouchPypiVersion" + (($VouchPypiHashes | ForEach-Object { " --hash=$_" }) -join "")
            Set-Content -Path $req -Value $line
            & $python -m venv $venv
            if ($LASTEXITCODE -ne 0) { throw "creating the venv for vouch failed" }
            & (Join-Path $venv "Scripts\python.exe") -m pip install --quiet --no-deps --require-hashes -r $req
            if ($LASTEXITCODE -ne 0) { throw "pip install of vouch-build $VouchPypiVersion failed" }
            Copy-Item (Join-Path $venv "Scripts\vouch.exe") $vouchExe
        }
        "preinstalled" {
            $found = Get-Command vouch -CommandType Application -ErrorAction SilentlyContinue | Select-Object -First 1
            if (-not $found) {
                throw "VOUCH_INSTALL=preinstalled, but there is no vouch on PATH"
            }
            # Copied first, then hashed and run: the bytes checked are the bytes that run.
            Copy-Item $found.Source $vouchExe
            if ($VouchPreinstalledSha256) {
                $got = (Get-FileHash -Algorithm SHA256 $vouchExe).Hash.ToLowerInvariant()
                if ($got -cne $VouchPreinstalledSha256) {
                    throw "$($found.Source) has sha256 $got, not the pinned VOUCH_PREINSTALLED_SHA256 ${VouchPreinstalledSha256}: refusing to verify with it"
                }
            }
        }
        default { throw "VOUCH_INSTALL='$VouchInstall': expected source, pypi or preinstalled" }
    }
    & $vouchExe --version
    if ($LASTEXITCODE -ne 0) { throw "vouch does not run" }

    $cmd = @("install", "--from-flexci", "--repo", $Repo) + $buildEvent + @("--sha", $jobCommit,
        "--dist", "cupy-cuda${cudaMajor}x", "--python-version", $pyVer, "--platform", "win-64",
        "--python", $python, "--extras", $Extras, "--token-file", $tokenFile.FullName,
        "--github-attestations", $Repo, "--checkout", $checkout
    ) + $VouchArgs
    if ($PipArgs.Count -gt 0) { $cmd += @("--") + $PipArgs }
    Write-Host "+ $vouchExe $($cmd -join ' ')"
    & $vouchExe @cmd
    $status = $LASTEXITCODE
} finally {
    Remove-Item $tokenFile.FullName -ErrorAction SilentlyContinue
    Remove-Item -Recurse -Force $jobDir -ErrorAction SilentlyContinue
}
if ($status -ne 0) { throw "vouch install failed with exit status $status (see vouch's exit-code table)" }
