// http.mjs drives a toolreg MCP server over streamable HTTP with the
// TypeScript MCP SDK's client, sending a bearer token. Usage:
//
//   node http.mjs URL TOKEN CALLS_JSON
//
// It connects to URL with TOKEN ("" for none) in the Authorization header,
// lists the tools and makes each call of CALLS_JSON ([{"name": ...,
// "arguments": {...}}, ...]), and prints one JSON object: whether it
// connected (and if not, the error), the tools listed, and each call's
// isError and text, or the error the SDK threw for it (an HTTP 403 among
// them).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, callsJSON] = process.argv.slice(2);
const calls = JSON.parse(callsJSON);
const headers = token ? { Authorization: `Bearer ${token}` } : {};
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
const client = new Client({ name: "toolreg-mcpjs", version: "0.0.0" });
const out = { connected: false, tools: [], calls: [] };
try {
  await client.connect(transport);
  out.connected = true;
} catch (err) {
  out.error = `${err?.message ?? err}`;
  console.log(JSON.stringify(out));
  process.exit(0);
}
try {
  const { tools } = await client.listTools();
  out.tools = tools.map((t) => t.name).sort();
  for (const c of calls) {
    try {
      const r = await client.callTool({ name: c.name, arguments: c.arguments });
      out.calls.push({ name: c.name, isError: r.isError ?? false, text: r.content?.[0]?.text ?? "" });
    } catch (err) {
      out.calls.push({ name: c.name, error: `${err?.message ?? err}`, code: err?.code ?? null });
    }
  }
  console.log(JSON.stringify(out));
  await client.close();
} catch (err) {
  console.error(`toolreg-mcpjs: ${err?.message ?? err}`);
  await client.close().catch(() => {});
  process.exit(1);
}
