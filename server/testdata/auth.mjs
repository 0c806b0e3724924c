// Auth test of the Go server through the official LangGraph JS client.
// Run by TestOfficialJSClientSeesOnlyTheUsersThreads with API_URL, TOKEN_A
// (alice's), TOKEN_B (bob's) and SDK_ENTRY (the client's dist/index.js)
// set, against a server with server.OwnerPolicy: each user sees only
// their own threads, a client without credentials gets 401, /ok is
// public. The first failed check exits 1 with what went wrong.
import assert from "node:assert/strict";
import { pathToFileURL } from "node:url";

const { Client } = await import(pathToFileURL(process.env.SDK_ENTRY).href);
const apiUrl = process.env.API_URL;
const alice = new Client({ apiUrl, apiKey: process.env.TOKEN_A });
const bob = new Client({ apiUrl, apiKey: process.env.TOKEN_B });
const anonymous = new Client({ apiUrl, apiKey: null }); // null: no key from the environment either

// status returns the HTTP status a call failed with (200 when it did not).
async function status(call) {
  try {
    const r = await call();
    if (r && typeof r[Symbol.asyncIterator] === "function") for await (const _ of r);
    return 200;
  } catch (e) {
    if (typeof e?.status !== "number") throw e;
    return e.status;
  }
}

// /ok is public; everything else needs credentials.
const ok = await fetch(apiUrl + "/ok");
assert.equal(ok.status, 200, "/ok without credentials");
assert.deepEqual(await ok.json(), { ok: true });
assert.equal(await status(() => anonymous.threads.search()), 401, "threads.search without credentials");
assert.equal(await status(() => anonymous.threads.create()), 401, "threads.create without credentials");
assert.equal(await status(() => anonymous.assistants.search()), 401, "assistants.search without credentials");

// Each user creates a thread and runs on it.
const ta = await alice.threads.create({ metadata: { topic: "alice's" } });
const tb = await bob.threads.create({ metadata: { owner: "alice" } }); // claims alice owns it
assert.equal(ta.metadata.owner, "alice", "alice's thread's owner");
assert.equal(tb.metadata.owner, "bob", "bob's thread is bob's whatever he said");
const ra = await alice.runs.create(ta.thread_id, "agent", { input: { topic: "cats" } });
await alice.runs.join(ta.thread_id, ra.run_id);
const paused = await bob.runs.wait(tb.thread_id, "agent", { input: { topic: "dogs" } });
assert.deepEqual(paused.__interrupt__?.[0]?.value, { question: "approve dogs?" }, "bob's run on his thread");

// Each sees their own thread, and only it.
assert.equal((await alice.threads.get(ta.thread_id)).thread_id, ta.thread_id);
assert.equal((await bob.threads.get(tb.thread_id)).thread_id, tb.thread_id);
assert.deepEqual((await alice.threads.search()).map((t) => t.thread_id), [ta.thread_id], "alice's search");
assert.deepEqual((await bob.threads.search()).map((t) => t.thread_id), [tb.thread_id], "bob's search");
assert.deepEqual(await bob.threads.search({ metadata: { owner: "alice" } }), [], "bob searching owner alice");
assert.equal(await bob.threads.count({ metadata: { owner: "alice" } }), 0, "bob counting owner alice");
assert.equal((await alice.runs.list(ta.thread_id)).length, 1, "alice's runs");
assert.equal((await alice.threads.getState(ta.thread_id)).values.topic, "cats", "alice's state");

// Bob guessing alice's thread and run ids finds nothing there.
const tid = ta.thread_id;
const hidden = {
  "threads.get": () => bob.threads.get(tid),
  "threads.getState": () => bob.threads.getState(tid),
  "threads.getHistory": () => bob.threads.getHistory(tid),
  "threads.update": () => bob.threads.update(tid, { metadata: { owner: "bob" } }),
  "threads.updateState": () => bob.threads.updateState(tid, { values: { topic: "stolen" } }),
  "threads.copy": () => bob.threads.copy(tid),
  "runs.list": () => bob.runs.list(tid),
  "runs.get": () => bob.runs.get(tid, ra.run_id),
  "runs.join": () => bob.runs.join(tid, ra.run_id),
  "runs.create": () => bob.runs.create(tid, "agent", { input: { topic: "x" } }),
  "runs.wait": () => bob.runs.wait(tid, "agent", { input: { topic: "x" }, ifNotExists: "create" }),
  "runs.stream": () => bob.runs.stream(tid, "agent", { input: { topic: "x" } }),
  "runs.cancel": () => bob.runs.cancel(tid, ra.run_id),
  "threads.delete": () => bob.threads.delete(tid), // last
};
for (const [name, call] of Object.entries(hidden)) {
  assert.equal(await status(call), 404, `bob's ${name} on alice's thread`);
}

// Bob giving his thread to alice keeps it his.
const given = await bob.threads.update(tb.thread_id, { metadata: { owner: "alice" } });
assert.equal(given.metadata.owner, "bob", "bob's patch of owner");
assert.deepEqual((await alice.threads.search()).map((t) => t.thread_id), [ta.thread_id], "alice's search after bob's patch");

// Alice's thread is as she left it.
const after = await alice.threads.get(tid);
assert.equal(after.metadata.owner, "alice");
assert.equal((await alice.threads.getState(tid)).values.topic, "cats", "alice's state after bob's tries");
assert.equal((await alice.runs.list(tid)).length, 1, "alice's runs after bob's tries");

// The store: each user's namespace is theirs.
await alice.store.putItem(["alice", "notes"], "k", { v: 1 });
assert.equal(await status(() => bob.store.putItem(["alice", "notes"], "k", { v: 2 })), 403, "bob's put into alice's namespace");
assert.equal(await status(() => bob.store.getItem(["alice", "notes"], "k")), 403, "bob's get from alice's namespace");
assert.deepEqual((await bob.store.searchItems([])).items, [], "bob's search of the store");
assert.deepEqual((await alice.store.getItem(["alice", "notes"], "k")).value, { v: 1 });

console.log("auth: ok");
