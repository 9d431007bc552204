"""The runner's SQLite stores: the OS resource (a file, its connection, its lock) behind a port
the core calls. gates.py: the gate ledger (gates.sqlite3) and its hash chain (gate_chain.py)."""
