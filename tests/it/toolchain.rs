//! `vouch toolchain install` over the real CuPy profile (`--dry-run`: nothing is downloaded) and
//! a foreign-platform install from pinned wheels through real pip.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::common::*;
use crate::vouch_snapshot;

fn cupy_profile() -> PathBuf {
    repo_root().join("pyproject-templates/cupy/vouch.toml")
}

/// Every cell id of `vouch plan --format json` for the CuPy profile.
fn cupy_cells() -> Vec<String> {
    let r = run(vouch()
        .args(["plan", "--format", "json", "--profile"])
        .arg(cupy_profile()));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let json = r.json();
    let cells = json
        .as_array()
        .or_else(|| json["include"].as_array())
        .unwrap_or_else(|| panic!("no cells in {json}"));
    cells
        .iter()
        .map(|c| c["id"].as_str().expect("cell id").to_owned())
        .collect()
}

fn dry_run(cell: &str, json: bool) -> Run {
    let mut cmd = vouch();
    cmd.args([
        "toolchain",
        "install",
        "--dry-run",
        "--cell",
        cell,
        "--profile",
    ])
    .arg(cupy_profile())
    // No interpreter is needed: a Python that does not exist must not matter.
    .args(["--python", "/nonexistent/python3"]);
    if json {
        cmd.arg("--json");
    }
    run(&mut cmd)
}

fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// CuPy's `build-wheel.yml` mini-CTK components.
const CUPY_COMPONENTS: [&str; 15] = [
    "cuda_nvcc",
    "cuda_cudart",
    "cuda_crt",
    "cuda_cuxxfilt",
    "libnvvm",
    "cuda_nvrtc",
    "cuda_nvtx",
    "cuda_profiler_api",
    "cuda_cccl",
    "libnvjitlink",
    "libcublas",
    "libcufft",
    "libcurand",
    "libcusparse",
    "libcusolver",
];

/// Components with no archive of their own in CUDA 12.x: redistrib_12.9.2.json has no such key
/// on any platform, because the `cuda_nvcc` archive carries `include/crt/` and `nvvm/`.
const INSIDE_NVCC_BEFORE_13: [&str; 2] = ["cuda_crt", "libnvvm"];

#[test]
fn every_cupy_cell_resolves_a_toolkit_pinned_by_sha256() {
    let cells = cupy_cells();
    assert_eq!(cells.len(), 38, "{cells:?}");
    let mut platforms_seen = BTreeSet::new();
    for cell in &cells {
        let r = dry_run(cell, true);
        assert_eq!(r.code, 0, "{cell}: {}", r.stderr);
        let plan = r.json();
        assert_eq!(plan["cell"], *cell);
        let platform = plan["platform"].as_str().unwrap().to_owned();
        assert!(cell.contains(&platform), "{cell} vs {platform}");
        platforms_seen.insert(platform.clone());
        assert!(is_sha256(plan["key"].as_str().unwrap()), "{plan}");
        let files = plan["files"].as_array().unwrap();
        assert!(!files.is_empty(), "{cell}: no files");
        for f in files {
            let pins = f["sha256"].as_array().unwrap();
            assert!(!pins.is_empty(), "{cell}: {f} has no pin");
            for pin in pins {
                assert!(is_sha256(pin.as_str().unwrap()), "{cell}: {f}");
            }
        }
        match plan["source"].as_str().unwrap() {
            "archives+wheels" => check_cuda12_archives(cell, &platform, files),
            "wheels" => check_cuda13_wheels(cell, &platform, &plan),
            other => panic!("{cell}: source {other}"),
        }
    }
    assert_eq!(
        platforms_seen,
        BTreeSet::from(["linux-64", "linux-aarch64", "win-64"].map(str::to_owned))
    );
}

/// The libraries CuPy compiles in beside the toolkit (issue 32): cuTENSOR on every platform,
/// NCCL on Linux, as `install_library.py` installs them in CuPy's build-wheel.yml.
fn check_libraries(cell: &str, platform: &str, names: &BTreeSet<String>, cuda: &str) {
    let mut expected = vec![format!("cutensor-{cuda}")];
    if platform != "win-64" {
        expected.push(format!("nvidia-nccl-{cuda}"));
    }
    for want in &expected {
        assert!(
            names.contains(want),
            "{cell}: {want} is not pinned: {names:?}"
        );
    }
    assert_eq!(
        names.contains(&format!("nvidia-nccl-{cuda}")),
        platform != "win-64",
        "{cell}: NCCL only on Linux"
    );
}

