"""Ceph cache checks (owner: ceph helper)."""
