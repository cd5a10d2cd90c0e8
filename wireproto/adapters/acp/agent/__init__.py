"""The agent role of ACP: serving an agent to one client.

* :mod:`.connection`: :class:`~.connection.AgentConnection`, the method table,
  session set-up, shutdown; the :class:`~wireproto.agent.api.Channel` of its sessions.
* :mod:`.calls`: the agent's requests to the client (permissions, files, questions).
* :mod:`.turns`: the prompt turns running on the connection.
* :mod:`.elicitation`: questions and URL interactions as ``elicitation/create``.
* :mod:`.mcp`: the MCP servers a client offers with a session.
"""
