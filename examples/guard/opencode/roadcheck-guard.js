// roadcheck guard for OpenCode: a plugin that asks `roadcheck guard opencode` before
// each tool call and tells it what ran. Copy it to .opencode/plugin/ (one project) or
// ~/.config/opencode/plugin/ (every project). A call runs only when the guard answers
// {"decision": "allow"} with exit code 0; any other answer, a guard that cannot be
// started, or output that is not that JSON stops the call with the reason.
//
// ROADCHECK_GUARD_SPEC names the spec (default .opencode/roadcheck-spec.yaml in the
// project); ROADCHECK_GUARD_COMMAND the roadcheck command (default: roadcheck on PATH).

const SPEC = process.env.ROADCHECK_GUARD_SPEC ?? ".opencode/roadcheck-spec.yaml"
const COMMAND = process.env.ROADCHECK_GUARD_COMMAND ?? "roadcheck"

export const RoadcheckGuard = async ({ directory }) => {
  // One hook event to the guard; throws (which stops the call) unless it is allowed.
  async function guard(payload) {
    let out = "", err = "", code = -1
    try {
      const proc = Bun.spawn([COMMAND, "guard", "opencode", "--spec", SPEC], {
        cwd: directory, stdin: "pipe", stdout: "pipe", stderr: "pipe",
      })
      proc.stdin.write(JSON.stringify(payload))
      proc.stdin.end()
      ;[out, err, code] = await Promise.all([
        new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited,
      ])
    } catch (cause) {
      throw new Error(`roadcheck guard: denied: cannot run ${COMMAND}: ${cause}`)
    }
    let answer = null
    try {
      answer = JSON.parse(out)
    } catch {
      answer = null
    }
    if (code !== 0 || answer === null || answer.decision !== "allow") {
      const reason = (answer && answer.reason) || err.trim()
      throw new Error(reason || `roadcheck guard: denied: exit code ${code}, no answer`)
    }
  }

  return {
    "chat.message": async (input, output) => {
      const text = (output.parts ?? [])
        .filter((part) => part.type === "text" && !part.synthetic)
        .map((part) => part.text)
        .join("\n")
      if (text) await guard({ event: "chat.message", sessionID: input.sessionID, text })
    },
    "tool.execute.before": async (input, output) => {
      await guard({ event: "tool.execute.before", sessionID: input.sessionID,
                    callID: input.callID, tool: input.tool, args: output.args ?? {} })
    },
    "tool.execute.after": async (input, output) => {
      // the bash tool's exit code (null when it was killed): without it the guard does
      // not take the command to have succeeded
      await guard({ event: "tool.execute.after", sessionID: input.sessionID,
                    callID: input.callID, tool: input.tool, args: input.args ?? {},
                    exit: output?.metadata?.exit })
    },
    event: async ({ event }) => {
      if (event.type === "session.idle") {
        await guard({ event: "session.idle", sessionID: event.properties.sessionID })
      }
    },
  }
}
