"""What inputs the verifier tries: named variants, sizes, block-size and tie variants."""
