"""Ceph osd checks (owner: ceph helper)."""
