"""OpenEnv both ways: ``server`` serves any agentgym env over OpenEnv's wire format (built on
openenv-core's own server), ``client`` makes any OpenEnv server an agentgym env id
(``openenv:http://HOST:PORT``). Both need the ``openenv`` extra (``openenv-core``)."""
