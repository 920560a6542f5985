// client.mjs drives a toolreg MCP server with the TypeScript MCP SDK's
// client, a client nobody here wrote. Usage:
//
//   node client.mjs CALLS_JSON SERVER [ARGS...]
//
// It starts SERVER over stdio, lists its tools, makes each call of
// CALLS_JSON ([{"name": ..., "arguments": {...}}, ...]) and prints one JSON
// object: the tools with their outputSchema, and each call's isError,
// structuredContent and text. The SDK's callTool checks structuredContent
// against the tool's outputSchema (with ajv) and throws when it does not
// validate, or is missing for a tool that declares one: then this exits 1.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [callsJSON, command, ...args] = process.argv.slice(2);
const calls = JSON.parse(callsJSON);
const transport = new StdioClientTransport({ command, args, stderr: "inherit" });
const client = new Client({ name: "toolreg-mcpjs", version: "0.0.0" });
try {
  await client.connect(transport);
  const { tools } = await client.listTools();
  const out = { tools: {}, calls: [] };
  for (const t of tools) out.tools[t.name] = { outputSchema: t.outputSchema ?? null };
  for (const c of calls) {
    const r = await client.callTool({ name: c.name, arguments: c.arguments });
    out.calls.push({
      name: c.name,
      isError: r.isError ?? false,
      structuredContent: r.structuredContent ?? null,
      text: r.content?.[0]?.text ?? "",
    });
  }
  console.log(JSON.stringify(out));
  await client.close();
} catch (err) {
  console.error(`toolreg-mcpjs: ${err?.message ?? err}`);
  await client.close().catch(() => {});
  process.exit(1);
}
