"""The browser scripts of visdom's page, brought in from the npm registry at install time.

visdom 0.2.4 keeps only its own ``main.js`` in the package; ``python -m visdom.server`` downloads the rest (React,
Plotly, jQuery, Bootstrap, d3, MathJax, fonts) from CDNs at every start unless ``static/version.built`` names the
installed visdom version and every file is there. This module puts the very same files in place from the npm
registry, with ``npm pack`` (or a plain download when npm is not installed; the files are checked against the SHA-256 sums
below), writes ``version.built`` and
the packages' licences, so that ``python -m replay.visdom_server`` (and visdom's own command) serve the page
without any network access::

    python -m replay.visdom_static              # install what is missing; idempotent
    python -m replay.visdom_static --optional   # the same, but a failure is a warning and exit 0 (`make install`)
    python -m replay.visdom_static --check      # exit 1 and list what is missing

visdom is optional (the live plots), so ``make install`` goes on without the scripts when the registry cannot be
reached: ``--optional`` prints a warning with the command that retries, and records the failure in
``static/install-failed.txt``; a later ``--optional`` run repeats the warning without trying again (no network
wait at every ``make``). A plain run always tries, and removes the record once the scripts are in place.

Packages, versions and licences are listed in third_party/visdom_static/NOTICE.md.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
from collections.abc import Sequence

from srl_toolbox.cli import CLIParser, UsageError, pythonCommand, runCommand
from srl_toolbox.files import atomicPath, sha256File

# The visdom version these files belong to (what download_scripts writes into static/version.built)
VISDOM_VERSION = "0.2.4"
VERSION_FILE = "version.built"
# What the last --optional install that failed said (its presence: do not try again under --optional)
FAILED_FILE = "install-failed.txt"
# Where tarballs come from when npm is not installed (npm's own setting when it is).
DEFAULT_REGISTRY = os.environ.get("npm_config_registry") or os.environ.get("NPM_CONFIG_REGISTRY") \
    or "https://registry.npmjs.org/"
LICENCE_FOLDER = "licenses"

# npm package -> (version, SPDX licence, licence file inside the package or None when it ships none)
PACKAGES: dict[str, tuple[str, str, str | None]] = {
    "bootstrap": ("3.3.7", "MIT", "LICENSE"),
    "classnames": ("2.2.5", "MIT", "LICENSE"),
    "d3": ("3.5.17", "BSD-3-Clause", "LICENSE"),
    "d3-selection-multi": ("1.0.1", "BSD-3-Clause", "LICENSE"),
    "jquery": ("3.1.1", "MIT", "LICENSE.txt"),
    "layout-bin-packer": ("1.4.0", "ISC", None),
    "mathjax": ("2.7.5", "Apache-2.0", "LICENSE"),
    "plotly.js-dist-min": ("2.11.1", "MIT", "LICENSE"),
    "react": ("16.2.0", "MIT", "LICENSE"),
    "react-dom": ("16.2.0", "MIT", "LICENSE"),
    "react-grid-layout": ("0.16.3", "MIT", "LICENSE"),
    "react-modal": ("3.1.10", "MIT", "LICENSE"),
    "react-resizable": ("1.4.6", "MIT", None),
    "save-svg-as-png": ("1.4.17", "MIT", "LICENSE"),
    "sjcl": ("1.0.7", "BSD-2-Clause OR GPL-2.0-only", "LICENSE.txt"),
}

_MATHJAX = "js/mathjax/2.7.5/"
# File under visdom's static folder (the names download_scripts uses) -> (npm package, path inside it, SHA-256)
FILES: dict[str, tuple[str, str, str]] = {
    "js/jquery.min.js": ("jquery", "dist/jquery.min.js",
                         "85556761a8800d14ced8fcd41a6b8b26bf012d44a318866c0d81a62092efd9bf"),
    "js/bootstrap.min.js": ("bootstrap", "dist/js/bootstrap.min.js",
                            "53964478a7c634e8dad34ecc303dd8048d00dce4993906de1bacf67f663486ef"),
    "css/bootstrap.min.css": ("bootstrap", "dist/css/bootstrap.min.css",
                              "f75e846cc83bd11432f4b1e21a45f31bc85283d11d372f7b19accd1bf6a2635c"),
    "fonts/glyphicons-halflings-regular.eot": ("bootstrap", "dist/fonts/glyphicons-halflings-regular.eot",
                                               "13634da87d9e23f8c3ed9108ce1724d183a39ad072e73e1b3d8cbf646d2d0407"),
    "fonts/glyphicons-halflings-regular.woff2": ("bootstrap", "dist/fonts/glyphicons-halflings-regular.woff2",
                                                 "fe185d11a49676890d47bb783312a0cda5a44c4039214094e7957b4c040ef11c"),
    "fonts/glyphicons-halflings-regular.woff": ("bootstrap", "dist/fonts/glyphicons-halflings-regular.woff",
                                                "a26394f7ede100ca118eff2eda08596275a9839b959c226e15439557a5a80742"),
    "fonts/glyphicons-halflings-regular.ttf": ("bootstrap", "dist/fonts/glyphicons-halflings-regular.ttf",
                                               "e395044093757d82afcb138957d06a1ea9361bdcf0b442d06a18a8051af57456"),
    # The browser asks for the plain name; visdom's own start-up checks the name with the fragment.
    "fonts/glyphicons-halflings-regular.svg": ("bootstrap", "dist/fonts/glyphicons-halflings-regular.svg",
                                               "42f60659d265c1a3c30f9fa42abcbb56bd4a53af4d83d316d6dd7a36903c43e5"),
    "fonts/glyphicons-halflings-regular.svg#glyphicons_halflingsregular": (
        "bootstrap", "dist/fonts/glyphicons-halflings-regular.svg",
        "42f60659d265c1a3c30f9fa42abcbb56bd4a53af4d83d316d6dd7a36903c43e5"),
    "js/react-react.min.js": ("react", "umd/react.production.min.js",
                              "c28b91922bca297037cba02ec85c1c0dc179d1a942355f0b6e085f6021fa67df"),
    "js/react-dom.min.js": ("react-dom", "umd/react-dom.production.min.js",
                            "f61ac9c43e0842c58774da732e424a606898fd211914925252ac9e64f34a77c8"),
    "js/react-modal.min.js": ("react-modal", "dist/react-modal.min.js",
                              "096ce258905585d06758012ec6261a5dc52b11d82e112450670666109bbc6f35"),
    "js/plotly-plotly.min.js": ("plotly.js-dist-min", "plotly.min.js",
                                "dd146b2db18d4ced4743018fa65ada14b723bf1aae08b559a5576ba8116cd889"),
    "js/sjcl.js": ("sjcl", "sjcl.js", "d09a8688f37c7442bb1e6699b46efb191d9281ef05a492586fa0f54dc4e5110a"),
    "js/layout_bin_packer.js": ("layout-bin-packer", "dist/layout-bin-packer.js",
                                "312ed1834f78f497ac3c9e943ce4657679d26ad8cd62d7f722912d26c9d0ed29"),
    "js/layout-bin-packer.js.map": ("layout-bin-packer", "dist/layout-bin-packer.js.map",
                                    "7f39df86278f0cd247daee3ef579a09df79078e1c585bc7b8ef968266e06c0b5"),
    "js/d3.v3.min.js": ("d3", "d3.min.js", "76c39718d1c0a3fb321676b3b7e29306c0907919a5716d5728bd1b08ae0169e7"),
    "js/d3-selection-multi.v1.js": ("d3-selection-multi", "build/d3-selection-multi.js",
                                    "22f89270afc6f231f8b974e37172a15525f28035276ca960f8ccdce622700315"),
    "js/saveSvgAsPng.js": ("save-svg-as-png", "lib/saveSvgAsPng.js",
                           "71c46f2411daf6ba2a4e38ec563d92f1da42f88da9247a2bdd5c8a10bde93ae3"),
    "css/react-resizable-styles.css": ("react-resizable", "css/styles.css",
                                       "7c9122a97c86b4be7839fd3d23c37d06aec1ece3ef830f8bae3a8c121056d528"),
    "css/react-grid-layout-styles.css": ("react-grid-layout", "css/styles.css",
                                         "4ec035a50c31ec008bab5794e88ef056043e63aaa8dcbb24d36e5a73780b4dbc"),
    "fonts/classnames": ("classnames", "index.js", "89f83f030d5f5234436502f5d3ecfb01c1baaabe2a82785016563eb5800b674e"),
    _MATHJAX + "MathJax.js": ("mathjax", "MathJax.js",
                              "9ef249bfdc162849bcf2abe8425f5e90bd89fa4fd1588b1a492731c65b2bbfc9"),
    _MATHJAX + "config/Safe.js": ("mathjax", "config/Safe.js",
                                  "c3d9f149afb82798a73d14a9737a82b5cb8bb8d217de631030a702d4ae0c1d8e"),
    _MATHJAX + "config/TeX-AMS-MML_HTMLorMML.js": ("mathjax", "config/TeX-AMS-MML_HTMLorMML.js",
                                                   "f380ca5d5257b34fc5f0e4cccd7e1447dd3dfa3b65e06ed23f2a4f6af17e19f0"),
    _MATHJAX + "extensions/Safe.js": ("mathjax", "extensions/Safe.js",
                                      "1b44a7b48d991ab692da9074fe8582cd47d438b57445af064ce30d2eac3871dd"),
    _MATHJAX + "jax/output/SVG/config.js": ("mathjax", "jax/output/SVG/config.js",
                                            "d680518add37c0d1bf50dea3c93a4cd2aa703d5e1d3e2748a0e016c26aee253c"),
    _MATHJAX + "jax/output/SVG/jax.js": ("mathjax", "jax/output/SVG/jax.js",
                                         "39d9a95fcde78f560cb5fcf11bb434ca5ad2349d74737b71160c8f473861fb5d"),
    _MATHJAX + "jax/output/SVG/fonts/TeX/fontdata.js": (
        "mathjax", "jax/output/SVG/fonts/TeX/fontdata.js",
        "c23d4bebe304610f617983eaeab7f8aa5e13a45391318f30ccf2650fbff939e1"),
    _MATHJAX + "jax/output/SVG/fonts/TeX/Size1/Regular/Main.js": (
        "mathjax", "jax/output/SVG/fonts/TeX/Size1/Regular/Main.js",
        "3e1c830e9c05a62f9caf86f9e13d926c38c5136b1eba8f6171953e839ce3941f"),
}


def staticFolder() -> str:
    """
    :return: the ``static`` folder of the installed visdom package (where its server looks for the scripts)
    """
    from visdom.utils.shared_utils import get_visdom_path  # visdom is imported only when its files are installed

    return get_visdom_path("static")


def missingFiles(folder: str | None = None) -> list[str]:
    """
    :param folder: visdom's static folder (default: the installed visdom's)
    :return: the files of :data:`FILES` that are absent or differ from the expected content, plus
        ``version.built`` when it does not name :data:`VISDOM_VERSION`
    """
    folder = folder or staticFolder()
    missing = [name for name, (_, _, digest) in FILES.items()
               if not os.path.isfile(os.path.join(folder, name)) or sha256File(os.path.join(folder, name)) != digest]
    try:
        with open(os.path.join(folder, VERSION_FILE), encoding="utf-8") as handle:
            built = handle.read().strip()
    except OSError:
        built = None
    if built != VISDOM_VERSION:
        missing.append(VERSION_FILE)
    return missing


def _registryDownload(packages: Sequence[str], destination: str, registry: str) -> dict[str, str]:
    """
    Download the packages' tarballs straight from the registry (when npm is not installed: a machine with only
    Python). Their content is checked against :data:`FILES`' SHA-256 sums afterwards, as with npm.

    :param packages: npm package names (their versions come from :data:`PACKAGES`)
    :param destination: folder that receives the tarballs
    :param registry: the npm registry's base URL
    :return: package name -> tarball path
    :raises RuntimeError: the registry is unreachable (one line)
    """

    tarballs: dict[str, str] = {}
    for name in packages:
        version = PACKAGES[name][0]
        url = f"{registry.rstrip('/')}/{name}/-/{name.split('/')[-1]}-{version}.tgz"
        try:
            with urllib.request.urlopen(url, timeout=120) as response:
                data = response.read()
        except (OSError, urllib.error.URLError) as error:
            raise RuntimeError(f"npm is not installed and the npm registry is unreachable ({url}: {error}); install "
                               "npm or copy the scripts (see third_party/visdom_static/NOTICE.md)") from None
        tarballs[name] = os.path.join(destination, f"{name}-{version}.tgz")
        with open(tarballs[name], "wb") as handle:
            handle.write(data)
    return tarballs


def _npmError(stdout: str, stderr: str) -> str:
    """
    :param stdout: what a failed ``npm ... --json`` wrote on stdout (npm 7 and later: ``{"error": {"summary",
        "detail"}}``)
    :param stderr: what it wrote on stderr (``npm error ...`` lines since npm 10, ``npm ERR! ...`` before)
    :return: the cause in one line: the JSON error's summary and detail, else npm's first error lines (not the
        stack trace nor the log file's path), else its last line
    """
    try:
        error = json.loads(stdout).get("error")
    except (ValueError, AttributeError):
        error = None
    if isinstance(error, dict) and error.get("summary"):
        summary, detail = (" ".join(str(error.get(key) or "").split()) for key in ("summary", "detail"))
        return f"{summary} ({detail})" if detail else summary
    lines = [re.sub(r"^npm (ERR!|error)\s*", "", line).strip() for line in stderr.splitlines()
             if re.match(r"npm (ERR!|error)(\s|$)", line)]
    cause = [line for line in lines if line and not line.startswith(("at ", "A complete log of this run"))
             and not line.endswith(".log")]
    return " / ".join(cause[:4] or stderr.strip().splitlines()[-1:]) or "no message"


def _npmPack(packages: Sequence[str], destination: str, npm: str, registry: str = DEFAULT_REGISTRY) -> dict[str, str]:
    """
    Download the packages' tarballs with ``npm pack`` (npm checks each against the registry's integrity hash and
    keeps it in its cache, so a second install needs no network), or from the registry directly without npm.

    :param packages: npm package names (their versions come from :data:`PACKAGES`)
    :param destination: folder that receives the tarballs
    :param npm: the npm executable
    :param registry: the registry used when npm is not installed
    :return: package name -> tarball path
    :raises RuntimeError: npm failed, or without npm the registry is unreachable (one line)
    """
    if shutil.which(npm) is None:
        return _registryDownload(packages, destination, registry)
    specs = [f"{name}@{PACKAGES[name][0]}" for name in packages]
    result = subprocess.run([npm, "pack", "--json", "--pack-destination", destination, *specs],
                            capture_output=True, text=True, cwd=destination)
    if result.returncode != 0:
        raise RuntimeError(f"npm pack {' '.join(specs)} failed: {_npmError(result.stdout, result.stderr)}")
    tarballs = {entry["name"]: os.path.join(destination, entry["filename"]) for entry in json.loads(result.stdout)}
    absent = [name for name in packages if name not in tarballs]
    if absent:
        raise RuntimeError(f"npm pack did not return {', '.join(absent)}")
    return tarballs


def _writeFile(path: str, data: bytes) -> None:
    with atomicPath(path) as tmp_path, open(tmp_path, "wb") as handle:
        handle.write(data)


def installScripts(folder: str | None = None, npm: str = "npm", verbose: bool = True,
                   registry: str = DEFAULT_REGISTRY) -> list[str]:
    """
    Put every file of :data:`FILES` into visdom's static folder (only those missing or different), with the
    packages' licences under ``static/licenses/`` and ``version.built``. Doing nothing costs only the checksums.

    :param folder: visdom's static folder (default: the installed visdom's)
    :param npm: the npm executable
    :param verbose: print what is fetched
    :param registry: the registry used when npm is not installed
    :return: the files written
    :raises RuntimeError: npm missing or failing, or a file whose content differs from its checksum (one line)
    """
    folder = folder or staticFolder()
    missing = missingFiles(folder)
    if not missing:
        return []
    wanted = [name for name in missing if name in FILES]
    packages = sorted({FILES[name][0] for name in wanted})
    written: list[str] = []
    if packages:
        if verbose:
            print(f"Fetching visdom's browser scripts from the npm registry: {', '.join(packages)}", flush=True)
        with tempfile.TemporaryDirectory(prefix="visdom-static-") as tmp_dir:
            tarballs = _npmPack(packages, tmp_dir, npm, registry)
            for package in packages:
                with tarfile.open(tarballs[package]) as archive:
                    for name in wanted:
                        if FILES[name][0] != package:
                            continue
                        member = archive.extractfile(f"package/{FILES[name][1]}")
                        data = member.read() if member is not None else b""
                        if hashlib.sha256(data).hexdigest() != FILES[name][2]:
                            raise RuntimeError(f"{package}@{PACKAGES[package][0]}/{FILES[name][1]} does not match "
                                               "its expected SHA-256; nothing more was installed")
                        _writeFile(os.path.join(folder, name), data)
                        written.append(name)
                    _writeLicence(archive, package, folder)
    # Written last: with it, visdom's own start-up trusts the files above and downloads nothing.
    _writeFile(os.path.join(folder, VERSION_FILE), VISDOM_VERSION.encode())
    written.append(VERSION_FILE)
    return written


def _writeLicence(archive: tarfile.TarFile, package: str, folder: str) -> None:
    """
    :param archive: the package's npm tarball
    :param package: its name
    :param folder: visdom's static folder; the licence goes to ``licenses/<package>-<version>.txt``
    """
    version, spdx, licence_file = PACKAGES[package]
    text = f"{package} {version} (npm registry), licence: {spdx}\n\n".encode()
    member = archive.extractfile(f"package/{licence_file}") if licence_file else None
    text += member.read() if member is not None else b"(the package ships no licence file; see its package.json)\n"
    _writeFile(os.path.join(folder, LICENCE_FOLDER, f"{package}-{version}.txt"), text)


def _warnNotInstalled(cause: str) -> None:
    """Say on stderr that the live plots' page will lack its scripts, why, and the command that tries again."""
    print(f"warning: visdom's browser scripts are not installed ({cause}): the live plots' page will lack its "
          f"scripts; everything else works. Retry with `{pythonCommand()} -m replay.visdom_static` once the npm "
          "registry is reachable (the files: third_party/visdom_static/NOTICE.md)", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """
    :param argv: command-line arguments (default: ``sys.argv[1:]``)
    :return: exit code (0: everything in place, or ``--optional``; 1: ``--check`` found files missing or installing
        failed)
    """
    parser = CLIParser(prog="python -m replay.visdom_static",
                       description="Install visdom's browser scripts from the npm registry (once, at install time).")
    parser.add_argument("--check", action="store_true", help="only report what is missing (exit 1 if anything is)")
    parser.add_argument("--static-dir", default=None, help="visdom's static folder [the installed visdom's]")
    parser.add_argument("--npm", default="npm", help="npm executable [npm]")
    parser.add_argument("--optional", action="store_true",
                        help="a failure is a warning and exit 0, and is not tried again by later --optional runs "
                             "(what `make install` runs: visdom's live plots are optional)")
    args = parser.parse_args(argv)
    if args.static_dir is not None and not os.path.isdir(args.static_dir):
        raise UsageError(f"--static-dir {args.static_dir!r} is not a folder")
    folder = args.static_dir or staticFolder()
    if args.check:
        missing = missingFiles(folder)
        if missing:
            more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            print(f"{len(missing)} of visdom's browser files missing in {folder}: {', '.join(missing[:5])}{more}; "
                  f"install them with {pythonCommand()} -m replay.visdom_static")
            return 1
        print(f"visdom's browser scripts are installed in {folder}")
        return 0
    failed_file = os.path.join(folder, FAILED_FILE)
    if args.optional and os.path.isfile(failed_file) and missingFiles(folder):
        with open(failed_file, encoding="utf-8", errors="replace") as handle:
            _warnNotInstalled(f"{handle.read().strip()}; not tried again")
        return 0
    try:
        written = installScripts(folder, npm=args.npm)
    except (RuntimeError, OSError) as error:
        if not args.optional:
            print(f"error: {error}", file=sys.stderr)
            return 1
        with contextlib.suppress(OSError):  # (an unwritable folder: the warning at least, and tried again next time)
            _writeFile(failed_file, f"{error}\n".encode())
        _warnNotInstalled(str(error))
        return 0
    with contextlib.suppress(FileNotFoundError):
        os.remove(failed_file)
    print(f"visdom's browser scripts: {len(written)} file(s) installed in {folder}" if written else
          f"visdom's browser scripts: already installed in {folder}")
    return 0


if __name__ == "__main__":
    runCommand(main)
