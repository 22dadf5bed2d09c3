"""Load the linked problem: import both sides and build the callables the verifier compares."""
