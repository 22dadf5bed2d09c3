"""The verify stage: the verifier's runner, its rules and its error budget."""
