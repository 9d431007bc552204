"""What passes between the runner's Ray placement, its driver process and the Ray task on a node
(`plugkit work --runtime ray`): the driver's program name, its exit codes."""

# The driver: a process the runner starts as the attempt's worker task (runner/node/driver.py).
# Named, not imported: the runner's core never loads Ray nor the node side's code.
DRIVER_MODULE = "runner.node.driver"

NODE_LOST_RC = 75  # the node went away: the attempt is killed/node_lost and placed again
CLUSTER_RC = 76  # the cluster could not be reached or refused the task: a spawn failure
BAD_OBJECTS_RC = 77  # the worker wrote a forged or corrupt object on its node: the item is held
