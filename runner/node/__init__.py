"""The Ray placement's programs outside the runner daemon: on the supervisor's machine the
gateway, the runner's one Ray driver per cluster (gateway.py, placing an attempt: placing.py,
choice.py), and the thin driver a runner starts as each attempt's worker task (driver.py); and
what the gateway's Ray tasks run on a node (task.py with clone.py and hosting.py: the attempt held by the node's own runner; auth.py's
node-key proof; probe.py for `plugkit doctor`).

Separate processes, never imported by the daemon: runner.core names the driver by its module
(plugkit/protocol/node.py) and shares only the typed messages there with it. This package sees
plugkit's kernel and runner.system's adapters (the sandbox, the worker's object store), nothing
above them (pyproject's contracts node-apart and core-not-node).
"""
