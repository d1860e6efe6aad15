#!/usr/bin/env bash
# FlexCI (Linux): fetch the CuPy wheel that vouch's generated workflows built and signed for
# the commit under test, verify it, and install it with its `test` extra.
#
# Copy to .pfnci/linux/tests/actions/fetch-wheel.sh. Usage:
#
#   fetch-wheel.sh [VOUCH_INSTALL_FLAGS...] [-- PIP_ARGS...]      e.g.  fetch-wheel.sh -- --user
#
# From the FlexCI job it takes: the pull request (FLEXCI_BRANCH=refs/pull/<N>/..., or
# PULL_REQUEST as .pfnci/linux/run.sh forwards it; unset or 0 for a push build), the commit
# (FLEXCI_REFERENCE_COMMIT_ID, else FLEXCI_COMMIT_ID: vouch's --from-flexci reads them), the
# CUDA major (CUDA_VERSION, else ${CUDA_HOME:-/usr/local/cuda}/version.json), and the GitHub
# token (a file named by CUPY_CI_GITHUB_TOKEN_FILE: fine-grained, Actions: read and
# Attestations: read on cupy/cupy; moved to a private file at once and deleted by vouch as
# soon as it has read it). A wheel whose artifact carries no bundle, or a push build's artifact
# under another name, is then still found by digest in cupy/cupy's attestation store.
# The wheel is installed by its verified sha256 with --no-deps; its requirements (base and
# `test`) follow in a second pip call from the package index, which vouch reports but does
# not verify.
#
# Before vouch runs, the checkout is checked against the commit the job names (and against
# VOUCH_DISPATCHED_COMMIT, the commit vouch's dispatch vouched for, when FlexCI passes it on):
# the tests that run next come from the checkout, and must be of the commit whose signed wheel
# is installed. The checkout is VOUCH_CHECKOUT (default: this script's repository root) and
# needs its .git (config.pbtxt: checkout_strategy { include_dot_git: true }).
set -euo pipefail

# ---- Pinned. Change only after reviewing the new vouch commit or release. ----------------
# The vouch commit built by VOUCH_INSTALL=source; keep it equal to `[workflows.source] rev`
# in vouch.toml, so FlexCI runs the vouch that built and signed the wheel.
VOUCH_GIT_URL="https://github.com/vouch-build/vouch"
VOUCH_GIT_REV="9719cfbe428cfb87765ccbf1d563f1813293c499"
# VOUCH_INSTALL=pypi: the release and the sha256 of each of its wheels (every FlexCI
# platform's). vouch-build has no release yet, so this route refuses to run until filled.
VOUCH_PYPI_VERSION="0.1.0"
VOUCH_PYPI_HASHES=()
# VOUCH_INSTALL=preinstalled: the sha256 of the reviewed vouch binary baked into the image.
# Empty trusts whatever `vouch` PATH finds; set it (here, or in the FlexCI project's
# environment) wherever a directory on PATH outlives a job.
VOUCH_PREINSTALLED_SHA256="${VOUCH_PREINSTALLED_SHA256:-}"
# ------------------------------------------------------------------------------------------
REPO="cupy/cupy"
EXTRAS="test"
PYTHON="${PYTHON:-python3}"
# source (cargo install --locked from VOUCH_GIT_REV), pypi (pip --require-hashes into its own
# venv), or preinstalled (a reviewed `vouch` already on PATH, as in vouch's own tests).
VOUCH_INSTALL="${VOUCH_INSTALL:-source}"

die() {
    echo "fetch-wheel.sh: error: $*" >&2
    exit 1
}

# The token first, before anything else runs: copied into a directory only this user can
# read, the original deleted. It is never put in a variable, so tracing (bash -x) cannot
# print it; it reaches vouch only as --token-file, which vouch deletes after reading.
[[ -n "${CUPY_CI_GITHUB_TOKEN_FILE:-}" && -r "${CUPY_CI_GITHUB_TOKEN_FILE}" ]] ||
    die "CUPY_CI_GITHUB_TOKEN_FILE must name a readable file holding the GitHub token (Actions: read and Attestations: read on ${REPO})"
private_dir="$(mktemp -d)"
trap 'rm -rf "${private_dir}"' EXIT
chmod 700 "${private_dir}"
token_file="${private_dir}/token"
(umask 077 && cat "${CUPY_CI_GITHUB_TOKEN_FILE}" >"${token_file}")
rm -f "${CUPY_CI_GITHUB_TOKEN_FILE}"
unset CUPY_CI_GITHUB_TOKEN_FILE GH_TOKEN GITHUB_TOKEN

