// elicit.mjs answers a toolreg MCP server's approval questions with the
// TypeScript MCP SDK's client, a client nobody here wrote. Usage:
//
//   node elicit.mjs ACTION CALL_JSON SERVER [ARGS...]
//
// It starts SERVER over stdio with a client that declares the elicitation
// capability and answers every elicitation/create with ACTION (accept,
// decline or cancel; accept with the note "approved from TypeScript"),
// makes the call of CALL_JSON ({"name": ..., "arguments": {...}, "_meta":
// {...}}) twice, and prints one JSON object: the messages it was asked, and
// each call's isError, structuredContent, text and _meta.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [action, callJSON, command, ...args] = process.argv.slice(2);
const call = JSON.parse(callJSON);
const transport = new StdioClientTransport({ command, args, stderr: "inherit" });
const client = new Client(
  { name: "toolreg-mcpjs", version: "0.0.0" },
  { capabilities: { elicitation: { form: {} } } },
);
const out = { asked: [], calls: [] };
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  out.asked.push(req.params.message);
  if (action === "accept") return { action, content: { note: "approved from TypeScript" } };
  return { action };
});
try {
  await client.connect(transport);
  for (let i = 0; i < 2; i++) {
    const r = await client.callTool(call);
    out.calls.push({
      isError: r.isError ?? false,
      structuredContent: r.structuredContent ?? null,
      text: r.content?.[0]?.text ?? "",
      meta: r._meta ?? {},
    });
  }
  console.log(JSON.stringify(out));
  await client.close();
} catch (err) {
  console.error(`toolreg-mcpjs: ${err?.message ?? err}`);
  await client.close().catch(() => {});
  process.exit(1);
}
