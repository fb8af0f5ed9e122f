"""Make the Kuka arm's low-poly visual meshes (``renderer="lowpoly"``): a one-off tool, never run by the envs.

It decimates the visual meshes of pybullet_data's kuka_iiwa arm (``kuka_iiwa/meshes/link_0.obj`` ..
``link_7.obj``) with fast-simplification's quadric decimation, recomputes smooth vertex normals (the originals are
smooth, one normal per vertex), and writes ``link_N.obj`` / ``link_N.mtl`` and a copy of
``kuka_iiwa/kuka_with_gripper2.sdf`` into environments/kuka/lowpoly/. The SDF copy differs from the original only in
its ``<uri>``s: the arm's visual meshes are the local low-poly ones, every other mesh (all collision meshes, the
fingers' visuals) stays pybullet_data's, written ``pybullet_data/...``, a prefix the env replaces with the installed
pybullet_data folder (see KukaButtonGymEnv._loadRobot). So physics is the original's: same collision shapes,
masses and inertias.

Invariants:

- the colours are the SDF's ``<material>`` (PyBullet ignores the .mtl's Kd when the SDF gives a material; the .mtl is
  copied unchanged all the same);
- every link keeps the same fraction of its triangles (``--fraction``), at least MIN_TRIANGLES;
- the output depends only on pybullet_data's files, the fraction and the fast-simplification version.

fast-simplification is not a dependency of the toolbox (``pip install fast-simplification``; the committed meshes
were made with 0.2.0). Usage: ``python -m environments.kuka.make_lowpoly [--fraction F] [--out DIR]``.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import tempfile
from collections.abc import Sequence

import numpy as np

from environments.bullet import pybullet_data
from environments.kuka.kuka_button_env import LOWPOLY_DATA_PREFIX, LOWPOLY_DIR
from srl_toolbox.cli import CLIParser, UsageError, checkWritableFolder, positiveFloat, runCommand

ROBOT_SDF = os.path.join("kuka_iiwa", "kuka_with_gripper2.sdf")
N_LINKS = 8
DEFAULT_FRACTION = 0.1  # chosen by measurement (tests/test_kuka_renderer.py's bounds), see docs/architecture.md
MIN_TRIANGLES = 24
NOTICE = "NOTICE.txt"  # the licence notice of the derived files: kept from the folder replaced (or the package's)


def readObj(path: str) -> tuple[np.ndarray, np.ndarray]:
    """
    :param path: a triangle-mesh .obj (``v`` and ``f`` lines; normals and texture indices are dropped)
    :return: vertices float64 (V, 3), triangles int (F, 3), 0-based
    """
    vertices, faces = [], []
    with open(path) as file:
        for line in file:
            fields = line.split()
            if not fields:
                continue
            if fields[0] == "v":
                vertices.append([float(x) for x in fields[1:4]])
            elif fields[0] == "f":
                corners = [int(field.split("/")[0]) - 1 for field in fields[1:]]
                faces.extend([corners[0], corners[i], corners[i + 1]] for i in range(1, len(corners) - 1))
    return np.array(vertices), np.array(faces, dtype=np.int64)


def vertexNormals(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """:return: unit normals per vertex, the mean of its triangles' normals weighted by their angle at the vertex"""
    normals = np.zeros_like(vertices)
    corners = vertices[faces]
    face_normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    face_normals /= np.maximum(np.linalg.norm(face_normals, axis=1, keepdims=True), 1e-300)
    for k in range(3):
        a = corners[:, (k + 1) % 3] - corners[:, k]
        b = corners[:, (k + 2) % 3] - corners[:, k]
        cosine = np.sum(a * b, axis=1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-300)
        np.add.at(normals, faces[:, k], face_normals * np.arccos(np.clip(cosine, -1.0, 1.0))[:, None])
    return normals / np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-300)


def writeObj(path: str, name: str, vertices: np.ndarray, faces: np.ndarray) -> None:
    """Write a smooth-shaded triangle mesh with one normal per vertex, using material ``None`` of ``name``.mtl."""
    normals = vertexNormals(vertices, faces)
    lines = [f"# {name}: pybullet_data's kuka_iiwa/meshes/{name}.obj decimated by environments/kuka/make_lowpoly.py",
             f"mtllib {name}.mtl", f"o {name}"]
    lines += [f"v {x:.6f} {y:.6f} {z:.6f}" for x, y, z in vertices]
    lines += [f"vn {x:.4f} {y:.4f} {z:.4f}" for x, y, z in normals]
    lines += ["usemtl None", "s 1"]
    lines += [f"f {a}//{a} {b}//{b} {c}//{c}" for a, b, c in faces + 1]
    with open(path, "w") as file:
        file.write("\n".join(lines) + "\n")


