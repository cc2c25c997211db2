"""A PEP 517 build backend for `pip install .`, with nothing to download.

pyproject.toml names this file (backend-path) and requires nothing, so pip's
isolated build needs no package index: the wheel is built by ringprof's own
CMake, from the Debian packages install-deps.sh installs, for the Python that
runs the build. It holds the `ringprof` package (its .py files, the
_ringprof, _ringprof_tools and, where that Python imports torch,
_ringprof_torch extensions), libringprof.so beside them (the extensions find
it through RPATH $ORIGIN), and the `ringprof` command as a script.

    python3 -m venv --system-site-packages v && v/bin/pip install .
    python3 -m build --wheel --no-isolation          # Debian's python3-build

The build tree is build/pip-<python tag> in the source tree, kept between
builds (RINGPROF_PIP_BUILD_DIR moves it). CMake settings can be added with
--config-settings cmake-args="-DRINGPROF_TORCH=OFF ...".
"""
import base64
import hashlib
import os
import shlex
import stat
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

NAME = "ringprof"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        for line in f:
            if line.startswith("project(ringprof VERSION "):
                return line.split("VERSION ")[1].split()[0].rstrip(")")
    raise RuntimeError("ringprof_build: no version in CMakeLists.txt")


def _tag():
    impl = "cp%d%d" % sys.version_info[:2]
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return "%s-%s-%s" % (impl, impl, platform)


def _metadata():
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n"
            "Summary: An always-on sampling profiler for C++, CUDA and PyTorch programs\n"
            "Requires-Python: >=3.9\nLicense: see the source tree\n" % (NAME, _version()))


def _run(cmd):
    print("ringprof_build: " + " ".join(shlex.quote(c) for c in cmd), file=sys.stderr, flush=True)
    # pip's isolated build hides the interpreter's site-packages (PYTHONPATH,
    # PYTHONNOUSERSITE): CMake asks that interpreter whether it imports torch,
    # which must see what the interpreter sees when the package runs.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONNOUSERBASE")}
    subprocess.run(cmd, check=True, stdout=sys.stderr, env=env)


def _build(config_settings):
    build = os.environ.get("RINGPROF_PIP_BUILD_DIR") or os.path.join(ROOT, "build", "pip-" + _tag().split("-")[0])
    extra = shlex.split((config_settings or {}).get("cmake-args", ""))
    _run(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DRINGPROF_BUILD_TESTS=OFF",
          "-DRINGPROF_BUILD_BENCH=OFF", "-DRINGPROF_BUILD_EXAMPLES=OFF", "-DRINGPROF_PYTHON=ON",
          "-DPython3_EXECUTABLE=" + sys.executable, "-DRINGPROF_PYTHON_BUILD_RPATH=$ORIGIN"] + extra)
    _run(["cmake", "--build", build, "-j", str(os.cpu_count() or 1), "--target", "ringprof_python", "ringprof_cli"])
    return build


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (arcname, digest, len(data))


def _write_wheel(build, wheel_directory):
    version = _version()
    dist_info = "%s-%s.dist-info" % (NAME, version)
    data_dir = "%s-%s.data" % (NAME, version)
    stage = os.path.join(build, "python", NAME)
    files = []  # (arcname, path, executable)
    for entry in sorted(os.listdir(stage)):
        path = os.path.join(stage, entry)
        if entry.endswith(".py") or entry.endswith(".so"):
            files.append((NAME + "/" + entry, path, False))
    lib = os.path.realpath(os.path.join(build, "libringprof.so"))
    files.append((NAME + "/libringprof.so.0", lib, False))  # the soname the extensions ask for
    files.append((data_dir + "/scripts/ringprof", os.path.join(build, "tools", "ringprof"), True))
    name = "%s-%s-%s.whl" % (NAME, version, _tag())
    path = os.path.join(wheel_directory, name)
    record = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        def add(arcname, data, executable=False):
            info = zipfile.ZipInfo(arcname, date_time=(2026, 1, 1, 0, 0, 0))
            # A regular file's mode: pip gives a script its executable bits only then.
            info.external_attr = (stat.S_IFREG | (0o755 if executable else 0o644)) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
            record.append(_record_line(arcname, data))
        for arcname, src, executable in files:
            with open(src, "rb") as f:
                add(arcname, f.read(), executable)
        add(dist_info + "/METADATA", _metadata().encode())
        add(dist_info + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: ringprof_build\nRoot-Is-Purelib: false\n"
                                   "Tag: %s\n" % _tag()).encode())
        record.append(dist_info + "/RECORD,,")
        info = zipfile.ZipInfo(dist_info + "/RECORD", date_time=(2026, 1, 1, 0, 0, 0))
        info.external_attr = (stat.S_IFREG | 0o644) << 16
        z.writestr(info, "\n".join(record) + "\n")
    return name


# ---- PEP 517 hooks ----

def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist_info = "%s-%s.dist-info" % (NAME, _version())
    os.makedirs(os.path.join(metadata_directory, dist_info), exist_ok=True)
    with open(os.path.join(metadata_directory, dist_info, "METADATA"), "w") as f:
        f.write(_metadata())
    return dist_info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(_build(config_settings), wheel_directory)


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_sdist(sdist_directory, config_settings=None):
    """The tracked files of the source tree (git ls-files), as NAME-VERSION.tar.gz."""
    import tarfile
    base = "%s-%s" % (NAME, _version())
    listed = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], check=True, capture_output=True).stdout
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in sorted(p for p in listed.decode().split("\0") if p):
            t.add(os.path.join(ROOT, rel), arcname=base + "/" + rel, recursive=False)
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write(_metadata())
        t.add(f.name, arcname=base + "/PKG-INFO")
        os.unlink(f.name)
    return name
