"""The package's PEP 517 build backend, with the standard library only.

pip runs it from this tree (`backend-path` in pyproject.toml) and needs
nothing from a package index to build, so `pip install ./clients/python`
works offline. It writes a pure-Python wheel of the `sluice` package (and
an sdist, and a PEP 660 editable wheel), its metadata read from the
[project] table of pyproject.toml.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "sluice"
WHEEL_TAG = "py3-none-any"


def read_project(path=os.path.join(ROOT, "pyproject.toml")):
    """Return the [project] table of pyproject.toml as a dict."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        import tomllib  # Python 3.11+
    except ImportError:
        return _parse_project(data.decode("utf-8"))
    return tomllib.loads(data.decode("utf-8"))["project"]


def _parse_project(text):
    """Read the [project] table's one-line `key = value` entries (strings
    and lists of strings, the only forms the table uses) where tomllib is
    missing (Python before 3.11)."""
    import ast

    out, inside = {}, False
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            inside = line == "[project]"
            continue
        if not inside or not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ValueError("pyproject.toml: cannot read %r in [project]" % line)
        out[key.strip()] = ast.literal_eval(value.strip())
    return out


def _names(project):
    """The distribution name as wheels spell it, and the version."""
    name = re.sub(r"[-_.]+", "_", project["name"]).lower()
    return name, project["version"]


def _metadata(project):
    """The core metadata (METADATA / PKG-INFO), version 2.1."""
    lines = [
        "Metadata-Version: 2.1",
        "Name: %s" % project["name"],
        "Version: %s" % project["version"],
    ]
    if project.get("description"):
        lines.append("Summary: %s" % project["description"])
    if project.get("requires-python"):
        lines.append("Requires-Python: %s" % project["requires-python"])
    lines += ["Classifier: %s" % c for c in project.get("classifiers", [])]
    lines += ["Requires-Dist: %s" % d for d in project.get("dependencies", [])]
    body = ""
    readme = os.path.join(ROOT, "README.md")
    if os.path.exists(readme):
        lines.append("Description-Content-Type: text/markdown")
        with open(readme, encoding="utf-8") as f:
            body = f.read()
    return ("\n".join(lines) + "\n\n" + body).encode("utf-8")


def _package_files():
    """(path in the archive, path on disk) of every file of the package."""
    out = []
    base = os.path.join(ROOT, PACKAGE)
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for fn in sorted(filenames):
            if fn.endswith((".py", ".typed")):
                full = os.path.join(dirpath, fn)
                out.append((os.path.relpath(full, ROOT).replace(os.sep, "/"), full))
    return out


def _dist_info(project):
    """The files of the .dist-info directory, but RECORD."""
    return {
        "METADATA": _metadata(project),
        "WHEEL": ("Wheel-Version: 1.0\nGenerator: sluice-build\nRoot-Is-Purelib: true\nTag: %s\n" % WHEEL_TAG).encode(),
        "top_level.txt": (PACKAGE + "\n").encode(),
    }


def _write_wheel(wheel_directory, files):
    """Write a wheel of files ({archive path: bytes}), adding its RECORD."""
    project = read_project()
    name, version = _names(project)
    info = "%s-%s.dist-info" % (name, version)
    files = dict(files)
    for fn, data in _dist_info(project).items():
        files["%s/%s" % (info, fn)] = data
    record = io.StringIO()
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.write("%s,sha256=%s,%d\n" % (path, digest, len(data)))
    record.write("%s/RECORD,,\n" % info)
    files["%s/RECORD" % info] = record.getvalue().encode()
    wheel_name = "%s-%s-%s.whl" % (name, version, WHEEL_TAG)
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as zf:
        for path, data in files.items():
            zi = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            zi.external_attr = 0o644 << 16
            zf.writestr(zi, data, zipfile.ZIP_DEFLATED)
    return wheel_name


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    """Write the .dist-info directory alone (pip reads it before building)."""
    project = read_project()
    info = "%s-%s.dist-info" % _names(project)
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    for fn, data in _dist_info(project).items():
        with open(os.path.join(metadata_directory, info, fn), "wb") as f:
            f.write(data)
    return info


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """Write the wheel of the package; return its file name."""
    return _write_wheel(wheel_directory, {arc: _read(disk) for arc, disk in _package_files()})


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """Write a wheel whose .pth puts this tree on sys.path (pip install -e)."""
    name, _ = _names(read_project())
    return _write_wheel(wheel_directory, {"_%s_editable.pth" % name: (ROOT + "\n").encode()})


def build_sdist(sdist_directory, config_settings=None):
    """Write the source archive: pyproject.toml, the backend, the package."""
    project = read_project()
    name, version = _names(project)
    base = "%s-%s" % (name, version)
    members = [("PKG-INFO", _metadata(project))]
    for rel in ["pyproject.toml", "README.md", "_build/backend.py"]:
        if os.path.exists(os.path.join(ROOT, rel)):
            members.append((rel, _read(os.path.join(ROOT, rel))))
    members += [(arc, _read(disk)) for arc, disk in _package_files()]
    out = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, out), "w:gz", format=tarfile.PAX_FORMAT) as tf:
        for rel, data in members:
            ti = tarfile.TarInfo("%s/%s" % (base, rel))
            ti.size, ti.mode, ti.mtime = len(data), 0o644, 0
            tf.addfile(ti, io.BytesIO(data))
    return out