# The Python the wheel is for: X.Y, with `t` for a free-threaded build (the GIL flag, as the
# artifact names it; sys.version_info alone would drop it).
py_ver="$("${PYTHON}" -c 'import sys, sysconfig; print("%d.%d%s" % (sys.version_info[0], sys.version_info[1], "t" if sysconfig.get_config_var("Py_GIL_DISABLED") else ""))')"

# Only the CUDA major names the wheel (cupy-cuda13x). The nvidia/cuda images export
# CUDA_VERSION; older ones ship version.json instead.
cuda_json="${CUDA_HOME:-/usr/local/cuda}/version.json"
if [[ -n "${CUDA_VERSION:-}" ]]; then
    cuda_major="${CUDA_VERSION%%.*}"
elif [[ -r "${cuda_json}" ]]; then
    cuda_major="$("${PYTHON}" -c 'import json, sys; print(json.load(open(sys.argv[1]))["cuda"]["version"].split(".")[0])' "${cuda_json}")"
else
    die "cannot tell the CUDA version: CUDA_VERSION is unset and ${cuda_json} is absent"
fi
[[ "${cuda_major}" =~ ^[0-9]+$ ]] || die "CUDA major ${cuda_major@Q} is not a number"

case "$(uname -m)" in
    x86_64) platform="linux-64" ;;
    aarch64 | arm64) platform="linux-aarch64" ;;
    *) die "no CuPy wheel platform for machine $(uname -m)" ;;
esac

# The pull request, as CuPy's jobs name it; vouch's --from-flexci reads FLEXCI_BRANCH itself,
# but inside the test container only PULL_REQUEST arrives, so the event is given here.
pr=""
if [[ "${FLEXCI_BRANCH:-}" =~ ^refs/pull/([0-9]+)/ ]]; then
    pr="${BASH_REMATCH[1]}"
elif [[ -n "${PULL_REQUEST:-}" && "${PULL_REQUEST}" != "0" ]]; then
    pr="${PULL_REQUEST}"
fi
if [[ -n "${pr}" ]]; then
    [[ "${pr}" =~ ^[1-9][0-9]*$ ]] || die "pull request ${pr@Q} is not a number"
    event=(--event pull_request --pr "${pr}")
else
    event=(--event push)
fi

# The commit under test: what the job names, and what the checkout is. Keep this in step with
# check-checkout.sh, which makes the same check before any of the repository's scripts run.
job_commit="${FLEXCI_REFERENCE_COMMIT_ID:-${FLEXCI_COMMIT_ID:-}}"
[[ "${job_commit}" =~ ^[0-9a-f]{40}$ ]] ||
    die "neither FLEXCI_REFERENCE_COMMIT_ID nor FLEXCI_COMMIT_ID names a full commit (${job_commit@Q})"
checkout="${VOUCH_CHECKOUT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../.." && pwd)}"
parents="$(git -C "${checkout}" rev-list --parents -n 1 HEAD 2>/dev/null)" ||
    die "${checkout} is not a git checkout, so it cannot be checked against ${job_commit}; keep its .git (config.pbtxt: checkout_strategy { include_dot_git: true })"