/// The CUDA 12 archives: CuPy's 15 components, less the two that 12.x ships inside nvcc, each
/// exactly once, from NVIDIA's redist directory for the platform; cuTENSOR and NCCL as wheels.
fn check_cuda12_archives(cell: &str, platform: &str, files: &[serde_json::Value]) {
    assert!(cell.starts_with("cuda12x-"), "{cell}");
    let (wheels, files): (Vec<_>, Vec<_>) = files.iter().cloned().partition(|f| f["url"].is_null());
    let wheels: BTreeSet<String> = wheels
        .iter()
        .map(|f| {
            f["name"]
                .as_str()
                .unwrap()
                .split_once("==")
                .unwrap()
                .0
                .to_owned()
        })
        .collect();
    check_libraries(cell, platform, &wheels, "cu12");
    assert_eq!(
        wheels.len(),
        if platform == "win-64" { 1 } else { 2 },
        "{wheels:?}"
    );
    let (redist, ext) = match platform {
        "linux-64" => ("linux-x86_64", ".tar.xz"),
        "linux-aarch64" => ("linux-sbsa", ".tar.xz"),
        "win-64" => ("windows-x86_64", ".zip"),
        other => panic!("{other}"),
    };
    let mut components = Vec::new();
    for f in files {
        let url = f["url"].as_str().unwrap();
        let rest = url
            .strip_prefix("https://developer.download.nvidia.com/compute/cuda/redist/")
            .unwrap_or_else(|| panic!("{cell}: {url} is not NVIDIA's redist"));
        // <component>/<redist platform>/<component>-<redist platform>-<version>-archive<ext>
        let parts: Vec<&str> = rest.split('/').collect();
        assert_eq!(parts.len(), 3, "{url}");
        assert_eq!(parts[1], redist, "{url}");
        assert!(
            parts[2].starts_with(&format!("{}-{redist}-", parts[0])),
            "{url}"
        );
        assert!(parts[2].ends_with(&format!("-archive{ext}")), "{url}");
        components.push(parts[0].to_owned());
    }
    let unique: BTreeSet<&str> = components.iter().map(String::as_str).collect();
    assert_eq!(
        unique.len(),
        components.len(),
        "{cell}: duplicates in {components:?}"
    );
    let expected: BTreeSet<&str> = CUPY_COMPONENTS
        .into_iter()
        .filter(|c| !INSIDE_NVCC_BEFORE_13.contains(c))
        .collect();
    assert_eq!(
        unique, expected,
        "{cell}: CuPy's components for CUDA 12 on {platform} ({redist}); cuda_crt and libnvvm \
         are inside cuda_nvcc before CUDA 13 and must not be pinned separately"
    );
    for c in INSIDE_NVCC_BEFORE_13 {
        assert!(
            !unique.contains(c),
            "{cell}: {c} has no CUDA 12 archive of its own"
        );
    }
}

/// The CUDA 13 wheels: the cu13 package for each of CuPy's components (crt and nvvm are wheels
/// of their own in 13), pip told the platform's tags.
fn check_cuda13_wheels(cell: &str, platform: &str, plan: &serde_json::Value) {
    assert!(cell.starts_with("cuda13x-"), "{cell}");
    assert_eq!(plan["root"], "nvidia/cu13");
    let names: BTreeSet<String> = plan["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let name = f["name"].as_str().unwrap();
            assert!(f["url"].is_null(), "{f}");
            name.split_once("==")
                .unwrap_or_else(|| panic!("{name} not pinned"))
                .0
                .to_owned()
        })
        .collect();
    let expected: BTreeSet<String> = [
        "nvidia-cuda-nvcc",
        "nvidia-cuda-runtime",
        "nvidia-cuda-crt",
        "nvidia-nvvm",
        "nvidia-cuda-nvrtc",
        "nvidia-nvtx",
        "nvidia-cuda-profiler-api",
        "nvidia-cuda-cccl",
        "nvidia-nvjitlink",
        "nvidia-cublas",
        "nvidia-cufft",
        "nvidia-curand",
        "nvidia-cusparse",
        "nvidia-cusolver",
    ]
    .map(str::to_owned)
    .into();
    check_libraries(cell, platform, &names, "cu13");
    let toolkit: BTreeSet<String> = names
        .into_iter()
        .filter(|n| !n.starts_with("cutensor-") && !n.starts_with("nvidia-nccl-"))
        .collect();
    assert_eq!(toolkit, expected, "{cell}");
    let tags: Vec<&str> = plan["pip_platforms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    let machine = match platform {
        "linux-64" => "x86_64",
        "linux-aarch64" => "aarch64",
        _ => "win_amd64",
    };
    assert!(
        !tags.is_empty() && tags.iter().all(|t| t.ends_with(machine)),
        "{tags:?}"
    );
}

