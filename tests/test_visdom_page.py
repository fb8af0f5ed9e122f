"""The visdom page a person opens: served offline by the project's server, and showing the live curve in a real
(headless) browser.

The browser test needs Debian's chromium, which `make test` installs; it is skipped, saying so, only where chromium
is absent (and fails instead under CI, where it must be there).
"""
from __future__ import annotations

import os
import posixpath
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator

import numpy as np
import pytest
from conftest import stopServer
from PIL import Image

from replay import visdom_static
from replay.visdom_server import findFreePort, serverUrl, startServer, waitForServer
from replay.visdom_static import FILES, VERSION_FILE, VISDOM_VERSION, installScripts, missingFiles, staticFolder
from srl_toolbox.plots import VisdomPlotter

pytestmark = pytest.mark.slow  # whole trainings or sweeps: left out of `make test-fast`

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Plotly's first two default trace colours: the raw curve (blue) and the smoothed one (orange)
RAW_RGB, SMOOTHED_RGB = (31, 119, 180), (255, 127, 14)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, str]]:
    """A server on a free loopback port, logging every request; yields (port, log file)."""
    tmp_dir = tmp_path_factory.mktemp("visdom_page")
    log_file = str(tmp_dir / "server.log")
    for _ in range(3):
        port = findFreePort()
        process = startServer(port, env_path=str(tmp_dir / "envs"), log_file=log_file, logging_level="INFO")
        if waitForServer(port, timeout=60, process=process):
            break
        stopServer(process)
    else:
        pytest.fail(f"the visdom server did not start:\n{open(log_file).read()}")
    try:
        yield port, log_file
    finally:
        stopServer(process)


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, b""


def test_browser_scripts_are_installed() -> None:
    """`make install` put every file of visdom's page in place, so the server has nothing to download."""
    missing = missingFiles()
    assert not missing, f"run `make install` (python -m replay.visdom_static); missing: {missing}"
    with open(os.path.join(staticFolder(), VERSION_FILE)) as handle:
        assert handle.read().strip() == VISDOM_VERSION
    # A second install does nothing and needs no npm at all
    assert installScripts(npm=os.path.join(os.sep, "nonexistent", "npm"), verbose=False) == []


def test_every_script_of_the_page_is_served(server: tuple[int, str]) -> None:
    port, _ = server
    status, page = _get(serverUrl(port))
    assert status == 200
    links = re.findall(r'(?:src|href)=(/static/[^ >"\']+)', page.decode())
    assert len(links) >= 12, page.decode()[:2000]
    for link in links:
        link = posixpath.normpath(link.split("?")[0])  # as a browser resolves /static/../user/style.css
        status, body = _get(serverUrl(port) + link)
        assert status == 200, f"{link}: HTTP {status}"
        assert body or link.startswith("/user/"), f"{link} is empty"  # the user's own style sheet may be empty


def test_installer_checks_what_npm_returns(tmp_path, monkeypatch, capsys) -> None:
    """A tarball whose file differs from the recorded checksum is refused and nothing of it is written; a missing
    npm with an unreachable registry is one clear error."""
    with pytest.raises(RuntimeError, match="npm is not installed and the npm registry is unreachable"):
        installScripts(str(tmp_path), npm="no-such-npm-here", verbose=False, registry="http://127.0.0.1:9/")
    fake_npm = tmp_path / "npm"
    # A stand-in npm that packs a tampered jquery: `npm pack --json --pack-destination DIR spec...`
    fake_npm.write_text(f"#!{sys.executable}\n" + FAKE_NPM)
    fake_npm.chmod(0o755)
    static = tmp_path / "static"
    static.mkdir()
    only_jquery = {name: spec for name, spec in FILES.items() if spec[0] == "jquery"}
    monkeypatch.setattr("replay.visdom_static.FILES", only_jquery)
    with pytest.raises(RuntimeError, match="jquery@3.1.1/dist/jquery.min.js does not match its expected SHA-256"):
        installScripts(str(static), npm=str(fake_npm), verbose=False)
    assert not (static / "js" / "jquery.min.js").exists() and not (static / VERSION_FILE).exists()
    # the command's --npm is the npm it runs (it ran the one on the PATH whatever --npm said)
    assert visdom_static.main(["--static-dir", str(static), "--npm", str(fake_npm)]) == 1
    assert "does not match its expected SHA-256" in capsys.readouterr().err
    assert not (static / "js" / "jquery.min.js").exists()


# What npm 11 prints when the registry is unreachable (`npm pack --json ...`): the JSON error on stdout, `npm error`
# lines with the stack trace and the log's path on stderr
FAILING_NPM_11 = '''
import json, sys
print(json.dumps({"error": {"code": "ECONNREFUSED", "summary": "FetchError: request to http://127.0.0.1:9/jquery failed, "
                  "reason: connect ECONNREFUSED 127.0.0.1:9", "detail": "If you are behind a proxy, please make sure "
                  "that the 'proxy' config is set properly."}}, indent=2))
sys.stderr.write("""npm error code ECONNREFUSED
npm error errno ECONNREFUSED
npm error FetchError: request to http://127.0.0.1:9/jquery failed, reason: connect ECONNREFUSED 127.0.0.1:9
npm error     at ClientRequest.<anonymous> (/usr/lib/node_modules/npm/node_modules/minipass-fetch/lib/index.js:130:14)
npm error A complete log of this run can be found in: /root/.npm/_logs/2026-11-30T23_58_28_173Z-debug-0.log
""")
sys.exit(1)
'''
# An older npm (6) without the JSON error: `npm ERR!` lines only
FAILING_NPM_6 = '''
import sys
sys.stderr.write("""npm ERR! code E404
npm ERR! 404 Not Found - GET https://registry.npmjs.org/jquery - Not found
npm ERR! A complete log of this run can be found in:
npm ERR!     /root/.npm/_logs/2026-11-30T23_58_28_173Z-debug.log
""")
sys.exit(1)
'''


