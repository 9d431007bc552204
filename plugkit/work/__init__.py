"""plugkit work: the runner driving coding agents as workers, one git worktree per .prd item."""
