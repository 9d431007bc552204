"""Which of each agent host's tools write files and which run a command line: one row per host,
read from that host's installed sources (the versions pinned in tests/hosts/package.json).

The gates judge a tool call by its name: a write tool missing here is a write the PLAN phase
does not stop (Qwen Code's `edit` was one). So every tool a pinned host registers is listed
(write, shell, or other), and tests/hosts/test_host_tools.py re-reads the installed hosts and
fails on a name no row classifies: a version bump that adds a tool is caught, not trusted.

Names are as the host's hooks carry them, which is how the host registers them, except where
`hooked_as` says otherwise (Codex reports its shell tools to hooks as `Bash`). The adapters of
hosts that spell arguments otherwise (copilot, opencode, cursor) also rename the tool to Claude
Code's name; both spellings are write tools here, so a missed rename still cannot let a write by.
Plain dicts and strings (no dataclasses): the hook's hot path imports this module.
"""

WRITE, SHELL = "write", "shell"

# host (plugkit install --platform) -> {"source": the npm package and version read ("" when none),
# "write": names, "shell": {name: tool_input key of its command line}, "other": names,
# "hooked_as": {registered name: name in the hook's stdin}}.
HOST_TOOLS = {
    # @anthropic-ai/claude-code 2.1.197 (bin claude): the bundle's tool constructor
    # `<f>({name:<var>,...})` (42 tools, names resolved from `var <var>="Name"`), sdk-tools.d.ts,
    # and the tools it offers the model headless. MultiEdit is no longer registered (named only in one
    # internal set): kept for older versions and OpenCode's multiedit, renamed to it.
    # REPL runs JavaScript that calls the other tools (each call a hook of its own); Monitor runs
    # a shell command as a watch; PowerShell is the Windows shell.
    "claude-code": {
        "source": "@anthropic-ai/claude-code 2.1.197",
        "write": "Write Edit NotebookEdit MultiEdit",
        "shell": {"Bash": "command", "PowerShell": "command", "Monitor": "command"},
        "other": "Agent Read Glob Grep LSP WebFetch WebSearch TodoWrite Skill AskUserQuestion EnterPlanMode "
                 "ExitPlanMode EnterWorktree ExitWorktree TaskCreate TaskGet TaskList TaskUpdate TaskOutput "
                 "TaskStop CronCreate CronDelete CronList ScheduleWakeup RemoteTrigger SendMessage "
                 "SendUserMessage SendUserFile PushNotification ReportFindings Workflow REPL Artifact Projects "
                 "DesignSync ShareOnboardingGuide ShowOnboardingRolePicker TestingPermission",
    },
    # @qwen-code/qwen-code 0.15.10 (cli.js): `ToolNames = {...}` in packages/core/src/tools/
    # tool-names.ts. `replace` is its legacy name of `edit` (ToolNamesMigration): still a write.
    "qwen": {
        "source": "@qwen-code/qwen-code 0.15.10",
        "write": "write_file edit replace",
        "shell": {"run_shell_command": "command", "monitor": "command"},
        "other": "read_file grep_search glob list_directory todo_write save_memory agent skill exit_plan_mode "
                 "web_fetch lsp ask_user_question cron_create cron_list cron_delete task_stop send_message "
                 "tool_search structured_output",
    },
    # @google/gemini-cli 0.61.0 (bundle/*.js): every `var <X>_TOOL_NAME = "..."`, and the tools it
    # offers the model (the background-process pair has no such constant).
    "gemini": {
        "source": "@google/gemini-cli 0.61.0",
        "write": "write_file replace",
        "shell": {"run_shell_command": "command"},
        "other": "read_file read_many_files glob grep_search list_directory web_fetch google_web_search "
                 "write_todos activate_skill invoke_agent ask_user complete_task enter_plan_mode "
                 "exit_plan_mode get_internal_docs list_mcp_resources read_mcp_resource take_snapshot "
                 "tracker_add_dependency tracker_create_task tracker_get_task tracker_list_tasks "
                 "tracker_update_task tracker_visualize update_topic list_background_processes "
                 "read_background_output",
    },
    # @openai/codex 0.169.0 (a Rust binary: no names to grep reliably): the tools it offers the
    # model (gpt-5.5), the handlers under core/src/tools/handlers/ named in the binary, and the
    # hook stdin seen in tests/hosts (its shell tools reach hooks as `Bash`). write_stdin types
    # into a running exec_command session: a shell by another way, and no hook sees its text.
    "codex": {
        "source": "@openai/codex 0.169.0",
        "write": "apply_patch",
        "shell": {"exec_command": "cmd", "shell": "command", "local_shell": "command", "Bash": "command"},
        "other": "write_stdin view_image request_user_input request_permissions update_plan create_goal "
                 "get_goal update_goal tool_search web_search",
        "hooked_as": {"exec_command": "Bash", "shell": "Bash", "local_shell": "Bash"},
    },
    # @github/copilot 1.0.102 (a single-executable binary, its JS not greppable): the tools it
    # offers the model (BYOK gpt-4.1) and its hooks reference (toolName = the model's name).
    "copilot": {
        "source": "@github/copilot 1.0.102",
        "write": "create edit",
        "shell": {"bash": "command"},
        "other": "view glob grep read_bash stop_bash list_bash task read_agent list_agents write_agent "
                 "skill sql session_store_sql fetch_copilot_cli_documentation",
    },
    # opencode-ai 1.18.33 (bun binary): its `Tool.define("<id>", ...)` calls (`var ID="bash"` for
    # the shell) and the tools it offers the model; the relay plugin sends the tool id as
    # tool_name. apply_patch replaces edit/write for GPT models; multiedit and patch are older
    # versions' tools, still renamed by the adapter.
    "opencode": {
        "source": "opencode-ai 1.18.33",
        "write": "write edit apply_patch multiedit patch",
        "shell": {"bash": "command"},
        "other": "read glob grep lsp webfetch websearch todowrite task skill question plan_exit execute",
    },
    # @kilocode/cli 7.7.7 (bun binary, built on OpenCode): its `Tool.define("<id>", ...)` calls, its
    # `{id, file}` tool list and the tools it offers the model. notebook_edit writes .ipynb cells;
    # background_process starts a command (action "start") that outlives the call.
    "kilo": {
        "source": "@kilocode/cli 7.7.7",
        "write": "write edit multiedit patch apply_patch notebook_edit",
        "shell": {"bash": "command", "background_process": "command"},
        "other": "read glob grep lsp webfetch websearch todowrite task skill question "
                 "plan_exit open_plan execute notebook_read notebook_execute generate_image chart "
                 "repo_overview repo_clone kilo_memory_save kilo_memory_recall kilo_local_recall semantic_search "
                 "board_post board_read schedule_wakeup cancel_wakeup",
    },
    # Cursor: no npm package to install or read, so NOT derived: its agent hooks reference
    # (preToolUse tool_name Shell, Write, StrReplace, Edit, Delete, Read, ...).
    "cursor": {
        "source": "",
        "write": "Write StrReplace Edit Delete",
        "shell": {"Shell": "command"},
        "other": "Read Grep Glob LS",
    },
}


def names(host: str, role: str, hooked: bool = False) -> frozenset:
    """One host's tool names in a role (write | shell | other): as it registers them and as its
    hooks carry them, or (hooked) only as its hooks carry them."""
    row = HOST_TOOLS[host]
    raw = row.get(role, "")
    registered = set(raw.split() if isinstance(raw, str) else raw)
    as_hooked = {row.get("hooked_as", {}).get(name, name) for name in registered}
    return frozenset(as_hooked if hooked else registered | as_hooked)


def matcher(host: str, roles: tuple = (SHELL, WRITE)) -> str:
    """The hook matcher (`A|B|...`) for one host's gated tools, spelled as its hooks carry them."""
    return "|".join(sorted(frozenset().union(*(names(host, role, hooked=True) for role in roles))))


# Every host's, as the runner's policy and the hook read them (a name means the same everywhere:
# tests/unit/test_host_tools.py checks no name is a write tool on one host and not on another).
WRITE_TOOLS = frozenset().union(*(names(host, WRITE) for host in HOST_TOOLS))
SHELL_TOOLS = {name: key for row in HOST_TOOLS.values() for name, key in row["shell"].items()}
