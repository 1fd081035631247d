"""Multi-turn RL and SFT for agent policies (``agentgym train CONFIG.yaml``)."""
