// The official MCP TypeScript SDK's client (@modelcontextprotocol/sdk,
// StreamableHTTPClientTransport) against the gateway's /mcp: tools listed,
// an intent called, its replay, a changed payload under the same key, and
// a bad or missing token refused with the gateway's reason in front of
// the user.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { base, token, contour, callbackKey, callbackPayload, stateOf, assertBearerChallenge, decodeProblem, step } from "./lib.mjs";

// connect opens a client session with authorization as the Authorization
// header (none when undefined). Every HTTP answer the transport gets is
// kept in seen, so a check can read the headers the client was given;
// an error answer with a copy of its body as body.
async function connect(authorization, seen = []) {
	const client = new Client({ name: "oncegate-conformance", version: "1.0.0" });
	const transport = new StreamableHTTPClientTransport(new URL("/mcp", base), {
		requestInit: authorization === undefined ? {} : { headers: { Authorization: authorization } },
		fetch: async (url, init) => {
			const resp = await fetch(url, init);
			if (resp.status >= 400) {
				const body = await resp.text();
				seen.push({ status: resp.status, headers: resp.headers, body });
				return new Response(body, { status: resp.status, statusText: resp.statusText, headers: resp.headers });
			}
			seen.push(resp);
			return resp;
		},
	});
	await client.connect(transport);
	return client;
}

const client = await connect(`Bearer ${token}`);
const key = callbackKey("sdk");
let first;

await step("tools/list offers the intents and get_operation", async () => {
	const { tools } = await client.listTools();
	const names = tools.map((t) => t.name);
	for (const want of ["crm.callback.create", "invoice.create", "get_operation"]) {
		assert.ok(names.includes(want), `tools/list has no ${want}: ${names.join(", ")}`);
	}
	const cb = tools.find((t) => t.name === "crm.callback.create");
	assert.equal(cb.inputSchema.type, "object");
	assert.ok(cb.inputSchema.required?.includes("operation_key"), "crm.callback.create does not require operation_key");
	assert.ok(cb.inputSchema.properties?.payload, "crm.callback.create has no payload argument");
});

// Clients apply MCP's defaults to hints a tool leaves out — destructive
// and open-world both true — so every hint is said outright.
// The server advertises what it does: tools, without listChanged (no
// notification can come: the endpoint is stateless), and no resources
// or prompts, whose methods are then not found.
await step("capabilities: tools without listChanged, no resources or prompts", async () => {
	const caps = client.getServerCapabilities();
	assert.ok(caps?.tools, `no tools capability: ${JSON.stringify(caps)}`);
	assert.notEqual(caps.tools.listChanged, true, `tools.listChanged is advertised: ${JSON.stringify(caps)}`);
	assert.equal(caps.resources, undefined, `resources advertised: ${JSON.stringify(caps)}`);
	assert.equal(caps.prompts, undefined, `prompts advertised: ${JSON.stringify(caps)}`);
	for (const [what, call] of [["resources/list", () => client.listResources()], ["prompts/list", () => client.listPrompts()]]) {
		await assert.rejects(call, (err) => err?.code === -32601, `${what} is answered though not advertised`);
	}
});

await step("every tool says its hints, its output schema and how to retry", async () => {
	const { tools } = await client.listTools();
	const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
	for (const t of tools) {
		const a = t.annotations ?? {};
		for (const hint of ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"]) {
			if (a.readOnlyHint && hint === "destructiveHint") continue; // meaningless on a read
			assert.equal(typeof a[hint], "boolean", `${t.name}: ${hint} is not set: ${JSON.stringify(a)}`);
		}
		// The SDK validates every structured result against it.
		assert.equal(t.outputSchema?.type, "object", `${t.name} has no output schema`);
		assert.match(t.description ?? "", /^[A-Z]/, `${t.name}: the description is not a sentence: ${t.description}`);
	}
	const hints = (name) => byName[name]?.annotations ?? assert.fail(`no tool ${name}`);
	assert.deepEqual(
		[hints("get_operation").readOnlyHint, hints("get_operation").openWorldHint],
		[true, false], "get_operation reads the gateway's journal only");
	assert.deepEqual(
		[hints("crm.callback.create").readOnlyHint ?? false, hints("crm.callback.create").destructiveHint, hints("crm.callback.create").idempotentHint],
		[false, false, true], "crm.callback.create adds a task, once per key");
	assert.equal(hints("invoice.create").destructiveHint, false, "invoice.create adds an invoice");
	assert.equal(hints("payment.charge").destructiveHint, true, "payment.charge moves money");
	assert.equal(hints("sales_order.get_status").readOnlyHint, true);
	const desc = byName["crm.callback.create"].description;
	assert.ok(desc.includes("same operation_key and the same payload"), `crm.callback.create does not say what a retry resends: ${desc}`);
	assert.ok(desc.includes(`${contour}:crm.callback.create:`), `crm.callback.create's example key is not in this gateway's contour: ${desc}`);
	assert.match(byName["sales_order.get_status"].description, /needs no operation_key/);
});

