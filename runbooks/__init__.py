"""runbooks package."""
