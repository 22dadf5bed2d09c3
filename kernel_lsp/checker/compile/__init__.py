"""The compile stage: launches captured, every specialization compiled for every target, resources."""
