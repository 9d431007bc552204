"""The agent hosts plugkit knows, one row each (the shape: plugkit/host_row.py). Every other host
table is derived from these rows: the hook's adapters and usage (client/hooks/core.py), what
`plugkit install` writes (client/hooks/install*.py), the gated tool names (plugkit/host_tools.py),
the workers `plugkit work` runs (plugkit/work/workers.py, protocol/work.py, client/verbs/work.py),
their credential scopes (plugkit/work/scopes.py), the hook files no worker may change
(plugkit/work/policy/paths.py), their private state in a sandbox (runner/system/sandbox.py), and
the runner's check that a person, not a host, approves (runner/system/peers.py, approvals.py).
Adding a host is adding its row here plus its adapter module; tests/unit/test_host_rows.py fails
when a row lacks a fact and shows a new row reaching every table.

Facts read from the hosts themselves: the environment markers each sets in its tools' shells
(each pinned version in tests/hosts running `env` through its shell tool; a process it started
keeps them after it detached unless it clears them) and its tool names (read from its installed
sources, tests/hosts/test_host_tools.py re-reads them). Names are as the host's hooks carry
them, except where `hooked_as` says otherwise. Cursor is not among the hosts tests/hosts runs:
no markers are claimed for it and its tools come from its hooks reference.
"""

from plugkit.host_row import GATED, PROMPT, WRITE, AgentHost, Hooks, Tools, Worker

# Timeouts in seconds. PreToolUse runs exec: commands (up to PLUGKIT_HOOK_WAIT, default 10 s,
# at most 45 s); SessionStart may start the runner; Stop may ask git about the tree.
CLAUDE_EVENTS = (("SessionStart", None, 30), ("UserPromptSubmit", None, 10), ("PreToolUse", GATED, 60),
                 ("Stop", None, 30), ("SessionEnd", None, 15))
# OpenCode / Kilo: the plugin relays these (its own timeout: 60 s per call).
PLUGIN_EVENTS = (("SessionStart", None, 60), ("PreToolUse", None, 60), ("Stop", None, 60))
# A worker's headless turn ends with the host's exit; the Stop hook may turn it back first.
TURN_DONE = "exits 0 when its headless turn (-p) ends; plugkit's Stop hook may turn it back first"

