"""storage package."""
