"""Tools for developers: the real-browser helpers shared by the tests and the benchmarks."""
