// A small OpenAI-compatible chat server over a local GGUF model (node-llama-cpp's prebuilt CPU
// runtime), for running segbench's language stages on a real model without a hosted API or a
// compiler. It answers POST /v1/chat/completions (one request at a time: a one-slot server, as a
// llama.cpp server with one slot is), GET /v1/models and GET /health.
//
// It honours what segbench sends: `response_format` of type json_schema is enforced through the
// runtime's JSON-schema grammar (pydantic's anyOf becomes the grammar's oneOf; keywords the grammar
// does not know are dropped), and `max_tokens` caps the answer (finish_reason "length" when it does).
//
// With --log FILE it appends one JSON line per request (max_tokens asked, tokens produced, the finish
// reason, whether lists were bounded), so a test can check what a client sent and got.
//
// usage: node server.mjs --model FILE.gguf [--port 8093] [--threads 1] [--context 2048] [--log FILE]
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import {getLlama, LlamaChatSession} from "node-llama-cpp";

const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, arg, i, all) =>
    arg.startsWith("--") ? [...pairs, [arg.slice(2), all[i + 1]]] : pairs, []));
const modelPath = args.model;
if (!modelPath) {
    console.error("usage: node server.mjs --model FILE.gguf [--port N] [--threads N] [--context N]");
    process.exit(2);
}
const port = Number(args.port ?? 8093);
const threads = Number(args.threads ?? 1);
const contextSize = Number(args.context ?? 2048);
const modelId = path.basename(modelPath, ".gguf");
const requestLog = args.log;
const DEFAULT_MAX_TOKENS = 512; // a cap even for a client that sends none: a looping model ends

const llama = await getLlama({gpu: false, build: "never", progressLogs: false});
const model = await llama.loadModel({modelPath});
const context = await model.createContext({contextSize, threads, sequences: 1});
const sequence = context.getSequence();
const grammars = new Map(); // schema text -> grammar: building one costs more than a short answer

const KEPT = new Set(["type", "properties", "required", "items", "enum", "const", "oneOf", "$defs", "$ref",
    "additionalProperties", "minItems", "maxItems", "minLength", "maxLength", "format"]);

// The JSON schema as node-llama-cpp's grammar reads it.
function toGrammarSchema(schema) {
    if (Array.isArray(schema)) return schema.map(toGrammarSchema);
    if (schema === null || typeof schema !== "object") return schema;
    const out = {};
    for (const [key, value] of Object.entries(schema)) {
        if (key === "anyOf") out.oneOf = toGrammarSchema(value);
        else if (key === "properties" || key === "$defs") {
            out[key] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toGrammarSchema(v)]));
        } else if (KEPT.has(key)) out[key] = toGrammarSchema(value);
    }
    if (out.additionalProperties === false) delete out.additionalProperties;
    return out;
}

async function grammarFor(responseFormat) {
    if (responseFormat?.type !== "json_schema") return undefined;
    const schema = toGrammarSchema(responseFormat.json_schema?.schema ?? {});
    const key = JSON.stringify(schema);
    if (!grammars.has(key)) grammars.set(key, await llama.createGrammarForJsonSchema(schema));
    return grammars.get(key);
}

// OpenAI messages as node-llama-cpp's chat history: everything before the last user message.
function toHistory(messages) {
    const history = [];
    for (const message of messages.slice(0, -1)) {
        const text = typeof message.content === "string" ? message.content : "";
        if (message.role === "system") history.push({type: "system", text});
        else if (message.role === "assistant") history.push({type: "model", response: [text]});
        else history.push({type: "user", text});
    }
    return history;
}

async function complete(body) {
    const messages = body.messages ?? [];
    const last = messages.at(-1);
    if (!last || last.role !== "user") throw Object.assign(new Error("the last message must be the user's"), {status: 400});
    const maxTokens = Number(body.max_tokens ?? body.max_completion_tokens ?? DEFAULT_MAX_TOKENS);
    const grammar = await grammarFor(body.response_format);
    await sequence.clearHistory();
    const session = new LlamaChatSession({contextSequence: sequence, autoDisposeSequence: false});
    try {
        session.setChatHistory(toHistory(messages));
        const promptTokens = model.tokenize(messages.map((m) => String(m.content ?? "")).join("\n")).length;
        const result = await session.promptWithMeta(String(last.content ?? ""), {
            grammar, maxTokens, temperature: Number(body.temperature ?? 0), seed: Number(body.seed ?? 0),
        });
        const text = result.responseText;
        const completionTokens = model.tokenize(text).length;
        if (requestLog) {
            const schema = JSON.stringify(body.response_format?.json_schema?.schema ?? {});
            fs.appendFileSync(requestLog, JSON.stringify({
                schema: body.response_format?.json_schema?.name ?? null, max_tokens: body.max_tokens ?? null,
                completion_tokens: completionTokens, finish_reason: result.stopReason,
                arrays: (schema.match(/"type":"array"/g) ?? []).length,
                bounded_arrays: (schema.match(/"maxItems":/g) ?? []).length,
            }) + "\n");
        }
        return {
            id: `chatcmpl-${Date.now()}`, object: "chat.completion", created: Math.floor(Date.now() / 1000),
            model: modelId,
            choices: [{index: 0, message: {role: "assistant", content: text},
                finish_reason: result.stopReason === "maxTokens" ? "length" : "stop"}],
            usage: {prompt_tokens: promptTokens, completion_tokens: completionTokens,
                total_tokens: promptTokens + completionTokens},
        };
    } finally {
        session.dispose({disposeSequence: false});
    }
}

let queue = Promise.resolve(); // one request at a time: the one context sequence is the one slot

function send(response, status, payload) {
    const body = JSON.stringify(payload);
    response.writeHead(status, {"content-type": "application/json", "content-length": Buffer.byteLength(body)});
    response.end(body);
}

const server = http.createServer((request, response) => {
    const url = new URL(request.url, "http://localhost");
    if (request.method === "GET" && url.pathname === "/health") return send(response, 200, {status: "ok"});
    if (request.method === "GET" && url.pathname === "/v1/models") {
        return send(response, 200, {object: "list", data: [{id: modelId, object: "model", owned_by: "local"}]});
    }
    if (request.method !== "POST" || url.pathname !== "/v1/chat/completions") {
        return send(response, 404, {error: {message: `no route ${request.method} ${url.pathname}`, type: "not_found"}});
    }
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
        queue = queue.then(async () => {
            if (!response.socket || response.socket.destroyed) return; // the client gave up while queued
            try {
                send(response, 200, await complete(JSON.parse(Buffer.concat(chunks).toString("utf8"))));
            } catch (error) {
                send(response, error.status ?? 500, {error: {message: String(error.message ?? error), type: "server_error"}});
            }
        });
    });
});
server.listen(port, "127.0.0.1", () => console.log(`serving ${modelId} on http://127.0.0.1:${port}/v1 (${threads} thread)`));
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(0));
