// The MCP Inspector's CLI (@modelcontextprotocol/inspector --cli), as a
// user runs it: tools listed, an intent called and replayed, a changed
// payload refused, and a bad token refused with the gateway's reason.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { base, token, callbackKey, callbackPayload, stateOf, decodeProblem, step } from "./lib.mjs";

const bin = fileURLToPath(new URL("node_modules/.bin/mcp-inspector", import.meta.url));
// The Inspector keeps a catalog and OAuth state under HOME: a home of its
// own keeps the run from the user's and the user's from the run.
const home = mkdtempSync(join(tmpdir(), "oncegate-inspector-"));
process.on("exit", () => rmSync(home, { recursive: true, force: true }));

// inspector runs the CLI against /mcp with the arguments and returns its
// exit code and output.
function inspector(authorization, ...args) {
	const argv = ["--cli", new URL("/mcp", base).href, "--transport", "http", "--format", "json", ...args];
	if (authorization) argv.push("--header", `Authorization: ${authorization}`);
	return new Promise((resolve) => {
		execFile(bin, argv, {
			env: { ...process.env, HOME: home, MCP_INSPECTOR_SECRET_STORE: "memory", NO_COLOR: "1" },
			timeout: 60_000,
		}, (err, stdout, stderr) => {
			resolve({ code: err ? (err.code ?? 1) : 0, stdout, stderr, said: `exit ${err ? err.code : 0}\nstdout: ${stdout}\nstderr: ${stderr}` });
		});
	});
}

// result is the JSON result the CLI printed on success.
function result(r) {
	assert.equal(r.code, 0, r.said);
	const out = JSON.parse(r.stdout);
	assert.ok(out.result, r.said);
	return out.result;
}

const bearer = `Bearer ${token}`;
const key = callbackKey("inspector");

await step("inspector: tools/list lists the intents", async () => {
	const { tools } = result(await inspector(bearer, "--method", "tools/list"));
	const names = tools.map((t) => t.name);
	for (const want of ["crm.callback.create", "invoice.create", "get_operation"]) {
		assert.ok(names.includes(want), `no ${want}: ${names.join(", ")}`);
	}
});

const call = (payload) => inspector(bearer, "--method", "tools/call", "--tool-name", "crm.callback.create",
	"--tool-args-json", JSON.stringify({ operation_key: key, payload }));
let first;

await step("inspector: tools/call crm.callback.create succeeds", async () => {
	const res = result(await call(callbackPayload()));
	assert.notEqual(res.isError, true, JSON.stringify(res));
	first = res.structuredContent;
	assert.equal(stateOf(first), "succeeded", JSON.stringify(first));
	assert.equal(first.replayed, false);
});

await step("inspector: the same call again is a replay", async () => {
	const res = result(await call(callbackPayload()));
	assert.notEqual(res.isError, true, JSON.stringify(res));
	assert.equal(res.structuredContent.target_object_id, first.target_object_id);
	assert.equal(res.structuredContent.replayed, true);
});

await step("inspector: a changed payload shows IDEMPOTENCY_KEY_PAYLOAD_MISMATCH", async () => {
	const r = await call(callbackPayload("another comment"));
	// The CLI prints the tool's error result and exits non-zero.
	assert.notEqual(r.code, 0, `a changed payload was not refused: ${r.said}`);
	const res = JSON.parse(r.stdout).result;
	assert.equal(res?.isError, true, r.said);
	assert.deepEqual(res.structuredContent.errors.map((e) => e.code), ["IDEMPOTENCY_KEY_PAYLOAD_MISMATCH"], r.said);
	decodeProblem(res._meta?.http_status, "application/problem+json", JSON.stringify(res.structuredContent), r.said);
});

await step("inspector: a bad token shows the gateway's reason", async () => {
	// --stored-auth-only: the CLI's own advice for runs without a person at
	// a terminal. Without it, the Inspector answers any 401 by starting
	// OAuth (interactive, or "requires a TTY" without one).
	const r = await inspector("Bearer og_not-a-token-of-this-gateway", "--stored-auth-only", "--method", "tools/list");
	assert.notEqual(r.code, 0, `a bad token was accepted: ${r.said}`);
	const said = r.stdout + r.stderr;
	assert.match(said, /UNAUTHENTICATED/, r.said);
	assert.match(said, /unknown or revoked/, r.said);
});
