"""The lifecycle gates' pure model: phases, mutables, work items (.prd), evidence receipts,
the per-workspace state file and config. Standard library + pydantic only, no asyncio:
the runner calls these from worker threads and supplies what it witnessed as plain facts."""
