"""OpenEnv both ways: ``server`` serves any agentgym env over OpenEnv's wire format (built on
OpenEnv's own server), ``client`` makes any OpenEnv server an agentgym env id
(``openenv:http://HOST:PORT``). Both need the ``openenv`` extra (the ``openenv`` package, 0.10)."""
