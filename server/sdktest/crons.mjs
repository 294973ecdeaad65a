// Crons, webhooks and retention through the official LangGraph JS client.
// Run by TestCronsSDK (go test ./server/), which starts two replicas on
// one Postgres behind a round-robin balancer (or one SQLite server), sets
// LOOM_URL and LOOM_KEY, and lets webhooks reach loopback.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer } from "node:http";
import { Client } from "@langchain/langgraph-sdk";

const apiUrl = process.env.LOOM_URL;
const apiKey = process.env.LOOM_KEY;
const client = new Client({ apiUrl, apiKey, callerOptions: { maxRetries: 0 } });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(what, cond, ms = 15000) {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

async function api(method, path, body) {
  const res = await fetch(apiUrl + path, {
    method,
    headers: { "content-type": "application/json", "x-api-key": apiKey },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

test("a thread's cron fires once per tick, and its webhook is signed", async () => {
  const got = [];
  const hook = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      got.push({ body: Buffer.concat(chunks), sig: req.headers["x-loom-signature"] });
      res.end();
    });
  });
  await new Promise((r) => hook.listen(0, "127.0.0.1", r));
  try {
    const { secret } = (await api("GET", "/webhooks/secret")).body;
    const thread = await client.threads.create();
    const began = Date.now();
    const cron = await client.crons.createForThread(thread.thread_id, "echo", {
      schedule: "@every 1s",
      input: { text: "tick" },
      multitaskStrategy: "enqueue",
      webhook: `http://127.0.0.1:${hook.address().port}/runs`,
    });
    assert.equal(cron.thread_id, thread.thread_id);
    assert.ok(cron.next_run_date, "a next run date");
    await until("three runs", async () => (await client.runs.list(thread.thread_id, { limit: 100 })).length >= 3);
    const found = await client.crons.search({ threadId: thread.thread_id });
    assert.deepEqual(found.map((c) => c.cron_id), [cron.cron_id]);
    assert.equal(await client.crons.count({ assistantId: "echo" }), 1);
    await client.crons.delete(cron.cron_id);
    const window = Date.now() - began;
    await sleep(2500);
    const runs = await client.runs.list(thread.thread_id, { limit: 100 });
    assert.ok(runs.length <= Math.floor(window / 1000) + 2, `${runs.length} runs in ${window} ms: more than one a tick`);
    for (const r of runs) assert.equal(r.metadata.cron_id, cron.cron_id);

    // Each listed run's delivery, matched by run id: a tick claimed just
    // before the delete may add a run (and a delivery) after the list.
    const delivered = (id) => got.some((d) => JSON.parse(d.body).run_id === id);
    await until("a delivery per run", async () => runs.every((r) => delivered(r.run_id)));
    for (const d of got) {
      const want = "sha256=" + createHmac("sha256", secret).update(d.body).digest("hex");
      assert.ok(timingSafeEqual(Buffer.from(d.sig), Buffer.from(want)), "signature verifies");
      const body = JSON.parse(d.body);
      assert.equal(body.thread_id, thread.thread_id);
      assert.equal(body.status, "success");
      assert.match(body.values.reply, /tick/);
    }
    // The server records an attempt once the receiver has answered it:
    // until then the delivery reads "due", untried.
    for (const r of runs) {
      let w;
      await until(`the delivery of run ${r.run_id} recorded`, async () => {
        w = await api("GET", `/threads/${thread.thread_id}/runs/${r.run_id}/webhook`);
        return w.status !== 200 || w.body.status !== "due" || w.body.tries !== 0;
      });
      assert.equal(w.status, 200);
      assert.equal(w.body.status, "delivered");
    }
  } finally {
    hook.close();
  }
});

test("thread TTLs and prune delete what they should and nothing else", async () => {
  const gone = await client.threads.create({ ttl: { ttl: 0.02, strategy: "delete" } });
  const kept = await client.threads.create({ ttl: 600 });
  const bare = await client.threads.create();
  await client.runs.wait(bare.thread_id, "echo", { input: { text: "one" } });
  await client.runs.wait(bare.thread_id, "echo", { input: { text: "two" } });
  const before = (await client.threads.getHistory(bare.thread_id, { limit: 100 })).length;
  assert.ok(before > 2);

  await until("the TTL applied", async () => {
    try {
      await client.threads.get(gone.thread_id);
      return false;
    } catch (err) {
      return err.status === 404;
    }
  });
  assert.equal((await client.threads.get(kept.thread_id)).thread_id, kept.thread_id);

  const cut = await api("POST", "/threads/prune", { thread_ids: [bare.thread_id], strategy: "keep_latest" });
  assert.deepEqual(cut.body, { pruned_count: 1 });
  const history = await client.threads.getHistory(bare.thread_id, { limit: 100 });
  assert.equal(history.length, 1);
  assert.match(history[0].values.reply, /two/);

  const del = await api("POST", "/threads/prune", { thread_ids: [bare.thread_id, "no-such-thread"] });
  assert.deepEqual(del.body, { pruned_count: 1 });
  assert.equal((await client.threads.get(kept.thread_id)).thread_id, kept.thread_id, "a thread not named stays");
});
