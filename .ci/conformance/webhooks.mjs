// The reference Standard Webhooks library (standardwebhooks) verifies
// deliveries the real binary sent: each is accepted with every secret the
// endpoint had during a rotation, its body parsed to the JSON sent, and a
// delivery changed in any signed part — body, webhook-id, timestamp — or
// checked with another secret is rejected. e2e_conformance_test.go records
// the deliveries at its receiver and writes them to WEBHOOKS_FILE:
// {"secrets": ["whsec_…", …], "deliveries": [{"headers": {…}, "body": base64}]}.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Webhook, WebhookVerificationError } from "standardwebhooks";

const file = process.env.WEBHOOKS_FILE;
if (!file) {
	console.error("WEBHOOKS_FILE is not set: e2e_conformance_test.go writes the deliveries it received there");
	process.exit(2);
}
const { secrets, deliveries } = JSON.parse(readFileSync(file, "utf8"));
assert.ok(secrets.length >= 2, "a rotation: the endpoint has two secrets");
assert.ok(deliveries.length > 0, "no deliveries to verify");

// A secret of the same form the endpoint never had.
const stranger = new Webhook("whsec_" + Buffer.from("a secret this endpoint never had").toString("base64"));

const rejected = (fn, what) => {
	assert.throws(fn, WebhookVerificationError, `${what} was accepted`);
};

for (const [i, d] of deliveries.entries()) {
	const body = Buffer.from(d.body, "base64"); // the bytes as received
	const where = `delivery ${i + 1} (${d.headers["webhook-id"]})`;
	for (const [j, secret] of secrets.entries()) {
		const wh = new Webhook(secret);
		const parsed = wh.verify(body, d.headers);
		assert.deepEqual(parsed, JSON.parse(body.toString("utf8")), `${where}: verified with secret ${j + 1}, parsed to another body`);
		const tampered = Buffer.from(body);
		tampered[tampered.length - 2] ^= 1; // one bit inside the JSON
		rejected(() => wh.verify(tampered, d.headers), `${where}: a body with one bit changed, secret ${j + 1}`);
		rejected(() => wh.verify(body, { ...d.headers, "webhook-id": d.headers["webhook-id"] + "x" }), `${where}: another webhook-id, secret ${j + 1}`);
		rejected(() => wh.verify(body, { ...d.headers, "webhook-timestamp": String(Number(d.headers["webhook-timestamp"]) - 1) }), `${where}: another timestamp, secret ${j + 1}`);
	}
	rejected(() => stranger.verify(body, d.headers), `${where}: a secret the endpoint never had`);
	console.log(`ok   ${where}: accepted with each of ${secrets.length} secrets, rejected when changed`);
}
