"""Evidence runs beyond the variants: the isolated re-run's prepare and judge steps."""
