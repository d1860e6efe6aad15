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
set -euo pipefail

# ---- Pinned. Change only after reviewing the new vouch commit or release. ----------------
# The vouch commit built by VOUCH_INSTALL=source; keep it equal to `[workflows.source] rev`
# in vouch.toml, so FlexCI runs the vouch that built and signed the wheel.
VOUCH_GIT_URL="https://github.com/vouch-build/vouch"
VOUCH_GIT_REV="31dd652a6b4d6555dab00bba7326b18dae1f2c9e"
# VOUCH_INSTALL=pypi: the release and the sha256 of each of its wheels (every FlexCI
# platform's). vouch-build has no release yet, so this route refuses to run until filled.
VOUCH_PYPI_VERSION="0.1.0"
VOUCH_PYPI_HASHES=()
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

install_vouch() {
    case "${VOUCH_INSTALL}" in
        source)
            command -v cargo >/dev/null ||
                die "VOUCH_INSTALL=source needs cargo (a Rust toolchain) on PATH"
            [[ "${VOUCH_GIT_REV}" =~ ^[0-9a-f]{40}$ ]] ||
                die "VOUCH_GIT_REV ${VOUCH_GIT_REV@Q} is not a full commit"
            # One directory per commit: a later job on the same machine reuses the build.
            local root="${XDG_CACHE_HOME:-${HOME}/.cache}/vouch-bin/${VOUCH_GIT_REV}"
            if [[ ! -x "${root}/bin/vouch" ]]; then
                cargo install --locked --git "${VOUCH_GIT_URL}" --rev "${VOUCH_GIT_REV}" \
                    --root "${root}" vouch
            fi
            PATH="${root}/bin:${PATH}"
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
            PATH="${venv}/bin:${PATH}"
            ;;
        preinstalled)
            command -v vouch >/dev/null ||
                die "VOUCH_INSTALL=preinstalled, but there is no vouch on PATH"
            ;;
        *) die "VOUCH_INSTALL=${VOUCH_INSTALL@Q}: expected source, pypi or preinstalled" ;;
    esac
    vouch --version
}
install_vouch

cmd=(vouch install --from-flexci --repo "${REPO}" "${event[@]}"
    --dist "cupy-cuda${cuda_major}x" --python-version "${py_ver}" --platform "${platform}"
    --python "${PYTHON}" --extras "${EXTRAS}" --token-file "${token_file}"
    --github-attestations "${REPO}" "$@")
echo "+ ${cmd[*]}" >&2
"${cmd[@]}"
