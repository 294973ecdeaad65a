// Several pending questions answered by id, breakpoints, goto and update,
// through the official LangGraph JS client, unchanged. Run by
// TestInterruptsSDK (go test ./server/) against a server with the agents
// "review" (a fan-out that asks one question per item) and "approve"
// (plan → approve → publish); it sets LOOM_URL and LOOM_KEY.
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

const pendingIDs = (thread) => Object.values(thread.interrupts).flat().map((i) => i.id);

test("three questions at once: two answered by id, the third stays pending, then answered", async () => {
  const t = await client.threads.create();
  const first = await client.runs.wait(t.thread_id, "review", { input: { items: ["a", "b", "c"] } });
  assert.equal(first.__interrupt__.length, 3);
  const [a, b, c] = first.__interrupt__.map((i) => i.id);
  assert.deepEqual(first.__interrupt__.map((i) => i.value.question), ["Keep a?", "Keep b?", "Keep c?"]);
  assert.deepEqual(pendingIDs(await client.threads.get(t.thread_id)).sort(), [a, b, c].sort());

  // One value for three questions does not say which it answers.
  await rejectsWith(client.runs.wait(t.thread_id, "review", { command: { resume: { keep: true } } }), 422, /3 questions/);

  const second = await client.runs.wait(t.thread_id, "review", { command: { resume: { [a]: { keep: true }, [c]: { keep: false } } } });
  assert.deepEqual(second.__interrupt__.map((i) => i.id), [b]);
  const thread = await client.threads.get(t.thread_id);
  assert.equal(thread.status, "interrupted");
  assert.deepEqual(pendingIDs(thread), [b]);
  const state = await client.threads.getState(t.thread_id);
  assert.deepEqual(state.tasks.flatMap((task) => task.interrupts.map((i) => i.id)), [b]);

  // An answered question is not pending any more.
  await rejectsWith(client.runs.wait(t.thread_id, "review", { command: { resume: { [a]: { keep: false } } } }), 409);

  const done = await client.runs.wait(t.thread_id, "review", { command: { resume: { [b]: { keep: true } } } });
  assert.deepEqual(done.verdicts, ["a:true", "b:true", "c:false"]);
  assert.equal(done.__interrupt__, undefined);
  assert.equal((await client.threads.get(t.thread_id)).status, "idle");
});

test("interrupt_before and interrupt_after stop the run; a run without input continues it", async () => {
  const t = await client.threads.create();
  await client.runs.wait(t.thread_id, "approve", { input: {}, interruptBefore: ["approve"] });
  let state = await client.threads.getState(t.thread_id);
  assert.deepEqual(state.values.trail, ["plan"]);
  assert.deepEqual(state.next, ["approve"]);
  assert.equal((await client.threads.get(t.thread_id)).status, "interrupted");

  // Continue, stopping after approve this time.
  await client.runs.wait(t.thread_id, "approve", { interruptAfter: ["approve"] });
  state = await client.threads.getState(t.thread_id);
  assert.deepEqual(state.values.trail, ["plan", "approve"]);
  assert.deepEqual(state.next, ["publish"]);

  const end = await client.runs.wait(t.thread_id, "approve");
  assert.deepEqual(end.trail, ["plan", "approve", "publish"]);

  // "*" stops before every node.
  const u = await client.threads.create();
  await client.runs.wait(u.thread_id, "approve", { input: {}, interruptBefore: "*" });
  assert.deepEqual((await client.threads.getState(u.thread_id)).next, ["plan"]);

  await rejectsWith(client.runs.wait(t.thread_id, "approve", { input: {}, interruptBefore: ["nope"] }), 422, /nope/);
});

test("command.goto with command.update runs from that node on the updated state", async () => {
  const t = await client.threads.create();
  const jumped = await client.runs.wait(t.thread_id, "approve", { command: { goto: "publish", update: { path: "jumped" } } });
  assert.deepEqual(jumped.trail, ["publish"]);
  assert.equal(jumped.path, "jumped");

  const again = await client.runs.wait(t.thread_id, "approve", { command: { goto: "approve" } });
  assert.deepEqual(again.trail, ["publish", "approve", "publish"]);

  await rejectsWith(client.runs.wait(t.thread_id, "approve", { command: { goto: "nowhere" } }), 422, /nowhere/);
  await rejectsWith(client.runs.wait(t.thread_id, "approve", { command: { update: { colour: "red" } } }), 422, /colour/);
});
