#!/usr/bin/env bash
# FlexCI (Linux): refuse to run anything from a checkout that is not the commit vouch vouched
# for, then run the job's command. The entry point for a FlexCI project:
#
#   check-checkout.sh .pfnci/linux/main-flexci.sh cuda130
#
# It is only worth anything when it lives OUTSIDE the checkout (baked into the FlexCI image, or
# a path FlexCI provides) and FlexCI runs it as the project's command: a copy inside the
# repository belongs to whatever head FlexCI checked out, which is exactly what is in question
# (see README.md, "What only FlexCI can close").
#
# From the job it takes: the commit the job names (FLEXCI_REFERENCE_COMMIT_ID, else
# FLEXCI_COMMIT_ID), the commit the dispatch vouched for (VOUCH_DISPATCHED_COMMIT, the
# `vouch.commit` of the webhook body, when FlexCI passes it on; required with
# VOUCH_REQUIRE_DISPATCHED_COMMIT=1) and the checkout (the current directory, or
# VOUCH_CHECKOUT), which must keep its .git. For a pull request (FLEXCI_BRANCH=refs/pull/...)
# FlexCI checks out refs/pull/<N>/merge, whose second parent is the head: the head is checked
# out in its place, since the wheel is built from it; any other checkout is its own HEAD.
# fetch-wheel.sh makes the same check again before it installs; keep the two in step.
set -euo pipefail

die() {
    echo "check-checkout.sh: error: $*" >&2
    exit 1
}

job_commit="${FLEXCI_REFERENCE_COMMIT_ID:-${FLEXCI_COMMIT_ID:-}}"
[[ "${job_commit}" =~ ^[0-9a-f]{40}$ ]] ||
    die "neither FLEXCI_REFERENCE_COMMIT_ID nor FLEXCI_COMMIT_ID names a full commit (${job_commit@Q})"
dispatched="${VOUCH_DISPATCHED_COMMIT:-}"
if [[ -z "${dispatched}" && "${VOUCH_REQUIRE_DISPATCHED_COMMIT:-0}" == 1 ]]; then
    die "VOUCH_DISPATCHED_COMMIT is unset: FlexCI did not pass on the commit the dispatch vouched for"
fi
[[ -z "${dispatched}" || "${dispatched}" =~ ^[0-9a-f]{40}$ ]] ||
    die "VOUCH_DISPATCHED_COMMIT ${dispatched@Q} is not a full commit"
checkout="${VOUCH_CHECKOUT:-${PWD}}"
parents="$(git -C "${checkout}" rev-list --parents -n 1 HEAD 2>/dev/null)" ||
    die "${checkout} is not a git checkout, so it cannot be checked against ${job_commit}; keep its .git (config.pbtxt: checkout_strategy { include_dot_git: true })"
read -r -a parents <<<"${parents}"
checkout_commit="${parents[0]}"
# A pull request's job checks out GitHub's refs/pull/<N>/merge, the head merged into wherever
# the base is now; vouch builds the vouched head itself (docs/pr-build-predicate.md, "Which
# commit is built"), so the head, its second parent, is checked out for the tests to match the
# wheel. A push job's commit is HEAD itself, merge commit or not.
to_head=0
if [[ "${FLEXCI_BRANCH:-}" == refs/pull/* && "${checkout_commit}" != "${job_commit}" ]] &&
    ((${#parents[@]} == 3)) && [[ "${parents[2]}" == "${job_commit}" ]]; then
    checkout_commit="${parents[2]}"
    to_head=1
fi
[[ "${checkout_commit}" == "${job_commit}" ]] ||
    die "the checkout ${checkout} is at ${checkout_commit}, not at the commit the job names, ${job_commit}"
if [[ -n "${dispatched}" && "${dispatched}" != "${checkout_commit}" ]]; then
    die "the checkout is at ${checkout_commit}, but the dispatch vouched for ${dispatched}: the pull request moved after it was vouched for; nothing of it is run"
fi
# Only once every check passed: a refused job leaves the checkout as FlexCI made it.
if ((to_head)); then
    git -C "${checkout}" checkout -q --detach "${job_commit}" ||
        die "cannot check out the head ${job_commit} in ${checkout}"
fi
echo "check-checkout.sh: the checkout is ${checkout_commit}${dispatched:+, the commit the dispatch vouched for}" >&2
if (($#)); then
    exec "$@"
fi
