"""The MCP server at /mcp: knowledge bases for MCP clients."""
