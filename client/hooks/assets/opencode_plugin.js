// plugkit relay for OpenCode and Kilo: written by `plugkit install --platform __PLATFORM__`,
// removed by `plugkit install --platform __PLATFORM__ --uninstall` (plugkit-managed file).
// It only relays: each event goes to `plugkit hook <Event> --platform opencode` as Claude
// Code's stdin fields, and the answer is applied here; the decisions live in plugkit.
import { spawn } from "node:child_process";

const PLUGKIT = __PLUGKIT__; // argv of the plugkit command, absolute paths
const LIMIT_MS = 60000; // exec: commands wait up to 45 s in the runner

// One hook call. Anything going wrong (plugkit missing, killed, not JSON) is "no opinion":
// a gatekeeper that cannot be reached must not stop the agent.
function hook(event, payload) {
  return new Promise((resolve) => {
    let out = "";
    let child;
    try {
      child = spawn(PLUGKIT[0], [...PLUGKIT.slice(1), "hook", event, "--platform", "opencode"],
                    { stdio: ["pipe", "pipe", "inherit"] });
    } catch {
      return resolve({});
    }
    const timer = setTimeout(() => child.kill("SIGKILL"), LIMIT_MS);
    child.on("error", () => { clearTimeout(timer); resolve({}); });
    child.stdout.on("data", (chunk) => { out += chunk; });
    child.on("close", () => {
      clearTimeout(timer);
      try { resolve(out.trim() ? JSON.parse(out) : {}); } catch { resolve({}); }
    });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify({ hook_event_name: event, ...payload }));
  });
}

export const PlugkitPlugin = async ({ client, directory }) => {
  const contexts = new Map(); // sessionID -> the session's plugkit context (SessionStart, once)
  const base = (id) => ({ session_id: id, cwd: directory });
  return {
    "experimental.chat.system.transform": async (input, output) => {
      const id = input && input.sessionID;
      if (!id) return;
      if (!contexts.has(id)) {
        const answer = await hook("SessionStart", { ...base(id), source: "startup" });
        contexts.set(id, (answer.hookSpecificOutput && answer.hookSpecificOutput.additionalContext) || "");
      }
      if (contexts.get(id)) output.system.push(contexts.get(id));
    },
    "tool.execute.before": async (input, output) => {
      const answer = await hook("PreToolUse", { ...base(input.sessionID), tool_name: input.tool,
                                                tool_input: (output && output.args) || {} });
      const said = answer.hookSpecificOutput || {};
      // A thrown error is what OpenCode hands the model as the tool's result: the tool never runs.
      if (said.permissionDecision === "deny" || said.permissionDecision === "ask") {
        throw new Error(said.permissionDecisionReason || "plugkit refused this call");
      }
    },
    event: async ({ event }) => {
      if (!event || event.type !== "session.idle") return;
      const id = event.properties && event.properties.sessionID;
      if (!id) return;
      // No stop_hook_active here: always true, so the runner turns a stop back once per reason.
      const answer = await hook("Stop", { ...base(id), stop_hook_active: true });
      if (answer.decision !== "block" || !answer.reason) return;
      const body = { path: { id }, body: { parts: [{ type: "text", text: answer.reason }] } };
      const send = client.session.promptAsync || client.session.prompt;
      await send.call(client.session, body);
    },
  };
};
