// Crons through the official LangGraph JS client. Run by
// TestOfficialJSClientDrivesCrons with API_URL, API_KEY and SDK_ENTRY
// set. It creates a cron on a thread and one without, searches, counts and
// updates them, prints "crons: due <next_run_date>" and waits for the line
// "ticked" on stdin (the test moved the server's clock to that time); then
// it waits for the tick's runs, deletes the crons and prints "crons: ok".
// The first failed check exits 1 with what went wrong.
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const { Client } = await import(pathToFileURL(process.env.SDK_ENTRY).href);
const client = new Client({ apiUrl: process.env.API_URL, apiKey: process.env.API_KEY });

function check(ok, what, got) {
  if (!ok) {
    console.error(`crons: ${what}; got ${JSON.stringify(got)}`);
    process.exit(1);
  }
}

// eventually polls f until it returns a value, for at most 30s.
async function eventually(what, f) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const v = await f();
    if (v) return v;
    check(Date.now() < deadline, `timed out waiting: ${what}`, null);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const thread = await client.threads.create();
const onThread = await client.crons.createForThread(thread.thread_id, "agent", {
  schedule: "* * * * *",
  input: { topic: "js" },
  metadata: { by: "js" },
  multitaskStrategy: "enqueue",
});
check(typeof onThread.cron_id === "string", "createForThread answers a cron", onThread);
check(onThread.thread_id === thread.thread_id, "the cron is on the thread", onThread);
check(onThread.schedule === "* * * * *" && onThread.enabled === true, "the cron keeps its schedule, enabled", onThread);
check(typeof onThread.next_run_date === "string", "the cron has a next run date", onThread);

const alone = await client.crons.create("agent", {
  schedule: "* * * * *",
  input: { topic: "alone" },
  onRunCompleted: "keep",
});
check(alone.thread_id === null, "a cron made by create has no thread", alone);
check(alone.on_run_completed === "keep", "on_run_completed is kept", alone);

// Both are made at the same time (the server's clock stands still until
// the test moves it): sorted by created_at, the cron ids break the tie.
const all = await client.crons.search({ assistantId: "agent", sortBy: "created_at", sortOrder: "asc" });
const ids = [onThread.cron_id, alone.cron_id].sort();
check(all.length === 2 && all[0].cron_id === ids[0] && all[1].cron_id === ids[1],
  "search finds both crons, in the order of their ids", all);
check((await client.crons.search({ threadId: thread.thread_id })).length === 1, "search by thread finds one", null);
check((await client.crons.count()) === 2, "count counts both", null);
check((await client.crons.count({ metadata: { by: "js" } })) === 1, "count by metadata counts one", null);

const updated = await client.crons.update(onThread.cron_id, { input: { topic: "js2" } });
check(updated.payload?.input?.topic === "js2", "update changes the input", updated);
check(updated.next_run_date === onThread.next_run_date, "an update of the input keeps the next run date", updated);

console.log(`crons: due ${onThread.next_run_date}`);
const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (line === "ticked") break;
}

const runs = await eventually("the cron's run on its thread ends", async () => {
  const rs = await client.runs.list(thread.thread_id);
  return rs.length === 1 && rs[0].status === "success" ? rs : null;
});
const state = await client.threads.getState(thread.thread_id);
check(JSON.stringify(state.values.log) === JSON.stringify(["plan:js2"]), "the run ran the updated input", state.values);
check(runs[0].assistant_id === onThread.assistant_id, "the run is of the cron's assistant", runs[0]);

await eventually("the other cron's run ends on a thread of its own", async () => {
  for (const t of await client.threads.search({ limit: 100 })) {
    if (t.thread_id === thread.thread_id) continue;
    const rs = await client.runs.list(t.thread_id);
    if (rs.length === 1 && rs[0].status === "success") return true;
  }
  return false;
});

await client.crons.delete(onThread.cron_id);
await client.crons.delete(alone.cron_id);
check((await client.crons.search()).length === 0, "deleted crons are gone", null);
console.log("crons: ok");
lines.close();