/// The host line says which platform this runs on: the same test runs on every runner.
const HOST: (&str, &str) = (r"(?m)^host      .*$", "host      [HOST]");

#[test]
fn dry_run_of_a_linux_64_cuda12_cell() {
    vouch_snapshot!([HOST], dry_run("cuda12x-py3.12-linux-64", false), @"
    success: true
    exit_code: 0
    ----- stdout -----
    cell      cuda12x-py3.12-linux-64
    toolkit   cuda-12.9.2-linux-64 from archives+wheels (15 files), key [SHA256]
    host      [HOST]
    wheels    toolchains/cuda12x-libs-linux-64.txt (root )
    pip tags  manylinux_2_28_x86_64 .. manylinux1_x86_64 (27 tags)
    fetch     cutensor-cu12==2.4.1
              sha256:[SHA256]
    fetch     nvidia-nccl-cu12==2.25.1
              sha256:[SHA256]
    fetch     cuda_nvcc-linux-x86_64-12.9.86-archive.tar.xz
              sha256:[SHA256]
              https://developer.download.nvidia.com/compute/cuda/redist/cuda_nvcc/linux-x86_64/cuda_nvcc-linux-x86_64-12.9.86-archive.tar.xz
    fetch     cuda_cudart-linux-x86_64-12.9.79-archive.tar.xz
              sha256:[SHA256]
              https://developer.download.nvidia.com/compute/cuda/redist/cuda_cudart/linux-x86_64/cuda_cudart-linux-x86_64-12.9.79-archive.tar.xz
    fetch     cuda_cuxxfilt-linux-x86_64-12.9.82-archive.tar.xz
              sha256:[SHA256]
              https://developer.download.nvidia.com/compute/cuda/redist/cuda_cuxxfilt/linux-x86_64/cuda_cuxxfilt-linux-x86_64-12.9.82-archive.tar.xz
    fetch     cuda_nvrtc-linux-x86_64-12.9.86-archive.tar.xz
              sha256:[SHA256]
              https://developer.download.nvidia.com/compute/cuda/redist/cuda_nvrtc/linux-x86_64/cuda_nvrtc-linux-x86_64-12.9.86-archive.tar.xz
    fetch     cuda_nvtx-linux-x86_64-12.9.79-archive.tar.xz
              sha256:[SHA256]
              https://developer.download.nvidia.com/compute/cuda/redist/cuda_nvtx/linux-x86_64/cuda_nvtx-linux-x86_64-12.9.79-archive.tar.xz
    fetch     cuda_profiler_api-linux-x86_64-12.9.79-archive.tar.xz
              sha256:[SHA256]
              https://developer.download.nvidia.com/compute/cuda/redist/cuda_profiler_api/linux-x86_64/cuda_profiler_api-linux-x86_64-12.9.79-archive.tar.xz
    fetch     cuda_cccl-linux-x86_64-12.9.27-archive.tar.xz
              sha256:[SHA256]
              https://developer.download.nvidia.com/compute/cuda/redist/cuda_cccl/linux-x86_64/cuda_cccl-linux-x86_64-12.9.27-archive.tar.xz
    fetch     libnvjitlink-linux-x86_64-12.9.86-archive.tar.xz
              sha256:[SHA256]
              https://developer.download.nvidia.com/compute/cuda/redist/libnvjitlink/linux-x86_64/libnvjitlink-linux-x86_64-12.9.86-archive.tar.xz
    fetch     libcublas-linux-x86_64-12.9.2.10-archive.tar.xz
              sha256:[SHA256]
              https://developer.download.nvidia.com/compute/cuda/redist/libcublas/linux-x86_64/libcublas-linux-x86_64-12.9.2.10-archive.tar.xz
    fetch     libcufft-linux-x86_64-11.4.1.4-archive.tar.xz
              sha256:[SHA256]
              https://developer.download.nvidia.com/compute/cuda/redist/libcufft/linux-x86_64/libcufft-linux-x86_64-11.4.1.4-archive.tar.xz
    fetch     libcurand-linux-x86_64-10.3.10.19-archive.tar.xz
              sha256:[SHA256]
              https://developer.download.nvidia.com/compute/cuda/redist/libcurand/linux-x86_64/libcurand-linux-x86_64-10.3.10.19-archive.tar.xz
    fetch     libcusparse-linux-x86_64-12.5.10.65-archive.tar.xz
              sha256:[SHA256]
              https://developer.download.nvidia.com/compute/cuda/redist/libcusparse/linux-x86_64/libcusparse-linux-x86_64-12.5.10.65-archive.tar.xz
    fetch     libcusolver-linux-x86_64-11.7.5.82-archive.tar.xz
              sha256:[SHA256]
              https://developer.download.nvidia.com/compute/cuda/redist/libcusolver/linux-x86_64/libcusolver-linux-x86_64-11.7.5.82-archive.tar.xz

    ----- stderr -----
    ");
}

#[test]
fn dry_run_of_a_linux_aarch64_cuda13_cell() {
    vouch_snapshot!([HOST], dry_run("cuda13x-py3.12-linux-aarch64", false), @"
    success: true
    exit_code: 0
    ----- stdout -----
    cell      cuda13x-py3.12-linux-aarch64
    toolkit   cuda-13.3.1-linux-aarch64 from wheels (16 files), key [SHA256]
    host      [HOST]
    wheels    toolchains/cuda-13.3.1-linux-aarch64.txt (root nvidia/cu13)
    pip tags  manylinux_2_28_aarch64 .. manylinux2014_aarch64 (25 tags)
    fetch     nvidia-cublas==13.6.0.2
              sha256:[SHA256]
    fetch     nvidia-cuda-cccl==13.3.3.4.1
              sha256:[SHA256]
    fetch     nvidia-cuda-crt==13.3.73
              sha256:[SHA256]
    fetch     nvidia-cuda-nvcc==13.3.73
              sha256:[SHA256]
    fetch     nvidia-cuda-nvrtc==13.3.33
              sha256:[SHA256]
    fetch     nvidia-cuda-profiler-api==13.3.27
              sha256:[SHA256]
    fetch     nvidia-cuda-runtime==13.3.29
              sha256:[SHA256]
    fetch     nvidia-cufft==12.3.0.29
              sha256:[SHA256]
    fetch     nvidia-curand==10.4.3.29
              sha256:[SHA256]
    fetch     nvidia-cusolver==12.2.6.9
              sha256:[SHA256]
    fetch     nvidia-cusparse==12.8.2.51
              sha256:[SHA256]
    fetch     nvidia-nvjitlink==13.3.33
              sha256:[SHA256]
    fetch     nvidia-nvtx==13.3.29
              sha256:[SHA256]
    fetch     nvidia-nvvm==13.3.73
              sha256:[SHA256]
    fetch     cutensor-cu13==2.4.1
              sha256:[SHA256]
    fetch     nvidia-nccl-cu13==2.30.7
              sha256:[SHA256]

    ----- stderr -----
    ");
}

#[test]
fn dry_run_of_a_win_64_cuda12_cell() {
    vouch_snapshot!([HOST], dry_run("cuda12x-py3.13-win-64", false), @"
    success: true
    exit_code: 0
    ----- stdout -----
    cell      cuda12x-py3.13-win-64
    toolkit   cuda-12.9.2-win-64 from archives+wheels (14 files), key [SHA256]
    host      [HOST]
    wheels    toolchains/cuda12x-libs-win-64.txt (root )
    pip tags  win_amd64
    fetch     cutensor-cu12==2.4.1
              sha256:[SHA256]
    fetch     cuda_nvcc-windows-x86_64-12.9.86-archive.zip
              sha256:[SHA256]
              https://developer.download.nvidia.com/compute/cuda/redist/cuda_nvcc/windows-x86_64/cuda_nvcc-windows-x86_64-12.9.86-archive.zip
    fetch     cuda_cudart-windows-x86_64-12.9.79-archive.zip
              sha256:[SHA256]
              https://developer.download.nvidia.com/compute/cuda/redist/cuda_cudart/windows-x86_64/cuda_cudart-windows-x86_64-12.9.79-archive.zip
    fetch     cuda_cuxxfilt-windows-x86_64-12.9.82-archive.zip
              sha256:[SHA256]
              https://developer.download.nvidia.com/compute/cuda/redist/cuda_cuxxfilt/windows-x86_64/cuda_cuxxfilt-windows-x86_64-12.9.82-archive.zip
    fetch     cuda_nvrtc-windows-x86_64-12.9.86-archive.zip
              sha256:[SHA256]
              https://developer.download.nvidia.com/compute/cuda/redist/cuda_nvrtc/windows-x86_64/cuda_nvrtc-windows-x86_64-12.9.86-archive.zip
    fetch     cuda_nvtx-windows-x86_64-12.9.79-archive.zip
              sha256:[SHA256]
              https://developer.download.nvidia.com/compute/cuda/redist/cuda_nvtx/windows-x86_64/cuda_nvtx-windows-x86_64-12.9.79-archive.zip
    fetch     cuda_profiler_api-windows-x86_64-12.9.79-archive.zip
              sha256:[SHA256]
              https://developer.download.nvidia.com/compute/cuda/redist/cuda_profiler_api/windows-x86_64/cuda_profiler_api-windows-x86_64-12.9.79-archive.zip
    fetch     cuda_cccl-windows-x86_64-12.9.27-archive.zip
              sha256:[SHA256]
              https://developer.download.nvidia.com/compute/cuda/redist/cuda_cccl/windows-x86_64/cuda_cccl-windows-x86_64-12.9.27-archive.zip
    fetch     libnvjitlink-windows-x86_64-12.9.86-archive.zip
              sha256:[SHA256]
              https://developer.download.nvidia.com/compute/cuda/redist/libnvjitlink/windows-x86_64/libnvjitlink-windows-x86_64-12.9.86-archive.zip
    fetch     libcublas-windows-x86_64-12.9.2.10-archive.zip
              sha256:[SHA256]
              https://developer.download.nvidia.com/compute/cuda/redist/libcublas/windows-x86_64/libcublas-windows-x86_64-12.9.2.10-archive.zip
    fetch     libcufft-windows-x86_64-11.4.1.4-archive.zip
              sha256:[SHA256]
              https://developer.download.nvidia.com/compute/cuda/redist/libcufft/windows-x86_64/libcufft-windows-x86_64-11.4.1.4-archive.zip
    fetch     libcurand-windows-x86_64-10.3.10.19-archive.zip
              sha256:[SHA256]
              https://developer.download.nvidia.com/compute/cuda/redist/libcurand/windows-x86_64/libcurand-windows-x86_64-10.3.10.19-archive.zip
    fetch     libcusparse-windows-x86_64-12.5.10.65-archive.zip
              sha256:[SHA256]
              https://developer.download.nvidia.com/compute/cuda/redist/libcusparse/windows-x86_64/libcusparse-windows-x86_64-12.5.10.65-archive.zip
    fetch     libcusolver-windows-x86_64-11.7.5.82-archive.zip
              sha256:[SHA256]
              https://developer.download.nvidia.com/compute/cuda/redist/libcusolver/windows-x86_64/libcusolver-windows-x86_64-11.7.5.82-archive.zip

    ----- stderr -----
    ");
}

#[test]
fn dry_run_of_a_cell_without_a_toolchain_says_which_table_is_missing() {
    let dir = tempdir();
    let table = "[flavors.cuda13x.toolchain.win-64]\nwheels = \"toolchains/cuda-{cuda}-win-64.txt\"\nroot = \"nvidia/cu13\"\n";
    let text = std::fs::read_to_string(cupy_profile()).unwrap();
    assert!(text.contains(table));
    let text = text.replace(table, "");
    let profile = dir.path().join("vouch.toml");
    std::fs::write(&profile, text).unwrap();
    let r = run(vouch()
        .args([
            "toolchain",
            "install",
            "--dry-run",
            "--cell",
            "cuda13x-py3.12-win-64",
        ])
        .arg("--profile")
        .arg(&profile));
    assert_exit(
        &r,
        2,
        "declares no toolchain for cuda13x on win-64 (flavors.cuda13x.toolchain.win-64)",
    );
}

/// A wheel tagged only for manylinux aarch64, laid out like NVIDIA's cu13 wheels, whose `nvcc`
/// is an aarch64 ELF (its header is all the layout check reads).
fn aarch64_toolkit_wheel(dir: &Path) -> PathBuf {
    let name = "nvidia_fake_nvcc-13.0.0-py3-none-manylinux2014_aarch64.manylinux_2_17_aarch64.whl";
    let mut nvcc = vec![0u8; 64];
    nvcc[..4].copy_from_slice(b"\x7fELF");
    nvcc[4] = 2;
    nvcc[5] = 1;
    nvcc[6] = 1;
    nvcc[16] = 2;
    nvcc[18..20].copy_from_slice(&183u16.to_le_bytes()); // EM_AARCH64
    let entries = [
        entry("nvidia/cu13/bin/nvcc", &nvcc),
        entry("nvidia/cu13/include/cuda_runtime.h", b"#pragma once\n"),
        entry("nvidia/cu13/lib/libcudart.so.13", b"not really a library"),
    ];
    let record = record_for(&entries, "nvidia_fake_nvcc-13.0.0.dist-info/RECORD");
    let mut all = entries.to_vec();
    all.push(entry(
        "nvidia_fake_nvcc-13.0.0.dist-info/METADATA",
        b"Metadata-Version: 2.1\nName: nvidia-fake-nvcc\nVersion: 13.0.0\n",
    ));
    all.push(entry(
        "nvidia_fake_nvcc-13.0.0.dist-info/WHEEL",
        b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: py3-none-manylinux2014_aarch64\nTag: py3-none-manylinux_2_17_aarch64\n",
    ));
    all.push(entry("nvidia_fake_nvcc-13.0.0.dist-info/RECORD", &record));
    let path = dir.join(name);
    write_zip(&path, &all);
    path
}

/// The linux-aarch64 toolkit from its wheels on this host, through real pip: pip is given the
/// aarch64 tags (a wheel with no x86_64 tag is downloaded on x86_64), the hash is checked, the
/// tree laid out with an aarch64 `libcuda.so` stub, and `nvcc` is checked by its header and not
/// run.
#[test]
fn a_linux_aarch64_toolkit_is_laid_out_from_its_wheels_on_any_host() {
    let dir = tempdir();
    let links = dir.path().join("links");
    std::fs::create_dir_all(&links).unwrap();
    let wheel = aarch64_toolkit_wheel(&links);
    let profile_dir = dir.path().join("profile");
    std::fs::create_dir_all(&profile_dir).unwrap();
    std::fs::write(
        profile_dir.join("cuda.txt"),
        format!(
            "nvidia-fake-nvcc==13.0.0 --hash=sha256:{}\n",
            sha256_file(&wheel)
        ),
    )
    .unwrap();
    std::fs::write(
        profile_dir.join("vouch.toml"),
        "project = \"mini\"\npython = [\"3.12\"]\nplatforms = [\"linux-aarch64\"]\n\n\
         [runners]\nlinux-aarch64 = \"ubuntu-24.04-arm\"\n\n\
         [flavors.cuda13x]\npackage = \"mini-cuda13x\"\ncuda = \"13.0\"\n\n\
         [flavors.cuda13x.toolchain.linux-aarch64]\nwheels = \"cuda.txt\"\nroot = \"nvidia/cu13\"\n\n\
         [inputs]\ninclude = [\"setup.py\"]\n",
    )
    .unwrap();
    let cache = dir.path().join("cache");
    let r = run(vouch()
        .args([
            "toolchain",
            "install",
            "--json",
            "--cell",
            "cuda13x-py3.12-linux-aarch64",
            "--profile",
        ])
        .arg(profile_dir.join("vouch.toml"))
        .arg("--cache-dir")
        .arg(&cache)
        .arg("--python")
        .arg(venv_python())
        .env("PIP_NO_INDEX", "1")
        .env("PIP_FIND_LINKS", &links));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let got = r.json();
    assert_eq!(got["platform"], "linux-aarch64");
    assert_eq!(got["machine"], "ELF AArch64");
    assert_eq!(got["components"][0]["sha256"], sha256_file(&wheel));
    let cuda = PathBuf::from(got["cuda_path"].as_str().unwrap());
    let stub = std::fs::read(cuda.join("lib/stubs/libcuda.so")).unwrap();
    assert_eq!(&stub[..4], b"\x7fELF");
    if cfg!(not(target_arch = "aarch64")) {
        assert!(got["nvcc"].is_null(), "{got}");
        assert_eq!(u16::from_le_bytes([stub[18], stub[19]]), 183, "EM_AARCH64");
    }
    assert!(cuda.join("lib/libcudart.so").symlink_metadata().is_ok());
}
