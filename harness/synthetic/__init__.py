"""The synthetic world every suite's generator draws from: scenes, events, rendering, video."""
