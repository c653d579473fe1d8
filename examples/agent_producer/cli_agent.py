"""Claude Code (``claude -p``) or Codex (``codex exec``) as a command producer.

The harness hands a failed attempt's feedback to the next attempt in
``ROADCHECK_FEEDBACK_FILE``; this script puts that document, and the previous
artifact, into the prompt, runs the agent headless and writes its final
message as the artifact. Usage::

    cli_agent.py claude|codex TASK_FILE INPUT ARTIFACT

``{input_text}`` in the task file stands for the content of INPUT.

A producer is never run through a shell, so the prompt is built here.
"""

import os
import subprocess
import sys
from pathlib import Path

agent, task_file, source, artifact = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), \
    Path(sys.argv[4])
prompt = task_file.read_text(encoding="utf-8").replace(
    "{input_text}", source.read_text(encoding="utf-8"))
feedback = os.environ.get("ROADCHECK_FEEDBACK_FILE")
if feedback:
    previous = artifact.read_text(encoding="utf-8") if artifact.is_file() else "(none)"
    prompt += ("\n\nYour previous attempt failed its gate. The gate's feedback:\n\n"
               + Path(feedback).read_text(encoding="utf-8")
               + "\n\nYour previous answer:\n\n" + previous + "\n\nAnswer again, fixed.")
prompt += "\n\nReply with the answer only."
if agent == "claude":
    # -p: one non-interactive turn; the final message is printed on stdout
    done = subprocess.run(["claude", "-p", prompt, "--output-format", "text"],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if done.returncode == 0:
        artifact.write_text(done.stdout, encoding="utf-8")
elif agent == "codex":
    # exec: non-interactive; -o writes the final message; a read-only sandbox edits nothing
    done = subprocess.run(["codex", "exec", "--sandbox", "read-only", "--skip-git-repo-check",
                           "-o", str(artifact), prompt],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True)
else:
    sys.exit(f"unknown agent {agent!r}: claude or codex")
sys.stderr.write(done.stderr[-2000:])
sys.exit(done.returncode)
