// The generated client: openapi-typescript turns the gateway's served
// OpenAPI document into types, tsc checks openapi-client.ts against them,
// and the compiled client runs against the gateway.
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import openapiTS, { astToString } from "openapi-typescript";
import { base } from "./lib.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const resp = await fetch(new URL("/v1/openapi.json", base));
if (resp.status !== 200) throw new Error(`GET /v1/openapi.json: ${resp.status}`);
const doc = await resp.json();
mkdirSync(`${here}/generated`, { recursive: true });
writeFileSync(`${here}/generated/oncegate.d.ts`, astToString(await openapiTS(doc)));
console.log("ok   openapi-typescript generated the types of the served document");

try {
	execFileSync(process.execPath, [`${here}/node_modules/typescript/bin/tsc`, "-p", `${here}/tsconfig.json`], { stdio: "pipe" });
} catch (err) {
	console.log("FAIL tsc: openapi-client.ts does not type-check against the generated types");
	console.log(String(err.stdout) + String(err.stderr));
	process.exit(1);
}
console.log("ok   tsc --strict accepts the client against the generated types");
await import(`${here}/build/openapi-client.js`);
