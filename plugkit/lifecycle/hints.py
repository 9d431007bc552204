"""What an unmet gate condition means and the command that moves it, one row per condition:
`gate advance` says it under each condition it refuses for, so nobody has to guess what "a plan
pass" is or which verb resolves a mutable. Pure data (the client imports it)."""

# condition -> (what it asks for, the next command)
NEXT: dict[str, tuple[str, str]] = {
    "plan_pass_declared": ("a plan pass is one `plugkit gate advance` in PLAN: it says the plan was looked over",
                           "plugkit gate advance"),
    "last_pass_added_nothing": ("the plan is settled when a pass finds nothing new since the one before; this "
                                "advance counted as a pass and found the unknowns/items named, so the next pass "
                                "that adds nothing moves on",
                                "review them (plugkit gate status), then plugkit gate advance"),
    "all_mutables_known": ("every named unknown resolved by a run the runner witnessed",
                           "plugkit mutable resolve NAME TASK (TASK: a finished exec's id, or last)"),
    "emission_declared": ("the files this work writes, declared with their content",
                          "plugkit gate emit PATH..."),
    "emitted_files_match": ("the declared files as they are on disk now", "plugkit gate emit PATH... again"),
    "no_open_work_items": ("every work item completed (with its receipt) or dropped",
                           "plugkit prd verify ID --complete"),
    "no_unknown_mutables": ("every named unknown resolved by a witnessed run", "plugkit mutable resolve NAME TASK"),
    "no_running_tasks": ("no task of this session still running", "plugkit exec:tasks, then plugkit exec:close TASK"),
    "git_clean": ("nothing uncommitted", "git add -A && git commit"),
    "nothing_unpushed": ("every commit pushed to the upstream", "git push"),
    "verify_green": ("the verify command green at the current HEAD, run by the runner", "plugkit gate verify"),
    "new_work_arrived": ("new items or unknowns after COMPLETE", "plugkit prd add SUBJECT"),
    "views_untampered": (".prd and .plugkit/ state as the runner wrote them",
                         "revert the edit, or plugkit gate restore"),
}
