"""Everything that talks to Redis, an LLM or the OS: the bus, the runtime and the actor roles."""
