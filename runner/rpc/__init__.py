"""The JSON-RPC layer: one module per namespace (the table is in namespaces.py), the
typed Context every method receives (context.py), dispatch and error mapping (dispatch.py)."""

# The table was defined here before namespaces.py; tests still name it through the package.
from runner.rpc.namespaces import NAMESPACES, Methods, build_methods  # noqa: F401
