//! The small checks around a build that keep a runner from building something else than the
//! project's own release would: Windows' symlinks and long paths, disk space for free-threaded
//! builds, every submodule checked out, and `twine check --strict` on what was built. Each is
//! a step text here; `render/build.rs` places them.

use vouch_profile::Submodules;

use crate::pins::TWINE;
use crate::render::fill;

/// Steps that must precede a build job's checkout on Windows. Git for Windows checks a
/// symlink out as a text file holding its target unless `core.symlinks` is on; paths past
/// 260 characters (a build tree of nested modules under the runner's work directory) fail
/// unless the machine allows long paths, which only an administrator can change.
pub(crate) const WINDOWS_BEFORE_CHECKOUT: &str = r#"      - name: Symlinks as symlinks (Windows; before the checkout)
        if: runner.os == 'Windows'
        run: git config --global core.symlinks true
      - name: Long paths are enabled (Windows)
        if: runner.os == 'Windows'
        shell: pwsh
        run: |
          $key = 'HKLM:\SYSTEM\CurrentControlSet\Control\FileSystem'
          $enabled = (Get-ItemProperty -Path $key -Name LongPathsEnabled -ErrorAction SilentlyContinue).LongPathsEnabled
          Write-Output "LongPathsEnabled: $enabled"
          if ($enabled -ne 1) {
            Write-Output "::error::this runner does not allow paths longer than 260 characters (set $key LongPathsEnabled = 1)"
            exit 1
          }
"#;

/// Frees the hosted Linux runner's disk for a free-threaded cell: its objects share nothing
/// with the regular build of the same version, so it needs twice the space, more than the
/// ~14 GiB a hosted runner leaves free (CuPy's 3.14t cells run out there). Best effort: a
/// failure warns and the build goes on. A cell in an image cannot reach the runner's
/// directories; the Docker socket GitHub mounts into every job container runs a sibling
/// container of the same image with them mounted, which empties them. Never on a
/// self-hosted runner, whose directories are its owner's.
pub(crate) const FREE_DISK: &str = r#"      - name: Free disk space (hosted Linux runner, free-threaded Python)
        if: runner.os == 'Linux' && runner.environment == 'github-hosted' && endsWith(matrix.python, 't')
        env:
          IMAGE: ${{ matrix.container }}
        run: |
          # Preinstalled toolchains no build here uses (about 50 GiB on ubuntu-24.04).
          dirs=(/usr/share/dotnet /usr/local/lib/android /opt/ghc /opt/hostedtoolcache/CodeQL)
          df -h . || true
          if [ -z "$IMAGE" ]; then
            sudo rm -rf "${dirs[@]}" || echo "::warning::could not remove all of ${dirs[*]}"
          else
            api() { curl -fsS --unix-socket /var/run/docker.sock -H 'Content-Type: application/json' "$@"; }
            binds=""
            for i in "${!dirs[@]}"; do binds+="${binds:+,}\"${dirs[$i]}:/free/$i\""; done
            body="{\"Image\":\"$IMAGE\",\"Cmd\":[\"sh\",\"-c\",\"find /free -mindepth 2 -maxdepth 2 -exec rm -rf {} +\"],\"HostConfig\":{\"Binds\":[$binds]}}"
            id=$(api -X POST -d "$body" http://docker/containers/create | sed -n 's/.*"Id":"\([0-9a-f]*\)".*/\1/p') || id=""
            if [ -z "$id" ]; then
              echo "::warning::no Docker socket to free the runner's disk from this image; building without"
            else
              api -X POST "http://docker/containers/$id/start" || true
              status=$(api -X POST "http://docker/containers/$id/wait" | sed -n 's/.*"StatusCode":\([0-9]*\).*/\1/p') || status=""
              api -X DELETE "http://docker/containers/$id?force=true" >/dev/null || true
              if [ "$status" != 0 ]; then echo "::warning::freeing the runner's disk ended with status '$status'"; fi
            fi
          fi
          df -h . || true
"#;

/// actions/checkout's `submodules:` line for the profile's choice (empty for none).
pub(crate) fn checkout_submodules(s: Submodules) -> &'static str {
    match s {
        Submodules::None => "",
        Submodules::TopLevel => "          submodules: true\n",
        Submodules::Recursive => "          submodules: recursive\n",
    }
}

