"""A worker's attack on the object store: a loose object written straight into the store it can reach."""

FORGE = r"""python3 - <<'EOF'
import os, subprocess, zlib
oid = subprocess.check_output(["git", "rev-parse", "HEAD:README"], text=True).strip()
store = subprocess.check_output(["git", "rev-parse", "--git-path", "objects"], text=True).strip()
path = os.path.join(store, oid[:2], oid[2:])
body = b"the worker's code\n"
try:
    os.unlink(path)
except OSError as exc:
    print("UNLINK", exc)
os.makedirs(os.path.dirname(path), exist_ok=True)
with open(path, "wb") as fh:
    fh.write(zlib.compress(b"blob %d\0" % len(body) + body))
print("FORGED", path)
EOF"""
