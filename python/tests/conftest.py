"""Shared fixtures: where the repository is (scenarios, the CLI binary)."""

import os
import pathlib
import shutil

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def repo():
    return REPO


@pytest.fixture(scope="session")
def hsched_cli():
    """The `hsched` command line built from this checkout (HSCHED_CLI, else
    target/debug/hsched, else target/release/hsched), to compare with."""
    for candidate in (
        os.environ.get("HSCHED_CLI"),
        REPO / "target" / "debug" / "hsched",
        REPO / "target" / "release" / "hsched",
        shutil.which("hsched"),
    ):
        if candidate and pathlib.Path(candidate).is_file():
            return str(candidate)
    pytest.fail("no hsched binary: build it with `cargo build -p hsched` (or set HSCHED_CLI)")


def under_ci() -> bool:
    return os.environ.get("CI") in ("true", "1")


def require(requirement: str, why_missing):
    """Skips the calling test when `why_missing` says what is missing (a
    truthy string), or fails it under CI=true, where `.ci/run` has installed
    every requirement (the Rust tests' rule, hsched_testkit::require)."""
    if not why_missing:
        return
    if under_ci():
        pytest.fail(f"requirement missing under CI: {requirement}: {why_missing} (.ci/run installs it)")
    pytest.skip(f"{requirement}: {why_missing}")
