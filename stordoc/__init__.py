"""stordoc package."""