def decimate(vertices: np.ndarray, faces: np.ndarray, fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """:return: the mesh reduced to about ``fraction`` of its triangles (at least MIN_TRIANGLES), unused vertices dropped"""
    import fast_simplification  # the tool's own dependency, not the toolbox's

    target = max(MIN_TRIANGLES, round(len(faces) * fraction))
    points, triangles = fast_simplification.simplify(vertices.astype(np.float32), faces.astype(np.int32),
                                                     target_count=target)
    used = np.unique(triangles)
    remap = np.full(len(points), -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    return points[used].astype(np.float64), remap[triangles]


def sdfCopy(text: str) -> str:
    """:return: the SDF with the arm's visual meshes local and every other mesh uri prefixed by LOWPOLY_DATA_PREFIX"""
    def uri(match: re.Match) -> str:
        path = match.group(1).lstrip("/")
        local = re.fullmatch(r"meshes/(link_\d)\.obj", path)
        return f"<uri>{local.group(1) + '.obj' if local else LOWPOLY_DATA_PREFIX + 'kuka_iiwa/' + path}</uri>"

    header = ("<!-- environments/kuka/lowpoly: pybullet_data's kuka_iiwa/kuka_with_gripper2.sdf (bullet3, zlib "
              "licence) with the arm's visual meshes decimated by environments/kuka/make_lowpoly.py; uris starting "
              f"{LOWPOLY_DATA_PREFIX} are pybullet_data's files. -->\n")
    text = re.sub(r"<uri>([^<]+)</uri>", uri, text)
    return text.replace("<sdf ", header + "<sdf ", 1)


def makeLowPoly(fraction: float, out: str) -> list[tuple[str, int, int]]:
    """
    Write the meshes and the SDF into a new folder beside ``out``, with the NOTICE.txt of the folder it replaces (or
    of the package's lowpoly folder), then put it in ``out``'s place: the renderer never reads a mix of old and new
    meshes (an interrupted run leaves ``out`` as it was).

    :param fraction: fraction of each link's triangles to keep, in (0, 1]
    :param out: the folder to write (replaced when it exists)
    :return: (link, triangles before, triangles after) per link
    """
    parent = os.path.dirname(os.path.abspath(out))
    os.makedirs(parent, exist_ok=True)
    new = tempfile.mkdtemp(prefix=f".{os.path.basename(os.path.abspath(out))}.", dir=parent)
    try:
        counts = _writeLowPoly(fraction, new)
        notice = next((path for path in (os.path.join(out, NOTICE), os.path.join(LOWPOLY_DIR, NOTICE))
                       if os.path.isfile(path)), None)
        if notice is not None:
            shutil.copyfile(notice, os.path.join(new, NOTICE))
        os.chmod(new, 0o755)  # (mkdtemp's folder is private)
        if os.path.isdir(out):
            old = tempfile.mkdtemp(prefix=f".{os.path.basename(os.path.abspath(out))}.old.", dir=parent)
            try:
                os.replace(out, os.path.join(old, "meshes"))
                os.replace(new, out)
            finally:
                if not os.path.isdir(out) and os.path.isdir(os.path.join(old, "meshes")):
                    os.replace(os.path.join(old, "meshes"), out)  # put the old folder back
                shutil.rmtree(old)
        else:
            os.replace(new, out)
    finally:
        if os.path.isdir(new):
            shutil.rmtree(new)
    return counts


def _writeLowPoly(fraction: float, out: str) -> list[tuple[str, int, int]]:
    data = pybullet_data.getDataPath()
    meshes = os.path.join(data, "kuka_iiwa", "meshes")
    counts = []
    for link in range(N_LINKS):
        name = f"link_{link}"
        vertices, faces = readObj(os.path.join(meshes, name + ".obj"))
        small_vertices, small_faces = decimate(vertices, faces, fraction)
        writeObj(os.path.join(out, name + ".obj"), name, small_vertices, small_faces)
        shutil.copyfile(os.path.join(meshes, name + ".mtl"), os.path.join(out, name + ".mtl"))
        counts.append((name, len(faces), len(small_faces)))
    with open(os.path.join(data, ROBOT_SDF)) as file:
        text = sdfCopy(file.read())
    with open(os.path.join(out, os.path.basename(ROBOT_SDF)), "w") as file:
        file.write(text)
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    """
    :return: the exit status
    :raises UsageError: a fraction outside (0, 1], an output that is a file or not writable, fast-simplification
        not installed (nothing is written)
    """
    parser = CLIParser(prog="python -m environments.kuka.make_lowpoly",
                       description="Decimate the Kuka arm's visual meshes (renderer lowpoly)")
    parser.add_argument("--fraction", type=positiveFloat, default=DEFAULT_FRACTION,
                        help=f"fraction of each link's triangles to keep, in (0, 1] [{DEFAULT_FRACTION}]")
    parser.add_argument("--out", default=LOWPOLY_DIR, help="output folder, replaced [environments/kuka/lowpoly]")
    args = parser.parse_args(argv)
    if args.fraction > 1.0:
        raise UsageError(f"--fraction {args.fraction:g} must be in (0, 1]")
    checkWritableFolder(args.out, "--out")  # (a file where the folder goes, or a folder that takes no new file)
    out = os.path.realpath(args.out)
    if os.path.commonpath([out, os.path.realpath(os.getcwd())]) == out:
        raise UsageError(f"--out {args.out!r} holds the current folder, which the tool would replace; give another")
    if os.path.isdir(out) and os.listdir(out) and not os.path.isfile(os.path.join(out, os.path.basename(ROBOT_SDF))):
        raise UsageError(f"--out {args.out!r} holds other files (no {os.path.basename(ROBOT_SDF)}: not a low-poly mesh "
                         "folder), which replacing it would delete; give an empty or new folder")
    if importlib.util.find_spec("fast_simplification") is None:
        raise UsageError("fast-simplification is not installed (this tool's own dependency, not the toolbox's): "
                         "pip install fast-simplification")
    counts = makeLowPoly(args.fraction, args.out)
    for name, before, after in counts:
        print(f"{name}: {before} -> {after} triangles")
    print(f"total: {sum(c[1] for c in counts)} -> {sum(c[2] for c in counts)} triangles, written to {args.out}")
    return 0


if __name__ == "__main__":
    runCommand(main)
