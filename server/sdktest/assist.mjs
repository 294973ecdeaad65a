// Assistants as versioned configurations, run fields the server refuses,
// and batch runs, through the official LangGraph JS client, unchanged.
// Run by TestAssistantsSDK (go test ./server/) against a server with the
// agents loom serve registers (the cabin among them); it sets LOOM_URL
// and LOOM_KEY.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@langchain/langgraph-sdk";

const client = new Client({ apiUrl: process.env.LOOM_URL, apiKey: process.env.LOOM_KEY, callerOptions: { maxRetries: 0 } });

async function rejectsWith(promise, status, words) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.status, status, `want HTTP ${status}, got ${err.status}: ${err.message}`);
    if (words) assert.match(err.message, words);
    return true;
  });
}

const hasHan = (s) => /\p{Script=Han}/u.test(s);

test("assistants: create, update, versions, latest; a run with locale en answers in English", async () => {
  const schemas = await client.assistants.getSchemas("cabin");
  assert.deepEqual(schemas.config_schema.properties.locale.enum, ["zh-CN", "en"]);

  const made = await client.assistants.create({ graphId: "cabin", name: "cabin zh", config: { configurable: { locale: "zh-CN" } }, metadata: { owner: "sdk" } });
  assert.equal(made.graph_id, "cabin");
  assert.equal(made.version, 1);
  const id = made.assistant_id;

  const updated = await client.assistants.update(id, { context: { locale: "en" }, name: "cabin en" });
  assert.equal(updated.version, 2);
  assert.equal(updated.name, "cabin en");
  assert.equal(updated.metadata.owner, "sdk");
  assert.equal((await client.assistants.get(id)).version, 2);

  const versions = await client.assistants.getVersions(id);
  assert.deepEqual(versions.map((v) => v.version), [2, 1]);

  // Chinese words, English answer: the assistant's locale decides.
  const en = await client.runs.wait(null, id, { input: { text: "打开车窗" } });
  assert.ok(en.reply.message && !hasHan(en.reply.message), `locale en answers in English: ${en.reply.message}`);
  // The run's own configuration goes over the assistant's.
  const zh = await client.runs.wait(null, id, { input: { text: "open the window" }, config: { configurable: { locale: "zh-CN" } } });
  assert.ok(hasHan(zh.reply.message), `the run's locale zh-CN answers in Chinese: ${zh.reply.message}`);

  const back = await client.assistants.setLatest(id, 1);
  assert.equal(back.version, 1);
  const again = await client.runs.wait(null, id, { input: { text: "open the window" } });
  assert.ok(hasHan(again.reply.message), `version 1 (zh-CN) answers in Chinese: ${again.reply.message}`);

  const found = await client.assistants.search({ graphId: "cabin" });
  assert.deepEqual(found.map((a) => a.assistant_id), [id, "cabin"]);

  await rejectsWith(client.assistants.update(id, { context: { locale: "fr" } }), 422, /locale/);
  await rejectsWith(client.assistants.create({ graphId: "cabin", config: { configurable: { volume: 3 } } }), 422, /volume/);
  await client.assistants.delete(id);
  await rejectsWith(client.assistants.get(id), 404);
});

test("run fields the server does not act on are refused, naming them", async () => {
  await rejectsWith(client.runs.create(null, "cabin", { input: { text: "hi" }, _langsmithTracer: { projectName: "x" } }), 422, /langsmith_tracer/);
  await rejectsWith(client.runs.wait(null, "cabin", { input: { text: "hi" }, config: { tags: ["x"] } }), 422, /config\.tags/);
  await rejectsWith(client.runs.wait(null, "cabin", { input: { text: "hi" }, context: { mood: "x" } }), 422, /mood/);
  await rejectsWith(client.runs.wait(null, "demo", { input: { title: "x" }, context: { locale: "en" } }), 422, /locale.* is not one of agent demo.s: model, temperature/);
  await rejectsWith(client.runs.wait(null, "cabin", { input: { text: "hi" }, durability: "never" }), 422, /durability/);
  // Every agent takes the model settings; this server lists no models.
  await rejectsWith(client.runs.wait(null, "cabin", { input: { text: "hi" }, config: { configurable: { temperature: 3 } } }), 422, /temperature must be from 0 to 2/);
  await rejectsWith(client.runs.wait(null, "demo", { input: { title: "x" }, context: { model: "gpt-x" } }), 422, /gpt-x.*no model configured/);
  // What it does anyway may be asked for.
  const ok = await client.runs.wait(null, "cabin", { input: { text: "open the window" }, durability: "sync", streamResumable: true, context: { locale: "en" } });
  assert.ok(!hasHan(ok.reply.message), ok.reply.message);
});

test("a batch of runs without threads", async () => {
  const runs = await client.runs.createBatch([
    { assistantId: "cabin", input: { text: "open the window" }, context: { locale: "en" } },
    { assistantId: "demo", input: { title: "batch" } },
  ]);
  assert.equal(runs.length, 2);
  assert.deepEqual(runs.map((r) => r.assistant_id), ["cabin", "demo"]);
  for (const r of runs) assert.ok(["pending", "running", "success", "interrupted"].includes(r.status), r.status);
  // A bad item is refused, naming it.
  await rejectsWith(client.runs.createBatch([{ assistantId: "cabin", input: { text: "x" } }, { assistantId: "cabin", input: { text: "x" }, context: { mood: 1 } }]), 422, /runs\[1\]/);
});