HOSTS: tuple[AgentHost, ...] = (
    AgentHost(
        platform="claude-code", label="Claude Code", adapter="client.hooks.claude_code", programs=("claude",),
        packages=("@anthropic-ai/claude-code", "/claude-code/cli"), entries=(".claude", "CLAUDE.md"),
        markers=("CLAUDECODE", "CLAUDE_CODE_SESSION_ID"), asks_person=True,
        # 2.1.197 (bin claude): the bundle's tool constructor `<f>({name:<var>,...})` (names from
        # `var <var>="Name"`), sdk-tools.d.ts and the tools it offers headless. MultiEdit is no longer
        # registered: kept for older versions and OpenCode's multiedit, renamed to it. REPL runs JS
        # that calls the other tools (each a hook of its own); Monitor runs a shell command as a
        # watch; PowerShell is the Windows shell.
        tools=Tools(
            source="@anthropic-ai/claude-code 2.1.197", write="Write Edit NotebookEdit MultiEdit",
            shell={"Bash": "command", "PowerShell": "command", "Monitor": "command"},
            other="Agent Read Glob Grep LSP WebFetch WebSearch TodoWrite Skill AskUserQuestion EnterPlanMode "
                  "ExitPlanMode EnterWorktree ExitWorktree TaskCreate TaskGet TaskList TaskUpdate TaskOutput "
                  "TaskStop CronCreate CronDelete CronList ScheduleWakeup RemoteTrigger SendMessage "
                  "SendUserMessage SendUserFile PushNotification ReportFindings Workflow REPL Artifact Projects "
                  "DesignSync ShareOnboardingGuide ShowOnboardingRolePicker TestingPermission"),
        # --project writes the per-person file: hooks pointing at this machine's plugkit must not
        # reach a teammate through a commit.
        hooks=Hooks(fmt="json", path=".claude/settings.json", personal=".claude/settings.local.json",
                    events=CLAUDE_EVENTS, reads=(".claude/settings.json", ".claude/settings.local.json")),
        worker=Worker(
            # -p: one headless turn, then exit. bypassPermissions: no permission prompt waits for a
            # person who is not there; PreToolUse hooks still run before every tool call.
            program="claude", argv=("-p", PROMPT, "--permission-mode", "bypassPermissions"), done=TURN_DONE,
            model_env=("ANTHROPIC_", "CLAUDE_", "DISABLE_", "API_TIMEOUT_MS"),
            home_state=(".claude/", ".claude.json", ".claude.json.backup", ".config/claude"))),
    AgentHost(
        platform="qwen", label="Qwen Code", adapter="client.hooks.qwen", programs=("qwen",),
        packages=("@qwen-code/qwen-code",), entries=(".qwen", "QWEN.md"), markers=("QWEN_CODE",),
        # 0.15 fires no SessionStart headless (`qwen -p`, seen in tests/hosts): its first prompt is
        # where a session begins, so it may start the runner, which answers that prompt with the
        # SessionStart context.
        prompt_starts=True, asks_person=True,
        # 0.15.10 (cli.js): `ToolNames = {...}` in packages/core/src/tools/tool-names.ts. `replace` is
        # its legacy name of `edit` (ToolNamesMigration): still a write.
        tools=Tools(
            source="@qwen-code/qwen-code 0.15.10", write="write_file edit replace",
            shell={"run_shell_command": "command", "monitor": "command"},
            other="read_file grep_search glob list_directory todo_write save_memory agent skill exit_plan_mode "
                  "web_fetch lsp ask_user_question cron_create cron_list cron_delete task_stop send_message "
                  "tool_search structured_output"),
        # Claude Code's protocol, Gemini CLI's tool names. Its command-hook timeouts are milliseconds
        # (its HookRunner: default 60000, "Hook timed out after 10ms" when given seconds).
        hooks=Hooks(fmt="json", path=".qwen/settings.json", events=CLAUDE_EVENTS, timeout_scale=1000,
                    unit="milliseconds", reads=(".qwen/settings.json",)),
        # --yolo: every tool call approved without a prompt; the PreToolUse hook still decides.
        worker=Worker(program="qwen", argv=("-p", PROMPT, "--yolo"), done=TURN_DONE,
                      model_env=("OPENAI_", "QWEN_", "DASHSCOPE_"), home_state=(".qwen/",))),
    AgentHost(
        platform="gemini", label="Gemini CLI", adapter="client.hooks.gemini", programs=("gemini",),
        packages=("@google/gemini-cli",), entries=(".gemini", "GEMINI.md"), markers=("GEMINI_CLI",),
        # 0.61.0 (bundle/*.js): every `var <X>_TOOL_NAME = "..."`, and the tools it offers the model
        # (the background-process pair has no such constant).
        tools=Tools(
            source="@google/gemini-cli 0.61.0", write="write_file replace", shell={"run_shell_command": "command"},
            other="read_file read_many_files glob grep_search list_directory web_fetch google_web_search "
                  "write_todos activate_skill invoke_agent ask_user complete_task enter_plan_mode "
                  "exit_plan_mode get_internal_docs list_mcp_resources read_mcp_resource take_snapshot "
                  "tracker_add_dependency tracker_create_task tracker_get_task tracker_list_tasks "
                  "tracker_update_task tracker_visualize update_topic list_background_processes "
                  "read_background_output"),
        # Its hook timeouts are milliseconds (its hooks reference: default 60000).
        hooks=Hooks(fmt="json", path=".gemini/settings.json", timeout_scale=1000, unit="milliseconds", named=True,
                    events=(("SessionStart", None, 30), ("BeforeAgent", None, 10), ("BeforeTool", GATED, 60),
                            ("AfterAgent", None, 30), ("SessionEnd", None, 15)),
                    reads=(".gemini/settings.json",)),
        worker=Worker(
            program="gemini", argv=("-p", PROMPT, "--yolo"),  # --yolo: as qwen; its BeforeTool hook decides
            done="exits 0 when its headless turn (-p) ends; plugkit's AfterAgent hook may turn it back first",
            model_env=("GEMINI_", "GOOGLE_API_KEY", "GOOGLE_GENAI_", "GOOGLE_CLOUD_PROJECT"), home_state=(".gemini/",),
            # A person who turned on its folder trust never trusted a fresh worktree: headless, it
            # exits 55 there. --skip-trust is no cure: it trusts the folder only after the settings
            # were read, so the run goes on WITHOUT the worktree's .gemini/settings.json, plugkit's
            # hooks (seen in 0.61). The variable is read first.
            env=(("GEMINI_CLI_TRUST_WORKSPACE", "true"),))),
    AgentHost(
        platform="codex", label="Codex CLI", adapter="client.hooks.codex", programs=("codex",),
        packages=("@openai/codex", "codex-cli"), entries=(".codex",), markers=("CODEX_THREAD_ID", "CODEX_SESSION_ID"),
        # 0.169.0 (a Rust binary: no names to grep reliably): the tools it offers the model (gpt-5.5),
        # the handlers under core/src/tools/handlers/ named in the binary, and the hook stdin seen in
        # tests/hosts (its shell tools reach hooks as `Bash`). write_stdin types into a running
        # exec_command session: a shell by another way, and no hook sees its text.
        tools=Tools(
            source="@openai/codex 0.169.0", write="apply_patch",
            shell={"exec_command": "cmd", "shell": "command", "local_shell": "command", "Bash": "command"},
            other="write_stdin view_image request_user_input request_permissions update_plan create_goal "
                  "get_goal update_goal tool_search web_search",
            hooked_as={"exec_command": "Bash", "shell": "Bash", "local_shell": "Bash"}),
        # Codex's TOML: plugkit owns one marked block. Seen in the real codex (tests/hosts): without
        # both trusts it skips our hooks silently.
        hooks=Hooks(fmt="toml", path=".codex/config.toml", events=CLAUDE_EVENTS, reads=(".codex/config.toml",),
                    note="Codex runs them only once you trust them: review them in codex's /hooks (it skips new or "
                         "changed hooks silently until then); a project's .codex/ is read only in a trusted project"),
        worker=Worker(
            # exec: headless. --skip-git-repo-check: its check refuses "Not inside a trusted directory";
            # a git worktree passes it today (0.169), but the run marks the worktree untrusted
            # ({codex_hooks}, plugkit/work/workers.py), so the check is not left to decide.
            # --dangerously-bypass-approvals-and-sandbox: no approval prompt; plugkit's PreToolUse hook
            # is the guard. --dangerously-bypass-hook-trust: Codex runs a new hook only after a person
            # trusted it in /hooks; these are plugkit's own, just installed by the runner.
            program="codex", argv=("exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
                                   "--dangerously-bypass-hook-trust", "{codex_hooks}", PROMPT),
            done="`codex exec` exits 0 after its last turn; plugkit's Stop hook may turn it back first",
            model_env=("OPENAI_", "CODEX_"), home_state=(".codex/",))),
    AgentHost(
        platform="cursor", label="Cursor", adapter="client.hooks.cursor", programs=("cursor", "cursor-agent"),
        packages=("cursor-agent",), entries=(".cursor", ".cursorrules"), markers=(),  # not run in tests/hosts
        # No npm package to read: its agent hooks reference (preToolUse tool_name Shell, Write, ...).
        tools=Tools(source="", write="Write StrReplace Edit Delete", shell={"Shell": "command"},
                    other="Read Grep Glob LS"),
        # Shell commands come through beforeShellExecution; preToolUse only for the file tools, so no
        # shell call is handled twice. (No prompt hook: beforeSubmitPrompt has no model context.)
        hooks=Hooks(fmt="flat", path=".cursor/hooks.json", keys=("command", "timeout"), reads=(".cursor/hooks.json",),
                    events=(("sessionStart", None, 30), ("beforeShellExecution", None, 60),
                            ("preToolUse", (WRITE,), 60), ("stop", None, 30), ("sessionEnd", None, 15))),
        worker=None),
    AgentHost(
        platform="copilot", label="Copilot CLI", adapter="client.hooks.copilot", programs=("copilot",),
        packages=("@github/copilot",), entries=(".github/hooks", ".github/copilot-instructions.md"),
        markers=("COPILOT_CLI", "COPILOT_AGENT_SESSION_ID"),
        # 1.0.102 (a single-executable binary, its JS not greppable): the tools it offers the model
        # (BYOK gpt-4.1) and its hooks reference (toolName = the model's name).
        tools=Tools(source="@github/copilot 1.0.102", write="create edit", shell={"bash": "command"},
                    other="view glob grep read_bash stop_bash list_bash task read_agent list_agents write_agent "
                          "skill sql session_store_sql fetch_copilot_cli_documentation"),
        # camelCase events (its documented answers); preToolUse takes no matcher. It reads every
        # JSON file under .github/hooks/.
        hooks=Hooks(fmt="flat", path=".github/hooks/plugkit.json", user_path=".copilot/hooks/plugkit.json",
                    keys=("bash", "timeoutSec"), extra={"type": "command"}, reads=(".github/hooks",),
                    events=(("sessionStart", None, 30), ("preToolUse", None, 60), ("agentStop", None, 30),
                            ("sessionEnd", None, 15))),
        worker=None),
    AgentHost(
        platform="opencode", label="OpenCode", adapter="client.hooks.opencode", programs=("opencode",),
        packages=("opencode-ai", "/opencode-linux-", "/opencode-darwin-"),
        entries=(".opencode", "opencode.json", "opencode.jsonc"), markers=("OPENCODE", "OPENCODE_PID"),
        # 1.18.33 (bun binary): its `Tool.define("<id>", ...)` calls (`var ID="bash"` for the shell)
        # and the tools it offers the model; the relay plugin sends the tool id as tool_name.
        # apply_patch replaces edit/write for GPT models; multiedit and patch are older versions'.
        tools=Tools(source="opencode-ai 1.18.33", write="write edit apply_patch multiedit patch",
                    shell={"bash": "command"},
                    other="read glob grep lsp webfetch websearch todowrite task skill question plan_exit execute"),
        # No command hooks: it loads JS plugins from .opencode/{plugin,plugins}/.
        hooks=Hooks(fmt="plugin", path=".opencode/plugins/plugkit.js", events=PLUGIN_EVENTS,
                    user_path=".config/opencode/plugins/plugkit.js", reads=(".opencode/plugins", ".opencode/plugin")),
        worker=None),
    AgentHost(
        platform="kilo", label="Kilo", adapter="client.hooks.opencode", programs=("kilo", "kilocode"),
        packages=("@kilocode/cli",), entries=(".kilo", ".kilocode"), markers=("KILO", "KILO_PID"),
        # 7.7.7 (bun binary, built on OpenCode): its `Tool.define("<id>", ...)` calls, its `{id, file}`
        # tool list and the tools it offers the model. notebook_edit writes .ipynb cells;
        # background_process starts a command (action "start") that outlives the call.
        tools=Tools(source="@kilocode/cli 7.7.7", write="write edit multiedit patch apply_patch notebook_edit",
                    shell={"bash": "command", "background_process": "command"},
                    other="read glob grep lsp webfetch websearch todowrite task skill question "
                          "plan_exit open_plan execute notebook_read notebook_execute generate_image chart "
                          "repo_overview repo_clone kilo_memory_save kilo_memory_recall kilo_local_recall "
                          "semantic_search board_post board_read schedule_wakeup cancel_wakeup"),
        hooks=Hooks(fmt="plugin", path=".kilo/plugins/plugkit.js", events=PLUGIN_EVENTS,
                    user_path=".config/kilo/plugins/plugkit.js", reads=(".kilo/plugins",)),
        worker=None),
)
RUNTIMES = frozenset({"node", "nodejs", "bun", "deno"})
BY_PLATFORM: dict[str, AgentHost] = {h.platform: h for h in HOSTS}
COMMAND = "command"  # the worker that is no host: any program (--run), the prompt on stdin
# `plugkit work --worker` values: every host with a worker, then the command worker.
WORKER_NAMES: tuple[str, ...] = (*(h.platform for h in HOSTS if h.worker is not None), COMMAND)


def _program(name: str) -> str:
    base = name.rsplit("/", 1)[-1]
    return base[:-4] if base.endswith(".exe") else base


def host_of(comm: str, argv: tuple[str, ...]) -> AgentHost | None:
    """The host a process is, from its name and command line; None when it is none of them.
    comm is cut at 15 bytes by the kernel, so argv[0] is asked too."""
    names = {_program(comm)} | {_program(a) for a in argv[:1]}
    if argv and _program(argv[0]) in RUNTIMES:  # `node /usr/bin/gemini`: the script names the host
        names |= {_program(a) for a in argv[1:2]}
    line = " ".join(argv)
    for host in HOSTS:
        if names & set(host.programs) or any(p in line for p in host.packages):
            return host
    return None


def marked_by(environ: dict[str, str]) -> tuple[AgentHost, str] | None:
    """The host whose marker an environment carries (and the variable), or None. Later rows
    first: Kilo, a fork of OpenCode, sets OPENCODE as well as KILO."""
    for host in reversed(HOSTS):
        for name in host.markers:
            if environ.get(name):
                return host, name
    return None
