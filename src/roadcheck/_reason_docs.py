"""What each reason code means, as docs/reasons.md describes it (generated).

Written by ``scripts/gen_reason_docs.py`` from the tables of docs/reasons.md; do
not edit. ``SECTIONS`` maps each section's heading anchor to its codes, each with
the text of its "fires when" column, in the order of the page.
"""

from __future__ import annotations

__all__ = ["SECTIONS"]

#: section anchor -> reason code -> when it fires
SECTIONS: dict[str, dict[str, str]] = {
    'replay': {
        'trajectory-conforms': (
            'every mandatory checkpoint came before its guarded action and every '
            'contracted handoff was satisfied'
        ),
        'checkpoint-skipped': (
            'a guarded action ran with no valid checkpoint before it and none after '
            'it (absent, voided, already consumed, or confirmed by someone not '
            'allowed; the message says which)'
        ),
        'checkpoint-after-action': (
            'the checkpoint exists, but only after the action it guards; the message '
            'gives both seqs'
        ),
        'handoff-contract-violation': (
            'a contracted handoff did not carry a required field'
        ),
        'unverified-claim-consumed-as-ground-truth': (
            'a required field arrived without `verified: true` at a border whose '
            'contract demands verification'
        ),
        'unverified-claim-propagated-N-hops': (
            'the same field with the same value crossed a connected chain of N ≥ 2 '
            'handoffs unverified at every hop (N is the longest chain; one reason per '
            'value), e.g. `unverified-claim-propagated-2-hops`'
        ),
        'uncontracted-handoff': (
            'a handoff crossed a border no contract covers; the spec may be '
            'incomplete, so it warns instead of blocking'
        ),
        'contracted-handoff-absent': (
            'a contracted handoff A->B never happened before agent B ran a guarded '
            'action (reported at that action), or never happened at all in the '
            'trajectory (reported at its end); what the contract checks was never '
            'delivered'
        ),
        'no-actions-recorded': (
            'the spec guards actions but the trajectory records no tool call at all; '
            'the message names the format it was read as, since a reader that found '
            'no call is no evidence that none was made'
        ),
        'forbidden-action': (
            'an action matched the `when` of a `forbidden` rule with no checkpoint '
            '`unless` left to license it (one checkpoint licenses one action)'
        ),
        'limit-exceeded': (
            'an action matched the `when` of a `limits` rule more than `at_most` '
            'times in the run; each action beyond the limit is one reason'
        ),
        'obligation-unmet': (
            'an event matched the `after` of an `obligations` rule and no event '
            'matching its `require` followed before the run ended (reported at the '
            'final event)'
        ),
        'tainted-flow': (
            'an action matched the `sink` of a `flows` rule after an event matched '
            'its `source` with no checkpoint `unless` between them (`match: value`: '
            "only when the sink's arguments carry a value of the source's result)"
        ),
    },
    'run-the-gated-workflow-harness': {
        'run-completed': (
            'every phase passed its gate, each pass backed by a durable evidence '
            'record'
        ),
        'gate-failed': (
            'a phase used up `max_attempts` without a passing gate; the diagnostic '
            'names the phase, the attempts and the last gate output'
        ),
        'waiting-for-role': (
            'the next phase belongs to another role; whoever holds it continues with '
            'the printed `next` command (`--resume RUN_ID --as ROLE`, and an identity '
            "other than the producer's when the phase is a review)"
        ),
        'role-guard-refused': (
            'the acting identity is the one that produced the phase it was about to '
            'review; the refusal is recorded in the evidence chain (verdict '
            '`refused`)'
        ),
        'budget-exhausted': (
            "an agent producer's phase `budget` or the run's `budget` (tokens or "
            'cost) is spent; the loop stops before the next attempt and the message '
            'names the limit and what was spent (see '
            '[agent-producers.md](agent-producers.md#budgets))'
        ),
        'budget-unknown': (
            'a cost budget meets an agent attempt whose cost neither the provider nor '
            "the agent's `price` gives"
        ),
    },
    'revalidate-resume-time-revalidation': {
        'task-current': (
            'the task file is active, before its deadline, with no newer instructions'
        ),
        'task-unreadable': (
            'the task file is missing or unreadable; the checkpoint cannot stand in '
            'for it'
        ),
        'task-cancelled': (
            'the task file says `cancelled` (or `canceled`, `aborted`)'
        ),
        'task-finished': (
            'the task file says `done`, `finished`, `completed` or `closed`'
        ),
        'task-deadline-passed': (
            "the task's `deadline` is before now"
        ),
        'task-instructions-changed': (
            '`instructions_updated_at` (or `updated_at`) is newer than the '
            "checkpoint's `observed_at`"
        ),
        'task-attempts-exhausted': (
            '`attempts` has reached `max_attempts`'
        ),
        'inputs-changed': (
            'the files in `inputs` no longer hash to `inputs_digest`, or one is '
            'missing'
        ),
        'artifact-valid': (
            'the artifact exists and passes every expectation; the message lists them'
        ),
        'artifact-missing': (
            "nothing at the artifact's path"
        ),
        'artifact-too-small': (
            'fewer bytes than `expect.min_bytes`'
        ),
        'artifact-digest-mismatch': (
            'the sha256 on disk differs from the recorded `digest`'
        ),
        'artifact-unparseable': (
            'the file does not parse as its `expect.format` (json, jsonl, yaml)'
        ),
        'artifact-members-mismatch': (
            '`expect.members.glob` matches a different number of files than `count`'
        ),
        'artifact-stale': (
            'the artifact is older than a file in `expect.newer_than`, or that input '
            'is missing'
        ),
        'artifact-not-regular': (
            'the artifact (or a file in its directory) is a FIFO, a device, a socket '
            'or a symlink to one, not a regular file; it is never read'
        ),
        'artifact-outside-root': (
            "a relative artifact path leaves the checkpoint's folder (through `..` or "
            'a symlink); write it as an absolute path if that is meant'
        ),
        'effect-confirmed': (
            'the owner (ledger record or reconcile command exit 0) holds the effect'
        ),
        'effect-not-found': (
            'the owner says the effect did not happen (a WARN when the local record '
            'claimed `confirmed`)'
        ),
        'effect-unknown': (
            'the owner gave no answer (unreadable ledger, command timeout or exit '
            'other than 0/1), or there is no owner to ask and the record is not '
            '`confirmed`'
        ),
        'effect-unreconciled': (
            'the record says `confirmed` but no ledger or reconcile command lets the '
            'owner confirm it'
        ),
        'capability-allowed': (
            'the `check` command exits 0, or the recorded `allowed` is younger than '
            '`max_age` (default 24h)'
        ),
        'capability-lost': (
            'the `check` command exits 1, or the capability is recorded as `denied`'
        ),
        'capability-stale': (
            'the recorded check is older than `max_age`, or the `check` command gave '
            'no answer'
        ),
        'budget-available': (
            '`spent` (recorded, read from `spent_file`, or printed by '
            '`spent_command`) is below `limit`'
        ),
        'budget-exhausted': (
            '`spent` has reached `limit`'
        ),
        'budget-unknown': (
            'what is spent cannot be read'
        ),
        'blocker-active': (
            "a blocker's `file` exists, or it is recorded `active` and its `until` "
            'has not passed'
        ),
        'date-gate-closed': (
            "now is before a gate's `not_before` or after its `not_after`"
        ),
        'cadence-met': (
            "the last output is younger than the cadence's `every`"
        ),
        'cadence-missed': (
            'the last output is older than `every`: scheduled work exists but is not '
            'delivering'
        ),
        'cadence-unknown': (
            'the cadence command printed no timestamp'
        ),
        'step-classified': (
            'a remaining step got its retry class; the message says why (as recorded, '
            'or forced to `reconcile_first` by an unknown effect)'
        ),
        'step-needs-operator': (
            'an `unsafe_to_retry` step has no idempotency key: it is never retried '
            'automatically'
        ),
        'checkpoint-written': (
            '`--write-next` wrote the next checkpoint; the message carries its '
            '`next_action`'
        ),
    },
    'run-resume-and-effects': {
        'artifact-changed': (
            "on `--resume`, a passed phase's artifact no longer hashes to its "
            'evidence record; the phase is gated again instead of trusted'
        ),
        'effect-unknown-stop': (
            "on resume, a phase's effect was attempted but never confirmed, "
            'reconciling it gave no answer, and its retry class is not '
            '`safe_to_retry`'
        ),
        'evidence-broken': (
            "`--resume` (or an append) found the run's evidence failing verification: "
            'an edited, dropped, reordered, appended or cut record, a head or MAC '
            'that does not match, a missing or different attempt copy (or attempt '
            'file, in a run made before `attempts.jsonl`), a changed `run.json` (a '
            '`gated` flag that is not `true` included), a record without the evidence '
            "record's shape, a torn record the head counts as committed; the message "
            'names the record. Nothing runs. See [security.md](security.md)'
        ),
    },
    'shared': {
        'bad-input': (
            'roadcheck could not judge: broken JSON, an empty file, a missing or '
            'early `final`, events after `final`, a `seq` that does not increase, an '
            'unknown event type, a missing required key, an unusable or empty spec. '
            'Never a pass'
        ),
        'usage': (
            'the command line itself is wrong: a missing argument, an unknown option '
            'or command, a bad option value. The line names the command and ends `see '
            "'roadcheck COMMAND --help'`"
        ),
        'missing-extra': (
            'an integration was used without its optional package; the line names the '
            "extra to install (`pip install 'roadcheck[openai-agents]'`)"
        ),
    },
}
