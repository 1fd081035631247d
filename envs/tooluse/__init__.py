"""Tool use with a simulated user (tau-bench / tau2-bench) -- docs page to be written."""
