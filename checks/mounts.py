"""mounts checks (owner: hosts/swift helper)."""
