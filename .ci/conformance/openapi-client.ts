// A client generated from the served OpenAPI document: openapi-typescript
// makes generated/oncegate.d.ts from GET /v1/openapi.json, tsc checks this
// file against it (strict), and openapi-fetch sends what it typed. Driven
// by openapi-client.mjs.
//
// mode is left out of the requests: the gateway defaults it to execute,
// and the types generated from the document must not require it (a
// `default` in the document made openapi-typescript do so).
//
// Every error answer the client gets is decoded as a typed RFC 9457
// client does: the generated Problem type must say that status is a
// number (tsc checks it), and at run time it must be the HTTP status.
import assert from "node:assert/strict";
import createClient from "openapi-fetch";
import type { paths, components } from "./generated/oncegate.js";

type Answer = components["schemas"]["Answer"];
type Problem = components["schemas"]["Problem"];
type State = components["schemas"]["State"];

const base = process.env.ONCEGATE_URL!;
const token = process.env.ONCEGATE_TOKEN!;
const contour = process.env.ONCEGATE_CONTOUR ?? "test";
const run = Array.from({ length: 8 }, () => "abcdefghijklmnopqrstuvwxyz"[Math.floor(Math.random() * 26)]).join("");

const client = createClient<paths>({ baseUrl: base, headers: { Authorization: `Bearer ${token}` } });
const anonymous = createClient<paths>({ baseUrl: base });

// problemStatus is RFC 9457's status of a problem: a number, by the
// generated type.
const problemStatus = (p: Problem): number => p.status;
const problemState = (p: Problem): State => p.state;

let problems = 0;
for (const c of [client, anonymous]) {
	c.use({
		async onResponse({ response }) {
			if (response.status < 400) return;
			const where = `${response.status} ${response.url}`;
			assert.match(response.headers.get("Content-Type") ?? "", /^application\/problem\+json/, where);
			const p = (await response.clone().json()) as Problem;
			assert.equal(typeof p.status, "number", `${where}: RFC 9457 status is a number, not ${JSON.stringify(p.status)}`);
			assert.equal(problemStatus(p), response.status, `${where}: RFC 9457 status is the HTTP status`);
			assert.equal(typeof problemState(p), "string", `${where}: no state`);
			assert.ok(typeof p.type === "string" && typeof p.title === "string" && typeof p.detail === "string", where);
			problems++;
		},
	});
}

async function step(name: string, fn: () => Promise<void>): Promise<void> {
	try {
		await fn();
		console.log(`ok   ${name}`);
	} catch (err) {
		console.log(`FAIL ${name}`);
		throw err;
	}
}

const key = `${contour}:crm.callback:create:typed-${run}:v1`;
const request = (comment: string): components["schemas"]["CrmCallbackCreateRequest"] => ({
	schema_version: "1.0",
	intent: "crm.callback.create",
	payload: { customer_id: "customer-1042", due_at: "2030-01-15T10:00:00Z", comment },
});
let first: Answer | undefined;

await step("typed POST /v1/operations: 200 succeeded", async () => {
	const { data, error, response } = await client.POST("/v1/operations", {
		params: { header: { "Idempotency-Key": key } },
		body: request("call back about the invoice"),
	});
	assert.equal(response.status, 200, JSON.stringify(error));
	assert.ok(data);
	assert.equal(data.state, "succeeded");
	assert.equal(data.status, data.state);
	assert.equal(data.operation_key, key);
	assert.ok(data.target_object_id);
	first = data;
});

await step("typed replay: 200, Idempotent-Replayed, the same object", async () => {
	const { data, response } = await client.POST("/v1/operations", {
		params: { header: { "Idempotency-Key": key } },
		body: request("call back about the invoice"),
	});
	assert.equal(response.status, 200);
	assert.equal(response.headers.get("Idempotent-Replayed"), "true");
	assert.equal(data?.target_object_id, first?.target_object_id);
	assert.equal(data?.replayed, true);
});

await step("typed mismatch: 422 problem with IDEMPOTENCY_KEY_PAYLOAD_MISMATCH", async () => {
	const { data, error, response } = await client.POST("/v1/operations", {
		params: { header: { "Idempotency-Key": key } },
		body: request("another comment"),
	});
	assert.equal(response.status, 422);
	assert.equal(data, undefined);
	assert.ok(error);
	assert.match(response.headers.get("Content-Type") ?? "", /^application\/problem\+json/);
	assert.deepEqual(error.errors.map((e) => e.code), ["IDEMPOTENCY_KEY_PAYLOAD_MISMATCH"]);
	assert.ok(error.type && error.title && error.detail);
	assert.equal(error.status, 422);
	assert.equal(error.state, "rejected");
});

await step("typed 404: an unknown key is a problem with OPERATION_NOT_FOUND", async () => {
	const { error, response } = await client.GET("/v1/operations/{key}", { params: { path: { key: `${contour}:crm.callback:create:never-${run}:v1` } } });
	assert.equal(response.status, 404);
	assert.equal(error?.status, 404);
	assert.deepEqual(error?.errors.map((e) => e.code), ["OPERATION_NOT_FOUND"]);
});

await step("typed 401: no token is a problem with UNAUTHENTICATED", async () => {
	const { error, response } = await anonymous.GET("/v1/intents");
	assert.equal(response.status, 401);
	assert.equal(error?.status, 401);
	assert.equal(error?.state, "rejected");
});

await step("typed 400: no key is a problem with IDEMPOTENCY_KEY_MISSING", async () => {
	const { error, response } = await client.POST("/v1/operations", { body: request("no key") });
	assert.equal(response.status, 400);
	assert.equal(error?.status, 400);
	assert.deepEqual(error?.errors.map((e) => e.code), ["IDEMPOTENCY_KEY_MISSING"]);
});

await step("typed GET /v1/operations/{key}: the first answer", async () => {
	const { data, response } = await client.GET("/v1/operations/{key}", { params: { path: { key } } });
	assert.equal(response.status, 200);
	assert.equal(data?.target_object_id, first?.target_object_id);
});

await step("typed GET /v1/intents lists crm.callback.create", async () => {
	const { data, response } = await client.GET("/v1/intents");
	assert.equal(response.status, 200);
	assert.ok(JSON.stringify(data).includes("crm.callback.create"));
});

await step("every error answer above was decoded as an RFC 9457 problem", async () => {
	assert.ok(problems >= 4, `only ${problems} problems were seen`);
});
