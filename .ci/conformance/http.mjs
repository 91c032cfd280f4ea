// A generic HTTP client (Node's fetch, undici; node:http where fetch
// cannot say it) against the agent API: every 401 carries a Bearer
// challenge with the reason; HEAD wherever GET is; 405 with Allow for a
// method a route does not take; OPTIONS 204 with Allow; and an
// Idempotency-Key sent twice is refused.
import assert from "node:assert/strict";
import http from "node:http";
import { base, token, contour, run, callbackKey, callbackPayload, stateOf, assertBearerChallenge, decodeProblem, step } from "./lib.mjs";

const bearer = `Bearer ${token}`;
const json = { "Content-Type": "application/json" };
const envelope = (payload = callbackPayload()) => JSON.stringify({ schema_version: "1.0", intent: "crm.callback.create", payload });

// send sends one request; every error answer with a body is decoded as
// an RFC 9457 problem on the way.
async function send(method, path, headers = {}, body) {
	const resp = await fetch(new URL(path, base), { method, headers, body });
	const text = await resp.text();
	const said = `${method} ${path}: ${resp.status} ${JSON.stringify(Object.fromEntries(resp.headers))}\n${text}`;
	if (resp.status >= 400 && text !== "") decodeProblem(resp.status, resp.headers.get("content-type"), text, said);
	return { resp, text, said };
}

// One operation to read back, made first.
const key = callbackKey("http");
await step("POST /v1/operations succeeds", async () => {
	const { resp, text, said } = await send("POST", "/v1/operations", { ...json, Authorization: bearer, "Idempotency-Key": key }, envelope());
	assert.equal(resp.status, 200, said);
	assert.equal(stateOf(JSON.parse(text)), "succeeded", said);
});
const opPath = `/v1/operations/${encodeURIComponent(key)}`;

