"""The application service every front end (CLI, Slack bot, TUI) calls; see
docs/ARCHITECTURE.md. ``task`` is its cancellable runner."""
