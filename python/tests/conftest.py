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
