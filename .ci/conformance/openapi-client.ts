// A client generated from the served OpenAPI document: openapi-typescript
// makes generated/oncegate.d.ts from GET /v1/openapi.json, tsc checks this
// file against it (strict), and openapi-fetch sends what it typed. Driven
// by openapi-client.mjs.
//
// mode is sent explicitly: the document's `default: execute` makes it
// required in openapi-typescript's types (issue 22, item 10); and a
// problem's `status` is not read (item 3 changes it to the HTTP status).
import assert from "node:assert/strict";
import createClient from "openapi-fetch";
import type { paths, components } from "./generated/oncegate.js";

type Answer = components["schemas"]["Answer"];

const base = process.env.ONCEGATE_URL!;
const token = process.env.ONCEGATE_TOKEN!;
const contour = process.env.ONCEGATE_CONTOUR ?? "test";
const run = Array.from({ length: 8 }, () => "abcdefghijklmnopqrstuvwxyz"[Math.floor(Math.random() * 26)]).join("");

const client = createClient<paths>({ baseUrl: base, headers: { Authorization: `Bearer ${token}` } });

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
	mode: "execute",
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
	assert.equal(data.status, "succeeded");
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
