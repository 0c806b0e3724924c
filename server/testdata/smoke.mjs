// Smoke test of the Go server through the official LangGraph JS client.
// Run by TestOfficialJSClientDrivesTheServer with API_URL, API_KEY and
// SDK_ENTRY (the client's dist/index.js) set. Every answer is checked;
// the first failed check exits 1 with what went wrong.
import assert from "node:assert/strict";
import { pathToFileURL } from "node:url";

const { Client } = await import(pathToFileURL(process.env.SDK_ENTRY).href);
const client = new Client({ apiUrl: process.env.API_URL, apiKey: process.env.API_KEY });

const assistants = await client.assistants.search({ graphId: "agent" });
assert.equal(assistants.length, 1);
assert.equal(assistants[0].assistant_id, "fe096781-5601-53d2-b2f6-0d3403f7e9ca");
const graph = await client.assistants.getGraph("agent");
assert.ok(graph.nodes.some((n) => n.id === "ask"));

const thread = await client.threads.create({ metadata: { owner: "smoke" } });
assert.equal(thread.status, "idle");

// Stream a run that pauses at an interrupt.
let created = null;
const seen = [];
for await (const chunk of client.runs.stream(thread.thread_id, "agent", {
  input: { topic: "cats" },
  streamMode: ["values", "updates", "custom"],
  onRunCreated: (meta) => { created = meta; },
})) {
  seen.push(chunk);
}
assert.ok(created && created.run_id, "onRunCreated fired from Content-Location");
assert.equal(created.thread_id, thread.thread_id);
assert.deepEqual(seen.map((c) => c.event), ["metadata", "values", "custom", "updates", "values", "updates", "values", "end"]);
assert.deepEqual(seen[2].data, { progress: "planning cats" });
const interrupt = seen[5].data.__interrupt__[0];
assert.deepEqual(interrupt.value, { question: "approve cats?" });

let state = await client.threads.getState(thread.thread_id);
assert.deepEqual(state.next, ["ask"]);
assert.deepEqual(state.tasks[0].interrupts[0].value, { question: "approve cats?" });
assert.equal((await client.threads.get(thread.thread_id)).status, "interrupted");

// Resume with a Command through wait.
const final = await client.runs.wait(thread.thread_id, "agent", { command: { resume: "yes" } });
assert.deepEqual(final.log, ["plan:cats", "ask", "finish"]);
assert.equal(final.answer, "yes");

const history = await client.threads.getHistory(thread.thread_id, { limit: 10 });
assert.deepEqual(history.map((h) => h.metadata.step), [3, 2, 1, 0, -1]);

// Update state, then read it back.
await client.threads.updateState(thread.thread_id, { values: { answer: "edited" } });
state = await client.threads.getState(thread.thread_id);
assert.equal(state.values.answer, "edited");

// Fork from the first checkpoint.
const first = history[history.length - 1].checkpoint.checkpoint_id;
const forked = await client.runs.wait(thread.thread_id, "agent", { checkpointId: first, input: null });
assert.ok(forked.__interrupt__, "the fork paused at ask again");

// Background run, join, list; reject while busy is impossible to
// provoke deterministically with this graph, so only the shapes are
// checked here (the Go tests cover the strategies).
const t2 = await client.threads.create();
const run = await client.runs.create(t2.thread_id, "agent", { input: { topic: "dogs" } });
assert.ok(["pending", "running"].includes(run.status));
const joined = await client.runs.join(t2.thread_id, run.run_id);
assert.ok(joined.__interrupt__);
const runs = await client.runs.list(t2.thread_id);
assert.equal(runs.length, 1);
assert.equal((await client.runs.get(t2.thread_id, run.run_id)).status, "success");
await client.runs.cancel(t2.thread_id, run.run_id, true);

// Multitask strategies and cancel, on the "slow" graph whose step waits
// until the Go test harness releases it (GET /__test/started blocks until
// a step started and answers its topic; POST /__test/release lets one
// step finish).
const harness = async (method, path) => (await fetch(process.env.API_URL + path, { method })).json();
const t3 = await client.threads.create();
const r1 = await client.runs.create(t3.thread_id, "slow", { input: { topic: "a" } });
assert.equal(await harness("GET", "/__test/started"), "a");
await assert.rejects(
  client.runs.create(t3.thread_id, "slow", { input: { topic: "b" }, multitaskStrategy: "reject" }),
  /409/,
);
const r2 = await client.runs.create(t3.thread_id, "slow", { input: { topic: "b" }, multitaskStrategy: "enqueue" });
assert.equal(r2.status, "pending");
const r3 = await client.runs.create(t3.thread_id, "slow", { input: { topic: "c" }, multitaskStrategy: "enqueue" });
await client.runs.cancel(t3.thread_id, r3.run_id); // pending: taken off the queue
await harness("POST", "/__test/release"); // a finishes; b starts
assert.equal(await harness("GET", "/__test/started"), "b");
await client.runs.cancel(t3.thread_id, r2.run_id, true); // running: cancelled, waited for
assert.equal((await client.runs.get(t3.thread_id, r1.run_id)).status, "success");
assert.equal((await client.runs.get(t3.thread_id, r2.run_id)).status, "interrupted");
assert.equal((await client.runs.get(t3.thread_id, r3.run_id)).status, "interrupted");
// interrupt: a running run is stopped for the new one.
const r4 = await client.runs.create(t3.thread_id, "slow", { input: { topic: "d" } });
assert.equal(await harness("GET", "/__test/started"), "d");
const r5 = await client.runs.create(t3.thread_id, "slow", { input: { topic: "e" }, multitaskStrategy: "interrupt" });
assert.equal(await harness("GET", "/__test/started"), "e");
await harness("POST", "/__test/release");
const last = await client.runs.join(t3.thread_id, r5.run_id);
assert.deepEqual(last.log, ["step:a", "step:e"]);
assert.equal((await client.runs.get(t3.thread_id, r4.run_id)).status, "interrupted");

// Store.
await client.store.putItem(["users", "u1"], "prefs", { theme: "dark" });
const item = await client.store.getItem(["users", "u1"], "prefs");
assert.deepEqual(item.value, { theme: "dark" });
assert.equal(await client.store.getItem(["users", "u1"], "nope"), null);
const found = await client.store.searchItems(["users"], { filter: { theme: "dark" } });
assert.equal(found.items.length, 1);
const ns = await client.store.listNamespaces({ prefix: ["users"] });
assert.deepEqual(ns.namespaces, [["users", "u1"]]);
await client.store.deleteItem(["users", "u1"], "prefs");
assert.equal(await client.store.getItem(["users", "u1"], "prefs"), null);

// Threads search and delete.
const mine = await client.threads.search({ metadata: { owner: "smoke" } });
assert.equal(mine.length, 1);
await client.threads.delete(t2.thread_id);

// A wrong key is refused (403 is not retried by the client).
const bad = new Client({ apiUrl: process.env.API_URL, apiKey: "wrong" });
await assert.rejects(bad.threads.create(), /403/);

console.log("smoke: ok");