// Item 1 of issue 22: every 401 carries WWW-Authenticate.
const authorizations = [
	["no Authorization", undefined, "invalid_request"],
	["an empty bearer token", "Bearer ", "invalid_request"],
	["another scheme", "Basic YWdlbnQ6c2VjcmV0", "invalid_request"],
	["an unknown token", "Bearer og_not-a-token-of-this-gateway", "invalid_token"],
];
const authRoutes = [
	["POST", "/v1/operations", json, envelope()],
	["GET", "/v1/intents"],
	["HEAD", "/v1/intents"],
	["GET", opPath],
	["POST", "/mcp", { ...json, Accept: "application/json, text/event-stream" },
		JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" })],
];
for (const [what, authorization, wantError] of authorizations) {
	for (const [method, path, headers = {}, body] of authRoutes) {
		await step(`401 ${method} ${path} with ${what}: Bearer challenge error=${wantError} with the reason`, async () => {
			const h = { ...headers };
			if (authorization !== undefined) h.Authorization = authorization;
			const { resp, text, said } = await send(method, path, h, body);
			assert.equal(resp.status, 401, said);
			const desc = assertBearerChallenge(resp.headers.get("www-authenticate"), wantError, said);
			if (method === "HEAD") return;
			assert.match(resp.headers.get("content-type") ?? "", /^application\/problem\+json/, said);
			const problem = JSON.parse(text);
			assert.deepEqual(problem.errors.map((e) => e.code), ["UNAUTHENTICATED"], said);
			assert.equal(problem.errors[0].message, desc, `the challenge's reason is not the answer's: ${said}`);
		});
	}
}

// Item 8: HEAD wherever GET is, answered as GET without the body.
for (const [path, auth] of [["/healthz"], ["/readyz"], ["/metrics"], ["/v1/openapi.json"], ["/v1/intents", true], [opPath, true]]) {
	await step(`HEAD ${path} answers as GET does, without a body`, async () => {
		const headers = auth ? { Authorization: bearer } : {};
		const get = await send("GET", path, headers);
		assert.equal(get.resp.status, 200, get.said);
		const head = await send("HEAD", path, headers);
		assert.equal(head.resp.status, 200, head.said);
		assert.equal(head.text, "", head.said);
		assert.equal(head.resp.headers.get("content-type"), get.resp.headers.get("content-type"), head.said);
	});
}

const allowOf = (resp) => (resp.headers.get("allow") ?? "").split(",").map((m) => m.trim()).filter(Boolean).sort();

// A method a route does not take: 405 with Allow, before authentication.
for (const [method, path, want] of [
	["GET", "/v1/operations", ["OPTIONS", "POST"]],
	["PUT", "/v1/operations", ["OPTIONS", "POST"]],
	["POST", "/v1/intents", ["GET", "HEAD", "OPTIONS"]],
	["DELETE", opPath, ["GET", "HEAD", "OPTIONS"]],
	["PATCH", opPath, ["GET", "HEAD", "OPTIONS"]],
	["POST", "/v1/openapi.json", ["GET", "HEAD", "OPTIONS"]],
]) {
	for (const auth of [false, true]) {
		await step(`${method} ${path}${auth ? " with a token" : ""}: 405 with Allow ${want.join(", ")}`, async () => {
			const { resp, said } = await send(method, path, auth ? { Authorization: bearer } : {});
			assert.equal(resp.status, 405, said);
			assert.deepEqual(allowOf(resp), want, said);
			assert.match(resp.headers.get("content-type") ?? "", /^application\/problem\+json/, said);
		});
	}
}

// OPTIONS: 204 with Allow, no token needed.
for (const [path, want] of [
	["/v1/operations", ["OPTIONS", "POST"]],
	["/v1/intents", ["GET", "HEAD", "OPTIONS"]],
	[opPath, ["GET", "HEAD", "OPTIONS"]],
	["/v1/openapi.json", ["GET", "HEAD", "OPTIONS"]],
]) {
	await step(`OPTIONS ${path}: 204 with Allow ${want.join(", ")}`, async () => {
		const { resp, text, said } = await send("OPTIONS", path);
		assert.equal(resp.status, 204, said);
		assert.deepEqual(allowOf(resp), want, said);
		assert.equal(text, "", said);
	});
}

// rawPost sends POST /v1/operations with node:http, whose array header
// values go out as separate header lines (fetch would join them).
function rawPost(idempotencyKeys, body) {
	return new Promise((resolve, reject) => {
		const req = http.request(new URL("/v1/operations", base), { method: "POST" }, (resp) => {
			let text = "";
			resp.setEncoding("utf8");
			resp.on("data", (c) => (text += c));
			resp.on("end", () => {
				const said = `${resp.statusCode} ${JSON.stringify(resp.headers)}\n${text}`;
				try {
					if (resp.statusCode >= 400) decodeProblem(resp.statusCode, resp.headers["content-type"], text, said);
					resolve({ status: resp.statusCode, text, said });
				} catch (err) {
					reject(err);
				}
			});
		});
		req.on("error", reject);
		req.setHeader("Authorization", bearer);
		req.setHeader("Content-Type", "application/json");
		req.setHeader("Idempotency-Key", idempotencyKeys);
		req.end(body);
	});
}

// Item 9: an Idempotency-Key sent twice is refused, whichever way.
const k1 = `${contour}:crm.callback:create:twice-a-${run}:v1`;
const k2 = `${contour}:crm.callback:create:twice-b-${run}:v1`;
for (const [what, keys] of [
	["on two lines, different values", [k1, k2]],
	["on two lines, the same value", [k1, k1]],
	["on one line, joined by a comma", [`${k1}, ${k2}`]],
]) {
	await step(`Idempotency-Key ${what}: 400 IDEMPOTENCY_KEY_INVALID, nothing bound`, async () => {
		const r = await rawPost(keys, envelope());
		assert.equal(r.status, 400, r.said);
		assert.deepEqual(JSON.parse(r.text).errors.map((e) => e.code), ["IDEMPOTENCY_KEY_INVALID"], r.said);
		for (const k of [k1, k2]) {
			const { resp, said } = await send("GET", `/v1/operations/${encodeURIComponent(k)}`, { Authorization: bearer });
			assert.equal(resp.status, 404, `a refused request bound ${k}: ${said}`);
		}
	});
}
await step("Idempotency-Key once through node:http: accepted (the refusals above are about the repetition)", async () => {
	const r = await rawPost([k1], envelope());
	assert.equal(r.status, 200, r.said);
});

// Item 6 of issue 22: the MCP transport refuses a web page of another
// origin (DNS rebinding), 403, whatever the token; no Origin (an MCP
// client) or the gateway's own origin passes.
const mcpCall = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" });
const mcpHeaders = { ...json, Accept: "application/json, text/event-stream", Authorization: bearer };
for (const [what, headers, want] of [
	["a foreign Origin", { Origin: "http://rebound.example" }, 403],
	["a foreign Origin on the gateway's port", { Origin: `http://rebound.example:${new URL(base).port}` }, 403],
	["Origin null", { Origin: "null" }, 403],
	["Sec-Fetch-Site cross-site without Origin", { "Sec-Fetch-Site": "cross-site" }, 403],
	["the gateway's own Origin", { Origin: new URL(base).origin }, 200],
	["no Origin", {}, 200],
]) {
	await step(`POST /mcp with ${what}: ${want}`, async () => {
		const { resp, text, said } = await send("POST", "/mcp", { ...mcpHeaders, ...headers }, mcpCall);
		assert.equal(resp.status, want, said);
		if (want === 403) assert.deepEqual(JSON.parse(text).errors.map((e) => e.code), ["PERMISSION_DENIED"], said);
	});
}

// Item 6: a client that looks for OAuth after a 401 is told, in a
// problem, that the gateway takes static bearer tokens.
for (const path of ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"]) {
	await step(`GET ${path}: 404 problem saying the gateway takes static bearer tokens`, async () => {
		const { resp, text, said } = await send("GET", path);
		assert.equal(resp.status, 404, said);
		assert.match(JSON.parse(text).detail, /does not use OAuth.*static agent token.*Authorization: Bearer/, said);
	});
}
