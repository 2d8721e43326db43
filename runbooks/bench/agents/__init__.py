"""Programs stordoc ships to benchmark clients for one run (standard library only)."""
