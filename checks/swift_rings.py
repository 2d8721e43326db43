"""swift_rings checks (owner: hosts/swift helper)."""
