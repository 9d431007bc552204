"""Code search for agents: a per-workspace index (files cut into chunks, definitions, git history)
kept warm and fresh by the runner, answered by search.query."""
