"""Ceph cluster checks (owner: ceph helper)."""
