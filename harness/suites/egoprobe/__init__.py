"""EgoProbe (long-range and exact memory in streaming egocentric video) as a suite."""
