// Shared by the conformance scripts: where the gateway is, the agent's
// token, and the checks more than one script makes. conformance_test.go
// starts the real binary and runs each script with these variables.
import assert from "node:assert/strict";

export const base = need("ONCEGATE_URL"); // http://127.0.0.1:PORT
export const token = need("ONCEGATE_TOKEN"); // an agent token with every scope
export const contour = process.env.ONCEGATE_CONTOUR || "test";

function need(name) {
	const v = process.env[name];
	if (!v) {
		console.error(`${name} is not set: conformance_test.go runs these scripts against the binary it starts`);
		process.exit(2);
	}
	return v;
}

// A run-unique suffix, so a script can be run twice against one gateway
// without its keys meeting the first run's. Letters only: a long digit
// run in a key may read as a card number.
export const run = Array.from({ length: 8 }, () => "abcdefghijklmnopqrstuvwxyz"[Math.floor(Math.random() * 26)]).join("");

// callbackKey is an operation key of crm.callback.create in this contour.
export function callbackKey(id) {
	return `${contour}:crm.callback:create:${id}-${run}:v1`;
}

// callbackPayload is a crm.callback.create payload; comment varies it.
export function callbackPayload(comment = "call back about the invoice") {
	return { customer_id: "customer-1042", due_at: "2030-01-15T10:00:00Z", comment };
}

// stateOf is an answer's operation state: `state` where the gateway sends
// it, else v1's `status` of a 200/202 answer.
export function stateOf(answer) {
	return answer.state ?? answer.status;
}

// parseChallenges parses a WWW-Authenticate value (RFC 9110 section 11.6.1)
// into [{scheme, params}], params by lower-cased name, quoted strings
// unescaped. It throws on what the grammar does not allow.
export function parseChallenges(value) {
	const out = [];
	let i = 0;
	const ws = () => { while (value[i] === " " || value[i] === "\t") i++; };
	const tokenRe = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+/;
	const tok = () => {
		const m = tokenRe.exec(value.slice(i));
		if (!m) throw new Error(`WWW-Authenticate ${JSON.stringify(value)}: a token expected at ${i}`);
		i += m[0].length;
		return m[0];
	};
	while (i < value.length) {
		ws();
		if (value[i] === ",") { i++; continue; }
		const scheme = tok();
		const params = {};
		out.push({ scheme, params });
		for (;;) {
			ws();
			const save = i;
			const m = tokenRe.exec(value.slice(i));
			if (!m) break;
			i += m[0].length;
			ws();
			if (value[i] !== "=") { i = save; break; } // the next challenge's scheme
			i++;
			ws();
			let v = "";
			if (value[i] === '"') {
				i++;
				for (; i < value.length && value[i] !== '"'; i++) {
					if (value[i] === "\\") i++;
					v += value[i];
				}
				if (value[i] !== '"') throw new Error(`WWW-Authenticate ${JSON.stringify(value)}: unterminated quoted string`);
				i++;
			} else {
				v = tok();
			}
			params[m[0].toLowerCase()] = v;
			ws();
			if (value[i] === ",") i++;
			else break;
		}
		ws();
	}
	return out;
}

// assertBearerChallenge checks a 401's WWW-Authenticate as RFC 6750
// section 3 has it: a Bearer challenge, realm "oncegate", the error code
// wantError and a non-empty error_description. It returns the
// description, the reason a client can show.
export function assertBearerChallenge(value, wantError, where) {
	assert.ok(value, `${where}: a 401 without WWW-Authenticate (RFC 9110 section 15.5.2); clients then guess OAuth`);
	const challenges = parseChallenges(value);
	const bearer = challenges.find((c) => c.scheme.toLowerCase() === "bearer");
	assert.ok(bearer, `${where}: WWW-Authenticate ${JSON.stringify(value)} has no Bearer challenge`);
	assert.equal(bearer.params.realm, "oncegate", `${where}: realm of ${JSON.stringify(value)}`);
	assert.equal(bearer.params.error, wantError, `${where}: error of ${JSON.stringify(value)}`);
	const desc = bearer.params.error_description;
	assert.ok(desc && desc.trim(), `${where}: WWW-Authenticate ${JSON.stringify(value)} has no error_description`);
	// RFC 6750 section 3: error_description is %x20-21 / %x23-5B / %x5D-7E.
	assert.match(desc, /^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/, `${where}: error_description outside RFC 6750's characters`);
	return desc;
}

// step runs one named check and says so, so a failure names where it was.
export async function step(name, fn) {
	try {
		await fn();
		console.log(`ok   ${name}`);
	} catch (err) {
		console.log(`FAIL ${name}`);
		throw err;
	}
}

// decodeProblem decodes an error answer as a typed RFC 9457 client does
// (a Go struct with `Status int`, a zod schema): application/problem+json,
// a JSON object whose members have RFC 9457 section 3.1's types — type and
// instance URI references, title and detail strings, status the HTTP
// status as an integer (section 3.1.3) — and the gateway's own members
// beside them: the operation's state and errors. It returns the problem.
export function decodeProblem(httpStatus, contentType, text, where) {
	assert.ok(httpStatus >= 400, `${where}: not an error answer (${httpStatus})`);
	assert.match(contentType ?? "", /^application\/problem\+json(\s*;.*)?$/i, `${where}: an error answer is not application/problem+json`);
	let p;
	try {
		p = JSON.parse(text);
	} catch (err) {
		assert.fail(`${where}: the problem is not JSON: ${err}`);
	}
	assert.ok(p !== null && typeof p === "object" && !Array.isArray(p), `${where}: a problem is a JSON object`);
	const uriRef = (name) => {
		if (!(name in p)) return;
		assert.equal(typeof p[name], "string", `${where}: RFC 9457 ${name} is a string (a URI reference)`);
		assert.doesNotThrow(() => new URL(p[name], "http://base.invalid/"), `${where}: ${name} ${JSON.stringify(p[name])} is not a URI reference`);
	};
	uriRef("type");
	uriRef("instance");
	for (const name of ["title", "detail"]) {
		if (name in p) assert.equal(typeof p[name], "string", `${where}: RFC 9457 ${name} is a string`);
	}
	if ("status" in p) {
		assert.ok(Number.isInteger(p.status), `${where}: RFC 9457 status is the HTTP status as a number, not ${JSON.stringify(p.status)}`);
		assert.equal(p.status, httpStatus, `${where}: RFC 9457 status differs from the HTTP status`);
	}
	// The gateway's members (docs/api.md, section Answers).
	assert.equal(typeof p.state, "string", `${where}: a problem carries the operation's state`);
	assert.ok(Array.isArray(p.errors) && p.errors.length > 0, `${where}: a problem carries its errors`);
	return p;
}