/// Fails the job when a submodule `.gitmodules` declares is not checked out, or not at the
/// commit the tree records: an sdist packed from it would lack those files (CuPy's
/// `third_party/`), and every cell would fail or build something else. Runs whatever the
/// profile says, so a project that forgot `[workflows] submodules` hears it here.
pub(crate) const SUBMODULES_CHECKED_OUT: &str = r#"      - name: Every declared submodule is checked out
        run: |
          if [ ! -f .gitmodules ]; then exit 0; fi
          empty=()
          while read -r _ path; do
            if [ -z "$(ls -A -- "$path" 2>/dev/null)" ]; then empty+=("$path"); fi
          done < <(git config --file .gitmodules --get-regexp '^submodule\..*\.path$' || true)
          # `-`: not checked out; `+`: not at the recorded commit; `U`: conflicted.
          wrong=$(git submodule status --recursive | grep -E '^[-+U]' || true)
          if [ ${#empty[@]} -gt 0 ] || [ -n "$wrong" ]; then
            echo "::error::submodules .gitmodules declares are missing from the checkout; an sdist packed from it would lack their files (set [workflows] submodules = \"recursive\" in the profile)"
            if [ ${#empty[@]} -gt 0 ]; then printf 'empty: %q\n' "${empty[@]}"; fi
            if [ -n "$wrong" ]; then printf '%s\n' "$wrong" | sed 's/^/status: /'; fi
            exit 1
          fi
          git submodule status --recursive
"#;

/// The step that installs twine (hash-pinned, see [`TWINE`]) on `ubuntu-24.04` and runs
/// `twine check` on `files` (a shell glob) that must match at least one file; `--strict` (a
/// warning fails too) for the wheels, as CuPy's build-wheel.yml checks its wheelhouse. An sdist
/// is checked without it: CuPy gives only its wheels a long description
/// (`CUPY_INSTALL_LONG_DESCRIPTION`), so its own sdist on PyPI warns "`long_description`
/// missing" and `--strict` would fail every CuPy run; an error (metadata PyPI refuses, markup
/// that does not render) still fails.
pub(crate) fn twine_check(what: &str, files: &str, strict: bool) -> String {
    let flag = if strict { " --strict" } else { "" };
    let requirements: String = TWINE
        .iter()
        .map(|(req, sha)| format!("            {req} --hash=sha256:{sha}\n"))
        .collect();
    fill(
        r#"      - name: twine check@@FLAG@@ (@@WHAT@@)
        env:
          TWINE_REQUIREMENTS: |
@@REQUIREMENTS@@          PIP_DISABLE_PIP_VERSION_CHECK: '1'
        run: |
          # The metadata PyPI would refuse or render wrong (a long description that is not
          # valid reStructuredText, a missing field), found before anything is signed.
          venv="$RUNNER_TEMP/twine-venv"
          python3 -m venv "$venv"
          printf '%s' "$TWINE_REQUIREMENTS" > "$RUNNER_TEMP/twine-requirements.txt"
          "$venv/bin/python" -m pip install --no-deps --only-binary :all: --require-hashes \
            -r "$RUNNER_TEMP/twine-requirements.txt"
          files=(@@FILES@@)
          if [ ! -f "${files[0]}" ]; then
            echo "::error::nothing to check: no @@FILES@@"
            exit 1
          fi
          "$venv/bin/twine" check@@FLAG@@ "${files[@]}"
"#,
        &[
            ("WHAT", what),
            ("FLAG", flag),
            ("REQUIREMENTS", &requirements),
            ("FILES", files),
        ],
    )
}
