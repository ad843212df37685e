// SPDX-License-Identifier: GPL-2.0
// The OTLP receiver of the export tests: @elastic/mockotlpserver (its OTLP/HTTP service),
// behind a front that can fail the first requests as a receiver under load does (503).
// Each export request that reached the receiver is checked against the OTLP protobuf
// definitions the package ships (every field known, of its type; OTLP/JSON's hex ids of
// their length) and printed on stdout as one JSON line:
//   {"signal": "traces"|"logs"|"metrics", "errors": [...], "data": <the request as received>}
// and each request the front answered 503 as {"signal": "refused", "path": ...}.
// Usage: node otlp_receiver.js MODULE_DIR PORT [FAIL_FIRST_N]
'use strict';

const http = require('http');
const path = require('path');

const [moduleDir, portArg, failArg] = process.argv.slice(2);
const {MockOtlpServer} = require(moduleDir);
const {getProtoRoot} = require(path.join(moduleDir, 'lib', 'proto.js'));

const root = getProtoRoot();
const requestTypes = {
    traces: root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest'),
    logs: root.lookupType('opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest'),
    metrics: root.lookupType(
        'opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest'),
};
const idBytes = {traceId: 16, spanId: 8, parentSpanId: 8};
let failFirst = Number(failArg || 0);

// Every key of @obj a field of @type, each value of the field's type.
function check(obj, type, where, errors) {
    if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) {
        errors.push(`${where}: not an object`);
        return;
    }
    for (const oneof of type.oneofsArray) {
        const set = oneof.fieldsArray.filter((f) => f.name in obj);
        if (set.length > 1)
            errors.push(`${where}: more than one of ${oneof.name}`);
    }
    for (const [key, value] of Object.entries(obj)) {
        const field = type.fields[key];
        if (!field) {
            errors.push(`${where}.${key}: not a field of ${type.fullName}`);
            continue;
        }
        field.resolve();
        const values = field.repeated ? value : [value];
        if (field.repeated && !Array.isArray(value)) {
            errors.push(`${where}.${key}: not a list`);
            continue;
        }
        values.forEach((v, i) => checkValue(v, field, `${where}.${key}` +
            (field.repeated ? `[${i}]` : ''), errors));
    }
}

function checkValue(v, field, where, errors) {
    const t = field.resolvedType;
    if (t && t.fields) {
        check(v, t, where, errors);
    } else if (t && t.values) {
        if (!Object.values(t.values).includes(v) && !(v in t.values))
            errors.push(`${where}: ${JSON.stringify(v)} not in ${t.fullName}`);
    } else if (field.type === 'bytes') {
        const n = idBytes[field.name];
        if (typeof v !== 'string' || !/^[0-9a-f]*$/.test(v) || (n && v.length !== 2 * n) ||
            (n && /^0+$/.test(v)))
            errors.push(`${where}: ${JSON.stringify(v)} is not a valid id of ${n} bytes`);
    } else if (/int64|fixed64/.test(field.type)) {
        if (!(typeof v === 'string' && /^-?[0-9]+$/.test(v)) && !Number.isInteger(v))
            errors.push(`${where}: ${JSON.stringify(v)} is not a 64-bit integer`);
    } else if (/int32|fixed32/.test(field.type)) {
        if (!Number.isInteger(v))
            errors.push(`${where}: ${JSON.stringify(v)} is not an integer`);
    } else if (field.type === 'string') {
        if (typeof v !== 'string')
            errors.push(`${where}: not a string`);
    } else if (field.type === 'bool') {
        if (typeof v !== 'boolean')
            errors.push(`${where}: not a boolean`);
    } else if (field.type === 'double' || field.type === 'float') {
        if (typeof v !== 'number')
            errors.push(`${where}: not a number`);
    }
}

function report(signal, data) {
    const errors = [];
    check(data, requestTypes[signal], signal, errors);
    process.stdout.write(JSON.stringify({signal, errors, data}) + '\n');
}

async function main() {
    const mock = new MockOtlpServer({
        logLevel: 'warn',
        services: ['http'],
        httpHostname: '127.0.0.1',
        httpPort: 0,
        onTrace: (d) => report('traces', d),
        onLogs: (d) => report('logs', d),
        onMetrics: (d) => report('metrics', d),
    });
    await mock.start();
    const target = new URL(mock.httpUrl);
    const front = http.createServer((req, res) => {
        const chunks = [];
        req.on('data', (c) => chunks.push(c));
        req.on('end', () => {
            if (failFirst > 0) {
                failFirst--;
                process.stdout.write(JSON.stringify({signal: 'refused', path: req.url}) + '\n');
                res.writeHead(503, {'Retry-After': '1'});
                res.end('busy');
                return;
            }
            const fwd = http.request({
                host: target.hostname, port: target.port, path: req.url,
                method: req.method, headers: req.headers,
            }, (r) => {
                res.writeHead(r.statusCode, r.headers);
                r.pipe(res);
            });
            fwd.on('error', () => { res.writeHead(502); res.end(); });
            fwd.end(Buffer.concat(chunks));
        });
    });
    front.listen(Number(portArg), '127.0.0.1', () => {
        process.stdout.write(`listening http://127.0.0.1:${front.address().port}\n`);
    });
}

main().catch((e) => { console.error(e); process.exit(1); });
