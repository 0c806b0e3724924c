// Smoke test of the Go server through the official LangGraph JS client.
// Run by TestOfficialJSClientDrivesTheServer with API_URL, API_KEY and
// SDK_ENTRY (the client's dist/index.js) set. Every answer is checked;
// the first failed check exits 1 with what went wrong. The scenario is in
// ref/scenario.mjs, which ref/compare.mjs also runs against LangGraph's own
// JS server.
import { pathToFileURL } from "node:url";
import { asserting, scenario } from "./ref/scenario.mjs";

const { Client } = await import(pathToFileURL(process.env.SDK_ENTRY).href);
const client = new Client({ apiUrl: process.env.API_URL, apiKey: process.env.API_KEY });
const badClient = new Client({ apiUrl: process.env.API_URL, apiKey: "wrong" });
const harness = async (method, path) => (await fetch(process.env.API_URL + path, { method })).json();

await scenario({ client, badClient, harness, check: asserting() });
console.log("smoke: ok");