await step("tools/call crm.callback.create succeeds", async () => {
	const res = await client.callTool({ name: "crm.callback.create", arguments: { operation_key: key, payload: callbackPayload() } });
	assert.notEqual(res.isError, true, `the call failed: ${JSON.stringify(res)}`);
	first = res.structuredContent;
	assert.equal(stateOf(first), "succeeded", JSON.stringify(first));
	assert.equal(first.operation_key, key);
	assert.equal(first.replayed, false);
	assert.ok(first.target_object_id, "no target_object_id");
	// A model that reads only text sees the same answer.
	assert.deepEqual(JSON.parse(res.content[0].text), first);
});

await step("the same call again is a replay with the same result", async () => {
	const res = await client.callTool({ name: "crm.callback.create", arguments: { operation_key: key, payload: callbackPayload() } });
	assert.notEqual(res.isError, true, `the replay failed: ${JSON.stringify(res)}`);
	const again = res.structuredContent;
	assert.equal(stateOf(again), "succeeded");
	assert.equal(again.target_object_id, first.target_object_id, "a replay answered another object");
	assert.equal(again.fingerprint, first.fingerprint);
	assert.equal(again.replayed, true, "the replay is not marked replayed");
	assert.equal(res._meta?.replayed, true, "the replay's _meta does not say replayed");
});

await step("a changed payload under the same key is IDEMPOTENCY_KEY_PAYLOAD_MISMATCH", async () => {
	const res = await client.callTool({ name: "crm.callback.create", arguments: { operation_key: key, payload: callbackPayload("another comment") } });
	assert.equal(res.isError, true, `a changed payload was not refused: ${JSON.stringify(res)}`);
	const codes = (res.structuredContent?.errors ?? []).map((e) => e.code);
	assert.deepEqual(codes, ["IDEMPOTENCY_KEY_PAYLOAD_MISMATCH"]);
	assert.match(res.content[0].text, /IDEMPOTENCY_KEY_PAYLOAD_MISMATCH/, "the text a model reads does not carry the code");
	assert.equal(res._meta?.http_status, 422);
	// The structured content is the API's problem answer, as a typed
	// RFC 9457 decoder reads it.
	const p = decodeProblem(res._meta.http_status, "application/problem+json", res.content[0].text, JSON.stringify(res));
	assert.deepEqual(p, res.structuredContent);
	assert.equal(p.state, "rejected");
});

await step("mode validate answers valid with a plan, as the output schema has it", async () => {
	const res = await client.callTool({ name: "crm.callback.create", arguments: { operation_key: callbackKey("sdk-validate"), mode: "validate", payload: callbackPayload() } });
	assert.notEqual(res.isError, true, JSON.stringify(res));
	assert.equal(res.structuredContent.state, "valid");
	assert.equal(res.structuredContent.status, "valid");
	assert.ok(res.structuredContent.plan_hash);
});

await step("get_operation reads the first result", async () => {
	const res = await client.callTool({ name: "get_operation", arguments: { operation_key: key } });
	assert.notEqual(res.isError, true, JSON.stringify(res));
	assert.equal(stateOf(res.structuredContent), "succeeded");
	assert.equal(res.structuredContent.target_object_id, first.target_object_id);
});
await client.close();

// refused connects with authorization, expects the connection to fail
// with 401, and returns the error the SDK raised and the challenge.
async function refused(authorization, wantError) {
	const seen = [];
	let err;
	try {
		await connect(authorization, seen);
	} catch (e) {
		err = e;
	}
	assert.ok(err, "the connection was not refused");
	const resp = seen.find((r) => r.status === 401);
	assert.ok(resp, `no 401 among the answers: ${seen.map((r) => r.status).join(", ")}; the SDK said: ${err}`);
	const desc = assertBearerChallenge(resp.headers.get("www-authenticate"), wantError, "/mcp");
	decodeProblem(resp.status, resp.headers.get("content-type"), resp.body, "the 401 of /mcp");
	// What the SDK gives the user: a StreamableHTTPError with the status,
	// whose message carries the gateway's answer. The reason must be in
	// it, not only "unauthorized" or an OAuth flow.
	assert.ok(err instanceof StreamableHTTPError, `the SDK raised ${err?.constructor?.name}: ${err}`);
	assert.equal(err.code, 401);
	assert.match(err.message, /UNAUTHENTICATED/, `the SDK's error does not carry the code: ${err.message}`);
	assert.ok(err.message.includes(desc), `the SDK's error does not carry the reason ${JSON.stringify(desc)}: ${err.message}`);
	return err;
}

await step("a bad token is refused with the reason, error=invalid_token", async () => {
	const err = await refused("Bearer og_not-a-token-of-this-gateway", "invalid_token");
	assert.match(err.message, /unknown or revoked/);
});

await step("no token is refused with the reason, error=invalid_request", async () => {
	await refused(undefined, "invalid_request");
});

await step("a token of another scheme is refused with the reason, error=invalid_request", async () => {
	await refused(`Basic ${Buffer.from("agent:secret").toString("base64")}`, "invalid_request");
});
