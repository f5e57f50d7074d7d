"""Shared fixtures of murmur's pytest suite; a skipped test fails the run (none is silently skipped)."""

import os
import subprocess

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.skipped:
        report.outcome = "failed"
        report.longrepr = f"a skipped test fails murmur's suite (every test runs in CI): {report.longrepr}"


@pytest.fixture(scope="session")
def cli():
    """Runs the murmur CLI built next to the package; returns its stdout."""
    path = os.environ.get("MURMUR_CLI")
    assert path and os.path.exists(path), "MURMUR_CLI must name the murmur binary (ctest sets it)"

    def run(*args, check=True):
        done = subprocess.run([path, *map(str, args)], capture_output=True, text=True, timeout=600)
        if check:
            assert done.returncode == 0, f"murmur {' '.join(map(str, args))}: {done.stderr}"
        return done

    return run
