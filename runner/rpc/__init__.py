"""The JSON-RPC layer: one module per namespace (the table is in namespaces.py), the
typed Context every method receives (context.py), dispatch and error mapping (dispatch.py)."""
