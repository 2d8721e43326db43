"""Ceph pgs checks (owner: ceph helper)."""