@pytest.mark.parametrize("script, cause", [
    (FAILING_NPM_11, "FetchError: request to http://127.0.0.1:9/jquery failed, reason: connect ECONNREFUSED"),
    (FAILING_NPM_6, "code E404 / 404 Not Found - GET https://registry.npmjs.org/jquery - Not found"),
])
def test_a_failing_npm_says_why(tmp_path, monkeypatch, capsys, script: str, cause: str) -> None:
    """npm 11 writes `npm error` lines (not `npm ERR!`): the error named only npm's log file, not the cause."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "npm").write_text(f"#!{sys.executable}\n" + script)
    (bin_dir / "npm").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    static = tmp_path / "static"
    static.mkdir()
    assert visdom_static.main(["--static-dir", str(static)]) == 1
    err = capsys.readouterr().err
    assert cause in err and "A complete log" not in err and " at " not in err, err
    assert len(err.strip().splitlines()) == 1, err


def test_make_install_goes_on_without_the_registry(tmp_path, monkeypatch, capsys) -> None:
    """visdom's scripts serve only the live plots: `make install` failed (and with it `make demo` and `make test`)
    where npm could not reach its registry. Now a warning with the command that retries; later calls repeat it
    without running npm again; a plain run tries again."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    calls = tmp_path / "npm_calls"
    fake_npm = tmp_path / "npm"
    fake_npm.write_text(f"#!{sys.executable}\nopen({str(calls)!r}, 'a').write('x')\n" + FAILING_NPM_11)
    fake_npm.chmod(0o755)
    static = tmp_path / "static"
    static.mkdir()
    # the Makefile's own recipe, its python standing in for the venv's with the test's static folder and npm
    fake_python = tmp_path / "python"
    fake_python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@" --static-dir {static} --npm {fake_npm}\n')
    fake_python.chmod(0o755)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    make = ["make", "--no-print-directory", "-o", ".venv/.installed", "install", f"PY={fake_python}"]
    for attempt in (1, 2):
        result = subprocess.run(make, cwd=root, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "warning: visdom's browser scripts are not installed (npm pack " in result.stderr
        assert "connect ECONNREFUSED" in result.stderr and "-m replay.visdom_static` once" in result.stderr
        assert calls.read_text() == "x", attempt  # npm ran once: the second call only repeats the warning
    assert not (static / VERSION_FILE).exists()
    assert visdom_static.main(["--static-dir", str(static), "--npm", str(fake_npm)]) == 1  # a plain run tries
    assert calls.read_text() == "xx" and "connect ECONNREFUSED" in capsys.readouterr().err


FAKE_NPM = '''
import io, json, os, sys, tarfile
destination = sys.argv[sys.argv.index("--pack-destination") + 1]
entries = []
for spec in sys.argv[sys.argv.index("--pack-destination") + 2:]:
    name, version = spec.rsplit("@", 1)
    filename = f"{name}-{version}.tgz"
    with tarfile.open(os.path.join(destination, filename), "w:gz") as archive:
        data = b"window.jQuery = 'tampered';"
        info = tarfile.TarInfo("package/dist/jquery.min.js")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    entries.append({"name": name, "filename": filename})
print(json.dumps(entries))
'''


def _screenshot(url: str, path: str, profile: str) -> np.ndarray:
    """
    :return: the page as an (H, W, 3) uint8 array, rendered by headless chromium
    """
    # Flags as on this machine's closed network: no background connections, a fresh profile, no sandbox as root.
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--hide-scrollbars", f"--user-data-dir={profile}", "--window-size=1280,900",
               "--virtual-time-budget=15000", f"--screenshot={path}", url]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and os.path.isfile(path), result.stderr[-2000:]
    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"))


def _pixelsOf(image: np.ndarray, rgb: tuple[int, int, int], tolerance: int = 40) -> int:
    return int((np.abs(image.astype(np.int32) - np.array(rgb)).sum(axis=2) <= tolerance).sum())


def test_curve_is_visible_in_a_browser(server: tuple[int, str], tmp_path) -> None:
    if CHROMIUM is None:
        reason = "chromium is not installed (Debian package chromium; `make test` installs it when run as root)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    port, log_file = server
    page = f"{serverUrl(port)}/env/page_test"
    empty = _screenshot(page, str(tmp_path / "empty.png"), str(tmp_path / "profile1"))
    plotter = VisdomPlotter(port=port, env_name="page_test", legend="ppo2", episode_window=5)
    timesteps = np.arange(1, 61) * 100
    plotter.update(timesteps, 10 * np.sin(timesteps / 600.0))
    assert plotter.enabled
    shot = _screenshot(page, str(tmp_path / "curve.png"), str(tmp_path / "profile2"))
    # The smoothed trace (orange) and the raw one (blue) are drawn; the page without the plot has neither.
    assert _pixelsOf(shot, SMOOTHED_RGB) > 300 and _pixelsOf(shot, RAW_RGB) > 300, "no curve in the screenshot"
    assert _pixelsOf(empty, SMOOTHED_RGB) == 0 and _pixelsOf(empty, RAW_RGB) < 50
    # Every file the browser asked the server for was there (nothing fetched elsewhere: the network is closed)
    with open(log_file) as handle:
        failed = [line for line in handle if "tornado.access" in line and re.search(r" (4\d\d|5\d\d) GET ", line)]
    assert not failed, failed
