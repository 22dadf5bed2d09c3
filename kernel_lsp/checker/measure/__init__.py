"""The measure stage (GPU): clocks, statistics, ceilings, roofline and the performance rules."""
