"""The application service every front end (CLI, Slack bot, TUI) calls; see
docs/ARCHITECTURE.md. ``task`` is its cancellable runner, ``fixes`` the rule that turns a
finding code (and a target) into the runbook that fixes it."""
