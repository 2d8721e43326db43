"""Quick benchmarks (RADOS, Swift, RBD, physical limits): plan, run, store, compare, chart."""
