// Loom's /mcp endpoint tested with the official MCP TypeScript client
// (@modelcontextprotocol/sdk), unchanged. Run by TestMCPSDK in ../
// (go test ./server/), against a server with the agents loom serve has.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = process.env.LOOM_URL;
const key = process.env.LOOM_KEY;

async function connect(k = key) {
  const headers = k ? { Authorization: `Bearer ${k}` } : {};
  const transport = new StreamableHTTPClientTransport(new URL("/mcp", url), { requestInit: { headers } });
  const client = new Client({ name: "loom-sdktest", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

const text = (res) => res.content.filter((c) => c.type === "text").map((c) => c.text).join("");

test("a client without the key is refused", async () => {
  await assert.rejects(connect(""));
});

test("lists every agent as a tool with its input schema", async () => {
  const client = await connect();
  try {
    const { tools } = await client.listTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    for (const name of ["cabin", "sqlagent", "demo"]) {
      assert.ok(byName[name], `no tool ${name} in ${Object.keys(byName)}`);
      assert.equal(byName[name].inputSchema.type, "object");
      assert.ok(byName[name].inputSchema.properties.thread_id, `${name} lacks thread_id`);
    }
    assert.ok(byName.cabin.inputSchema.properties.text, "cabin's schema lacks text");
    assert.ok(byName.sqlagent.inputSchema.properties.question, "sqlagent's schema lacks question");
  } finally {
    await client.close();
  }
});

test("calls the cabin", async () => {
  const client = await connect();
  try {
    const res = await client.callTool({ name: "cabin", arguments: { text: "open the windows" } });
    assert.ok(!res.isError, text(res));
    assert.match(text(res), /window/i);
    assert.equal(res.structuredContent.status, "done");
  } finally {
    await client.close();
  }
});

test("calls the SQL explorer", async () => {
  const client = await connect();
  try {
    const res = await client.callTool({ name: "sqlagent", arguments: { question: "SELECT 6 * 7 AS answer" } });
    assert.ok(!res.isError, text(res));
    assert.match(text(res), /42/);
  } finally {
    await client.close();
  }
});

test("the demo's question comes back with its thread id and a second call answers it", async () => {
  const client = await connect();
  try {
    const progress = [];
    const first = await client.callTool({ name: "demo", arguments: { title: "launch" } }, undefined, {
      onprogress: (p) => progress.push(p),
    });
    assert.ok(!first.isError, text(first));
    const { thread_id: thread, status } = first.structuredContent;
    assert.equal(status, "interrupted");
    assert.ok(thread);
    assert.ok(text(first).includes(thread), text(first));

    const resources = await client.listResources();
    assert.ok(resources.resources.some((r) => r.name === thread), "the thread is not among the resources");

    const second = await client.callTool({ name: "demo", arguments: { thread_id: thread, answer: "yes" } });
    assert.ok(!second.isError, text(second));
    assert.equal(second.structuredContent.status, "done");
    assert.equal(second.structuredContent.thread_id, thread);
  } finally {
    await client.close();
  }
});
