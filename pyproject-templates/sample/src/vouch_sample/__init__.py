"""vouch-sample: a small C-extension package built by vouch's demo and tests."""

from importlib.resources import files

from ._native import adler32, dot, fnv1a64, origin

__all__ = ["adler32", "dot", "fnv1a64", "greeting", "origin", "main"]


def greeting() -> str:
    """Package data, to prove data files survive the build and the repack."""
    return files(__name__).joinpath("data/greeting.txt").read_text(encoding="utf-8").strip()


def main() -> None:
    payload = greeting().encode()
    print(f"{greeting()} adler32={adler32(payload):08x} fnv1a64={fnv1a64(payload):016x}")