read -r -a parents <<<"${parents}"
checkout_commit="${parents[0]}"
# The checkout itself, never a parent of it: a pull request's wheel is built from the vouched
# head, so tests from refs/pull/<N>/merge (the head merged with wherever the base is now) would
# be another commit's. check-checkout.sh, FlexCI's entry point, checks the head out first.
if [[ -n "${pr}" && "${checkout_commit}" != "${job_commit}" ]] && ((${#parents[@]} == 3)) &&
    [[ "${parents[2]}" == "${job_commit}" ]]; then
    die "the checkout ${checkout} is ${checkout_commit}, a merge of the head ${job_commit} into its base, but the wheel is built from the head itself: check the head out first (check-checkout.sh does), or the tests would be another commit's than the wheel's"
fi
[[ "${checkout_commit}" == "${job_commit}" ]] ||
    die "the checkout ${checkout} is at ${checkout_commit}, not at the commit the job names, ${job_commit}: the tests would not be the vouched code's"
if [[ -n "${VOUCH_DISPATCHED_COMMIT:-}" && "${VOUCH_DISPATCHED_COMMIT}" != "${job_commit}" ]]; then
    die "the checkout is at ${job_commit}, but the dispatch vouched for ${VOUCH_DISPATCHED_COMMIT}: the pull request moved after it was vouched for"
fi

# Every route ends with vouch in ${private_dir}, which only this job can write, and runs that
# copy: a binary anywhere a job's pull-request code can write (a cache shared between jobs,
# ~/.cargo/bin) could be a trojan left there by an earlier job, which would then "verify"
# whatever it liked for every later one.
vouch_bin="${private_dir}/bin/vouch"
install_vouch() {
    mkdir -p "${private_dir}/bin"
    case "${VOUCH_INSTALL}" in
        source)
            command -v cargo >/dev/null ||
                die "VOUCH_INSTALL=source needs cargo (a Rust toolchain) on PATH"
            [[ "${VOUCH_GIT_REV}" =~ ^[0-9a-f]{40}$ ]] ||
                die "VOUCH_GIT_REV ${VOUCH_GIT_REV@Q} is not a full commit"
            # Built for this job alone. A private CARGO_HOME: cargo checks every crate against
            # Cargo.lock's checksums as it downloads it, but reuses extracted sources (and reads
            # config) from CARGO_HOME unchecked, so a shared one could be edited by an earlier
            # job. The variables that would put another program into the build are dropped.
            (
                cd "${private_dir}"
                unset RUSTC RUSTC_WRAPPER RUSTC_WORKSPACE_WRAPPER RUSTFLAGS CARGO_ENCODED_RUSTFLAGS \
                    CARGO_BUILD_RUSTC_WRAPPER CARGO_TARGET_DIR
                CARGO_HOME="${private_dir}/cargo-home" \
                    cargo install --locked --git "${VOUCH_GIT_URL}" --rev "${VOUCH_GIT_REV}" \
                    --root "${private_dir}/vouch-root" --target-dir "${private_dir}/vouch-target" vouch
            )
            cp "${private_dir}/vouch-root/bin/vouch" "${vouch_bin}"
            ;;
        pypi)
            ((${#VOUCH_PYPI_HASHES[@]})) ||
                die "VOUCH_INSTALL=pypi: no wheel hashes are pinned for vouch-build ${VOUCH_PYPI_VERSION} (no release yet); use VOUCH_INSTALL=source"
            local venv="${private_dir}/vouch-venv" line="vouch-build==${VOUCH_PYPI_VERSION}" h
            for h in "${VOUCH_PYPI_HASHES[@]}"; do
                line+=" --hash=${h}"
            done
            echo "${line}" >"${private_dir}/vouch-requirements.txt"
            "${PYTHON}" -m venv "${venv}"
            "${venv}/bin/python" -m pip install --quiet --no-deps --require-hashes \
                -r "${private_dir}/vouch-requirements.txt"
            cp "${venv}/bin/vouch" "${vouch_bin}"
            ;;
        preinstalled)
            local found
            found="$(command -v vouch)" ||
                die "VOUCH_INSTALL=preinstalled, but there is no vouch on PATH"
            # Copied first, then hashed and run: the bytes checked are the bytes that run.
            cp "${found}" "${vouch_bin}"
            if [[ -n "${VOUCH_PREINSTALLED_SHA256}" ]]; then
                local got
                got="$(sha256sum "${vouch_bin}")"
                got="${got%% *}"
                [[ "${got}" == "${VOUCH_PREINSTALLED_SHA256}" ]] ||
                    die "${found} has sha256 ${got}, not the pinned VOUCH_PREINSTALLED_SHA256 ${VOUCH_PREINSTALLED_SHA256}: refusing to verify with it"
            fi
            ;;
        *) die "VOUCH_INSTALL=${VOUCH_INSTALL@Q}: expected source, pypi or preinstalled" ;;
    esac
    chmod 700 "${vouch_bin}"
    "${vouch_bin}" --version
}
install_vouch

cmd=("${vouch_bin}" install --from-flexci --repo "${REPO}" "${event[@]}" --sha "${job_commit}"
    --dist "cupy-cuda${cuda_major}x" --python-version "${py_ver}" --platform "${platform}"
    --python "${PYTHON}" --extras "${EXTRAS}" --token-file "${token_file}"
    --github-attestations "${REPO}" --checkout "${checkout}" "$@")
echo "+ ${cmd[*]}" >&2
"${cmd[@]}"
